//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// habrFile reads one of the Habr walkthrough's manifests (testdata/habr) with the local tiny
// image in place of the article's (no registry here; /bin/sleep and /bin/bash of that image
// run the article's commands) and this env's scheduler name in place of "volcano".
func (e *schedulerEnv) habrFile(name string, into any) {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "test", "e2e", "testdata", "habr", name))
	if err != nil {
		e.t.Fatal(err)
	}
	text := string(data)
	for _, image := range []string{"ubuntu:18.04", "ubuntu:24.04"} {
		text = strings.ReplaceAll(text, "image: "+image, "image: "+tinyImage)
	}
	text = strings.ReplaceAll(text, "schedulerName: volcano", "schedulerName: "+e.name)
	if err := yaml.UnmarshalStrict([]byte(text), into); err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
}

// deployment creates the walkthrough's Deployment from a manifest, with replicas.
func (e *schedulerEnv) deployment(file string, replicas int32) *appsv1.Deployment {
	e.t.Helper()
	d := &appsv1.Deployment{}
	e.habrFile(file, d)
	d.Namespace, d.Spec.Replicas = e.ns, &replicas
	created, err := e.cs.AppsV1().Deployments(e.ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create deployment %s: %v", d.Name, err)
	}
	return created
}

// scale sets the Deployment's replicas, as kubectl scale does.
func (e *schedulerEnv) scale(name string, replicas int32) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.cs.AppsV1().Deployments(e.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("scale deployment %s to %d: %v", name, replicas, err)
	}
}

// deleteAndWait deletes an object of the env with its pods (foreground, as kubectl delete
// waits) and waits until no pod whose name starts with prefix is left and get no longer finds
// the object, so that a manifest of the same name can be applied again.
func (e *schedulerEnv) deleteAndWait(prefix string, del func(context.Context, metav1.DeleteOptions) error, get func(context.Context) error) {
	e.t.Helper()
	if err := del(context.Background(), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		e.t.Fatalf("delete %s: %v", prefix, err)
	}
	eventually(e.t, 60*time.Second, prefix+" and its pods gone", func(ctx context.Context) (bool, string, error) {
		pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, prefix) {
				left = append(left, p.Name)
			}
		}
		if err := get(ctx); !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("the object itself (%v)", err))
		}
		return len(left) == 0, fmt.Sprint(left), nil
	})
}

// deleteDeployment deletes the Deployment and waits until it and its pods are gone.
func (e *schedulerEnv) deleteDeployment(name string) {
	e.t.Helper()
	deployments := e.cs.AppsV1().Deployments(e.ns)
	e.deleteAndWait(name+"-", func(ctx context.Context, o metav1.DeleteOptions) error { return deployments.Delete(ctx, name, o) },
		func(ctx context.Context) error { _, err := deployments.Get(ctx, name, metav1.GetOptions{}); return err })
}

// podsPerNode counts the env's bound pods with the prefix on each node.
func (e *schedulerEnv) podsPerNode(prefix string) map[string]int {
	e.t.Helper()
	pods, err := e.cs.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	per := map[string]int{}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" {
			per[p.Spec.NodeName]++
		}
	}
	return per
}

// The Habr walkthrough (test/e2e/testdata/habr, with its README), its manifests
// changed only in image, on vc-scheduler with the article's scheduler_config_override:
//
//  1. Its two workers, 5 x RTX 4090 (24,564 MiB) and 5 x RTX 4070 SUPER (16,376 MiB) with
//     --device-split-count=2, are kwok nodes carrying the device plugin's register annotation
//     at a memory factor of 1, as in the article. (Our device plugin refuses factor 1 for 5 such
//     GPUs on a real kubelet: the memory device list would pass kubelet's 4 MiB message limit.)
//     The 10-replica Deployment of 8,188 MiB pods spreads over both; at 20 replicas all are
//     bound with no GPU overbooked, and the 21st pod waits with a reason naming the vGPU
//     slots (volcano.sh/vgpu-number).
//  2. A 5-pod gang (Volcano Job, minAvailable 5) waits behind a 6-replica whole-GPU Deployment,
//     and starts once the Deployment is scaled to 5.
//  3. A PodGroup made by another controller, as Kubeflow's training operator makes one with
//     --gang-scheduler-name=volcano (no queue, pods naming it), is scheduled as a gang.
//  4. On the real kubelet node with our device plugin (5 x RTX 4090, --device-split-count=2):
//     a pod with two vGPU containers (the article's vgpu-case03, which fails upstream) runs,
//     each container with its own GPUs and limits; then the article's volcano-vgpu-node-config
//     entry, naming that node, gives it 10 vGPUs per GPU, and the scheduler binds more pods
//     than the flag's split of 2 would hold.
func TestHabrWalkthrough(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	const split = 2
	workers := map[string][]vgpu.NodeDevice{
		e.name + "-rig01": e.modelNode("rig01", "NVIDIA GeForce RTX 4090", 5, split, 24564, 0, false),
		e.name + "-rig02": e.modelNode("rig02", "NVIDIA GeForce RTX 4070 SUPER", 5, split, 16376, 0, false),
	}
	data, err := os.ReadFile(filepath.Join(repoRoot(), "test", "e2e", "testdata", "habr", "scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	e.scheduler(string(data))

	t.Run("deployment spreads, fills 20 vGPUs and refuses the 21st for slots", func(t *testing.T) {
		const prefix = "resnet101-deployment-"
		d := e.deployment("vgpu-deployment.yaml", 10)
		e.waitBound(prefix, 10, 90*time.Second)
		if per := e.podsPerNode(prefix); len(per) != 2 {
			t.Errorf("10 pods on %v, want them spread over both workers", per)
		}
		e.deleteDeployment(d.Name)
		d = e.deployment("vgpu-deployment.yaml", 20)
		e.waitBound(prefix, 20, 120*time.Second)
		if bound, problems, err := e.checkLedger(ctx, workers); err != nil || len(problems) > 0 || bound != 20 {
			t.Errorf("ledger: %d bound, problems %v, err %v", bound, problems, err)
		}
		e.scale(d.Name, 21)
		var extra string
		eventually(t, 60*time.Second, "the 21st pod created", func(ctx context.Context) (bool, string, error) {
			_, pending, err := e.boundPods(ctx, prefix)
			if err != nil || len(pending) != 1 {
				return false, fmt.Sprint(pending, err), nil
			}
			extra = pending[0]
			return true, "", nil
		})
		// The 20 slots are all the vgpu-number the workers advertise, so the queue's deserved
		// share is used up before any node is tried (upstream says only "pod group is not
		// ready" here).
		const reason = "queue default has no room for the pod within its deserved share: " + string(vgpu.DefaultCountResource)
		waitEvent(t, e.cs, 60*time.Second, e.ns, "involvedObject.name="+extra, extra+" refused for want of a vGPU slot",
			func(ev corev1.Event) bool { return ev.Reason == "FailedScheduling" && ev.Message == reason })
		if b, _, _ := e.boundPods(ctx, extra); b != 0 {
			t.Errorf("the 21st pod %s was bound", extra)
		}
		e.deleteDeployment(d.Name)
	})

	t.Run("gang waits behind the deployment and starts when the 5th GPU frees", func(t *testing.T) {
		const prefix = "resnet101-deployment-"
		d := e.deployment("gang-deployment.yaml", 6)
		e.waitBound(prefix, 6, 90*time.Second)
		job := &batchv1alpha1.Job{}
		e.habrFile("gang-job.yaml", job)
		job.Namespace = e.ns
		job, err := e.vc.BatchV1alpha1().Jobs(e.ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create job: %v", err)
		}
		pg := fmt.Sprintf("%s-%s", job.Name, job.UID)
		e.podGroup(pg, 60*time.Second, "Inqueue, held back for want of a fifth GPU", func(pg *schedulingv1beta1.PodGroup) bool {
			c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
			return pg.Status.Phase == schedulingv1beta1.PodGroupInqueue && c != nil && c.Status == corev1.ConditionTrue &&
				c.Reason == string(schedulingv1beta1.NotEnoughResourcesReason)
		})
		// What kubectl describe pod shows on the gang's pods: all five Pending, unscheduled.
		eventually(t, 30*time.Second, "the gang's 5 pods Pending with PodScheduled=False", func(ctx context.Context) (bool, string, error) {
			pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "volcano.sh/job-name=" + job.Name})
			if err != nil {
				return false, err.Error(), nil
			}
			var states []string
			unscheduled := 0
			for _, p := range pods.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && p.Spec.NodeName == "" {
						unscheduled++
						states = append(states, p.Name+": "+c.Message)
					}
				}
			}
			return len(pods.Items) == 5 && unscheduled == 5, fmt.Sprintf("%d pods: %v", len(pods.Items), states), nil
		})
		e.scale(d.Name, 5)
		e.waitBound(job.Name+"-", 5, 90*time.Second)
		e.podGroup(pg, 60*time.Second, "Running", func(pg *schedulingv1beta1.PodGroup) bool {
			return pg.Status.Phase == schedulingv1beta1.PodGroupRunning
		})
		jobs := e.vc.BatchV1alpha1().Jobs(e.ns)
		e.deleteAndWait(job.Name+"-", func(ctx context.Context, o metav1.DeleteOptions) error { return jobs.Delete(ctx, job.Name, o) },
			func(ctx context.Context) error { _, err := jobs.Get(ctx, job.Name, metav1.GetOptions{}); return err })
		e.deleteDeployment(d.Name)
	})

	t.Run("a PodGroup made by Kubeflow's training operator is scheduled", func(t *testing.T) {
		// What training-operator v1 makes for a PyTorchJob of one master and one worker with
		// --gang-scheduler-name=volcano: a PodGroup named after the job with minMember and
		// minResources and no queue (none given), and pods that name it in the group-name
		// annotation, so Volcano's own PodGroup controller leaves them alone.
		const job = "pytorch-dist-mnist"
		vgpuLimits := corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("1"), vgpu.DefaultMemoryResource: resource.MustParse("8188")}
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: e.ns},
			Spec: schedulingv1beta1.PodGroupSpec{MinMember: 2, MinResources: &corev1.ResourceList{
				vgpu.DefaultCountResource: resource.MustParse("2"), vgpu.DefaultMemoryResource: resource.MustParse("16376")}},
		}
		if _, err := e.vc.SchedulingV1beta1().PodGroups(e.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, replica := range []string{"master", "worker"} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: job + "-" + replica + "-0", Namespace: e.ns,
					Labels: map[string]string{"training.kubeflow.org/job-name": job, "training.kubeflow.org/operator-name": "pytorchjob-controller",
						"training.kubeflow.org/replica-type": replica, "training.kubeflow.org/replica-index": "0"},
					Annotations: map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: job}},
				Spec: corev1.PodSpec{SchedulerName: e.name, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "pytorch", Image: tinyImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "infinity"},
					Resources: corev1.ResourceRequirements{Limits: vgpuLimits}}}},
			}
			if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.waitBound(job+"-", 2, 60*time.Second)
		e.podGroup(job, 60*time.Second, "Running", func(pg *schedulingv1beta1.PodGroup) bool {
			return pg.Status.Phase == schedulingv1beta1.PodGroupRunning
		})
		for _, replica := range []string{"master", "worker"} {
			p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, job+"-"+replica+"-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]; got != job {
				t.Errorf("pod %s moved to PodGroup %q, want the operator's %q", p.Name, got, job)
			}
		}
		e.deleteAndWait(job+"-", func(ctx context.Context, o metav1.DeleteOptions) error {
			return e.cs.CoreV1().Pods(e.ns).DeleteCollection(ctx, o, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=" + job})
		}, func(ctx context.Context) error {
			_, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, job+"-worker-0", metav1.GetOptions{})
			return err
		})
	})

	t.Run("real node: two vGPU containers, then a node-config entry", func(t *testing.T) {
		for name := range workers {
			if err := e.cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		hook := hookDir(t)
		nodeConfig := filepath.Join(hook, "config.json")
		args := []string{"--kubeconfig", programKubeconfig(t, devicePluginAccount), "--node-name", realNode, "--nvml", "fake",
			"--fake-gpus", "5xNVIDIA GeForce RTX 4090:24564", "--device-split-count=2", "--hook-path", hook,
			"--metrics-address", pluginMetrics, "--node-config", nodeConfig, "--scheduler-name", e.name, "-v", "2"}
		plugin := start(t, "vgpu-device-plugin", args...)
		gpus := make([]string, 5)
		for i := range gpus {
			gpus[i] = nvml.FakeUUID(realNode, i)
		}
		factor := waitVGPUs(t, e, plugin, 10, 2)
		e.claimRealNode()

		pod := &corev1.Pod{}
		e.habrFile("gpu-pod12.yaml", pod)
		pod.Namespace = e.ns
		if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		running := podPhase(t, e.cs, e.ns, pod.Name, corev1.PodRunning, 90*time.Second)
		assigned, err := vgpu.DecodePodDevices(running.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil || len(assigned) != 2 || len(assigned[0]) != 1 || len(assigned[1]) != 2 {
			t.Fatalf("assignment %q (%v): want one GPU for ubuntu-container, two for ubuntu-container1",
				running.Annotations[vgpu.AssignedDevicesAnnotation], err)
		}
		limit := func(units int64) string { return fmt.Sprintf("%dm", units*factor) }
		wantLines(t, "ubuntu-container", containerLog(t, e.cs, e.ns, pod.Name, "ubuntu-container"),
			"NVIDIA_VISIBLE_DEVICES="+assigned[0][0].UUID, "CUDA_DEVICE_MEMORY_LIMIT_0="+limit(2000), "CUDA_DEVICE_SM_LIMIT=0")
		wantLines(t, "ubuntu-container1", containerLog(t, e.cs, e.ns, pod.Name, "ubuntu-container1"),
			"NVIDIA_VISIBLE_DEVICES="+assigned[1][0].UUID+","+assigned[1][1].UUID,
			"CUDA_DEVICE_MEMORY_LIMIT_0="+limit(3000), "CUDA_DEVICE_MEMORY_LIMIT_1="+limit(3000), "CUDA_DEVICE_SM_LIMIT=50")
		if plain := containerLog(t, e.cs, e.ns, pod.Name, "ubuntu-container0"); strings.Contains(plain, "CUDA_DEVICE_MEMORY_LIMIT") ||
			strings.Contains(plain, "NVIDIA_VISIBLE_DEVICES=GPU") {
			t.Errorf("ubuntu-container0 asks for no vGPU but got HAMi-core settings:\n%s", plain)
		}
		pods := e.cs.CoreV1().Pods(e.ns)
		e.deleteAndWait(pod.Name, func(ctx context.Context, o metav1.DeleteOptions) error { return pods.Delete(ctx, pod.Name, o) },
			func(ctx context.Context) error { _, err := pods.Get(ctx, pod.Name, metav1.GetOptions{}); return err })

		// The article's node-config entry, naming this node: its devicesplitcount 10 wins over
		// the flag's 2 (and its devicememoryscaling 1.8 over the default 1) once the DaemonSet's
		// pod restarts, which is what applies a changed ConfigMap.
		text, err := os.ReadFile(filepath.Join(repoRoot(), "test", "e2e", "testdata", "habr", "node-config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(nodeConfig, []byte(strings.ReplaceAll(string(text), `"aio-node67"`, fmt.Sprintf("%q", realNode))), 0o644); err != nil {
			t.Fatal(err)
		}
		plugin.stop()
		plugin = start(t, "vgpu-device-plugin", args...)
		waitVGPUs(t, e, plugin, 50, 10)
		const many = 11 // one more than 5 GPUs split 2 would hold
		for i := range many {
			p := tinyPod(e.ns, fmt.Sprintf("split-ten-%02d", i), "")
			p.Spec.SchedulerName = e.name
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("1"),
				vgpu.DefaultMemoryResource: resource.MustParse("1000")}
			if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.waitBound("split-ten-", many, 90*time.Second)
		// Five GPUs hold eleven pods only if one of them holds more than the flag's 2.
		perGPU, most := map[string]int{}, 0
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if d, err := vgpu.DecodePodDevices(p.Annotations[vgpu.AssignedDevicesAnnotation]); err == nil && len(d) == 1 && len(d[0]) == 1 {
				perGPU[d[0][0].UUID]++
				most = max(most, perGPU[d[0][0].UUID])
			}
		}
		if len(perGPU) > len(gpus) || most <= 2 {
			t.Errorf("pods per GPU %v: want the 11 pods on the node's 5 GPUs, some GPU holding more than 2", perGPU)
		}
	})
}

// waitVGPUs waits until the real node advertises want vGPUs and its register annotation shows
// split per GPU, and returns the memory factor the plugin chose.
func waitVGPUs(t *testing.T, e *schedulerEnv, plugin *process, want int64, split int32) int64 {
	t.Helper()
	var factor int64
	var devices []vgpu.NodeDevice
	eventually(t, 90*time.Second, fmt.Sprintf("kubelet advertises %d vGPUs, %d per GPU", want, split), func(ctx context.Context) (bool, string, error) {
		node, err := e.cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if q := node.Status.Allocatable[vgpu.DefaultCountResource]; q.Value() != want {
			return false, fmt.Sprintf("vgpu-number %s; plugin log: %s", q.String(), tail(plugin.log.String(), 3)), nil
		}
		devices, err = vgpu.DecodeNodeDevices(node.Annotations[vgpu.NodeDevicesAnnotation])
		if err != nil || len(devices) != 5 {
			return false, fmt.Sprintf("register %q: %v", node.Annotations[vgpu.NodeDevicesAnnotation], err), nil
		}
		for _, d := range devices {
			if d.Count != split {
				return false, fmt.Sprintf("GPU %s split %d", d.UUID, d.Count), nil
			}
		}
		_, err = fmt.Sscan(node.Annotations[vgpu.NodeMemoryFactorAnnotation], &factor)
		return err == nil && factor > 0, "memory factor " + node.Annotations[vgpu.NodeMemoryFactorAnnotation], nil
	})
	// The node may still show what a previous plugin advertised: wait for the kubelet's own
	// count, every GPU's memory units and 100 cores each.
	var memory int64
	for _, d := range devices {
		memory += int64(d.Memory)
	}
	waitKubeletHealthy(t, map[corev1.ResourceName]int64{vgpu.DefaultCountResource: want, vgpu.DefaultMemoryResource: memory,
		vgpu.DefaultCoresResource: 100 * int64(len(devices))})
	return factor
}
