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

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// chartConf is the chart's default scheduler configuration.
func chartConf(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "config", "volcano-scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitForFirstConsumer creates a StorageClass of that binding mode with no provisioner, as
// local volumes have, removed when the test ends.
func (e *schedulerEnv) waitForFirstConsumer(name string) string {
	e.t.Helper()
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode}
	if _, err := e.cs.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.cs.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
	})
	return sc.Name
}

// localPV creates a 1 GiB local PersistentVolume of class on a host directory, reachable only
// from nodes labelled key=value, removed when the test ends.
func (e *schedulerEnv) localPV(name, class, key, value string) {
	e.t.Helper()
	dir := e.t.TempDir()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}},
			}}}},
		}}
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
}

// claim creates a 1 GiB claim of class.
func (e *schedulerEnv) claim(name, class string) {
	e.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// mountClaim gives the pod's first container the claim at /data (and prints its mounts).
func mountClaim(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		c := &p.Spec.Containers[0]
		c.Args = []string{"printenv"}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	}
}

// claimPhases are the phases of the namespace's claims by name.
func (e *schedulerEnv) claimPhases(ctx context.Context) map[string]corev1.PersistentVolumeClaimPhase {
	e.t.Helper()
	list, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]corev1.PersistentVolumeClaimPhase{}
	for _, c := range list.Items {
		out[c.Name] = c.Status.Phase
	}
	return out
}

// A vGPU pod whose claim has a WaitForFirstConsumer class, with a local PV on the real kubelet
// node, under the chart's configuration: the claim is bound to that PV once the pod's node is
// chosen (the scheduler's volume binding, then kube-controller-manager's PV controller), and
// the pod runs with its GPU slice and the volume mounted.
func TestClaimOfWaitForFirstConsumerIsBound(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	devicePlugin(t, e.cs, 1, e.name)
	waitNodeFreeOfOtherVGPUPods(t, e.ns)
	e.claimRealNode()
	class := e.waitForFirstConsumer("local")
	e.localPV("here", class, corev1.LabelHostname, realNode)
	e.claim("data", class)
	e.scheduler(chartConf(t))

	e.vgpuGangOfClass("train", "", "", 1, 1, 2000, 0, mountClaim("data"))
	pod := podPhase(t, e.cs, e.ns, "train-0", corev1.PodRunning, 120*time.Second)
	if pod.Spec.NodeName != realNode {
		t.Errorf("pod on %q, want %s", pod.Spec.NodeName, realNode)
	}
	pvc, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != e.ns+"-here" {
		t.Errorf("claim data: %v, phase %s, volume %q; want Bound to %s-here", err, pvc.Status.Phase, pvc.Spec.VolumeName, e.ns)
	}
	wantLines(t, "train-0", containerLog(t, e.cs, e.ns, "train-0", "main"), "mount /data rw", "CUDA_DEVICE_MEMORY_LIMIT_0=2000m")
	events, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=train-0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Message, "failed to bind") {
			t.Errorf("event %s %s: %s, want the first bind to succeed", ev.Type, ev.Reason, ev.Message)
		}
	}
}

// Claims the scheduler's nodes cannot serve, on a kwok GPU node: a claim whose only PV is on
// another node keeps its pod Pending, with kube-scheduler's reason in the PodGroup's
// condition; and a 2-pod gang whose second claim finds no PV leaves the PV the first was
// matched to available, both claims unbound and no pod bound.
func TestClaimThatNoNodeServesWaits(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	e.gpuNode("gpu", 1, 10, 24576, 0)
	far, near := e.waitForFirstConsumer("far"), e.waitForFirstConsumer("near")
	e.localPV("elsewhere", far, corev1.LabelHostname, "a-node-the-scheduler-does-not-see")
	e.localPV("one", near, envLabel, e.name)
	e.claim("far", far)
	e.claim("first", near)
	e.claim("second", near)
	e.scheduler(chartConf(t))
	claimOf := map[string]string{"far-0": "far", "pair-0": "first", "pair-1": "second"}
	mount := func(p *corev1.Pod) { mountClaim(claimOf[p.Name])(p) }
	const noPV = "node(s) didn't find available persistent volumes to bind"

	e.vgpuGangOfClass("far", "", "", 1, 1, 2000, 0, mount)
	e.vgpuGangOfClass("pair", "", "", 2, 2, 2000, 0, mount)
	for _, name := range []string{"far", "pair"} {
		pg := e.podGroup(name, 30*time.Second, "Unschedulable for want of a PV", func(pg *schedulingv1beta1.PodGroup) bool {
			c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
			return c != nil && strings.Contains(c.Message, noPV)
		})
		t.Logf("PodGroup %s: %s", name, condition(pg, schedulingv1beta1.PodGroupUnschedulableType).Message)
	}
	if bound, _, err := e.boundPods(ctx, ""); err != nil || bound != 0 {
		t.Errorf("%d pods bound (%v), want none", bound, err)
	}
	for claim, phase := range e.claimPhases(ctx) {
		if phase != corev1.ClaimPending {
			t.Errorf("claim %s is %s, want Pending", claim, phase)
		}
	}
	pv, err := e.cs.CoreV1().PersistentVolumes().Get(ctx, e.ns+"-one", metav1.GetOptions{})
	if err != nil || pv.Spec.ClaimRef != nil || pv.Status.Phase != corev1.VolumeAvailable {
		t.Errorf("PV one: %v, claimRef %v, phase %s; want it Available and unclaimed", err, pv.Spec.ClaimRef, pv.Status.Phase)
	}
}

// Issue 47's per-pod claim case on two kwok GPU nodes, under the chart's configuration: gang
// train of 2 pods of one role (volcano.sh/task-spec "worker", as a VolcanoJob's task makes
// them; cpu, memory and a 2000 MiB vGPU each, minResources as Volcano's job controller
// computes them), each mounting a WaitForFirstConsumer claim of its own, data-<i>, whose only
// PV (the one local PV of its class) is on the other pod's node: data-0's on node two,
// data-1's on node one. Both pods are bound, each to its PV's node, and each claim is bound
// to its PV. Before, allocate's per-role predicate error cache refused train-1 the node that
// had refused train-0, and the gang waited for ever.
func TestGangWithAClaimPerPodBindsBoth(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-one": e.gpuNode("one", 1, 10, 24576, 0), e.name + "-two": e.gpuNode("two", 1, 10, 24576, 0)}
	nodeOf := map[string]string{"train-0": e.name + "-two", "train-1": e.name + "-one"}
	for i := range 2 {
		class := e.waitForFirstConsumer(fmt.Sprintf("data-%d", i))
		e.localPV(fmt.Sprintf("data-%d", i), class, corev1.LabelHostname, nodeOf[fmt.Sprintf("train-%d", i)])
		e.claim(fmt.Sprintf("data-%d", i), class)
	}
	e.scheduler(chartConf(t))
	req := workerRequest(2000)
	e.gangWith("train", "", "", 2, 2, "", nil, nil, func(i int, pod *corev1.Pod) {
		workerResources(pod, req)
		pod.Annotations[batchv1alpha1.TaskSpecKey] = "worker"
		mountClaim(fmt.Sprintf("data-%d", i))(pod)
	})
	e.waitBound("train-", 2, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	for pod, want := range nodeOf {
		p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != want {
			t.Errorf("%s on node %q (%v), want %s, its PV's node", pod, p.Spec.NodeName, err, want)
		}
	}
	eventually(t, 30*time.Second, "each claim bound to its PV", func(ctx context.Context) (bool, string, error) {
		var got []string
		done := true
		for i := range 2 {
			name := fmt.Sprintf("data-%d", i)
			pvc, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			got = append(got, fmt.Sprintf("%s %s %s", name, pvc.Status.Phase, pvc.Spec.VolumeName))
			done = done && pvc.Status.Phase == corev1.ClaimBound && pvc.Spec.VolumeName == e.ns+"-"+name
		}
		return done, strings.Join(got, ", "), nil
	})
}

// labelNode sets a label on the environment's node name.
func (e *schedulerEnv) labelNode(name, key, value string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := e.cs.CoreV1().Nodes().Patch(context.Background(), e.name+"-"+name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// attachLimit creates the CSINode of the environment's node name, allowing count volumes of
// driver, removed when the test ends.
func (e *schedulerEnv) attachLimit(name, driver string, count int32) {
	e.t.Helper()
	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: e.name + "-" + name}, Spec: storagev1.CSINodeSpec{
		Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: &count}}}}}
	if _, err := e.cs.StorageV1().CSINodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.cs.StorageV1().CSINodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
}

// csiClaim creates a claim with the access mode, pre-bound to a CSI PV of driver carrying
// labels (a zone), for kube-controller-manager's PV controller to bind; the PV is removed when
// the test ends.
func (e *schedulerEnv) csiClaim(name, driver string, mode corev1.PersistentVolumeAccessMode, labels map[string]string) {
	e.t.Helper()
	ctx, noClass := context.Background(), ""
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: e.ns + "-" + name}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: e.ns, Name: name}}}
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}, StorageClassName: &noClass,
			VolumeName: pv.Name, Resources: corev1.VolumeResourceRequirements{Requests: size}}}
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// kube-scheduler's other volume plugins, under the chart's configuration, on two kwok GPU
// nodes in two zones whose CSINodes allow one volume of a driver each:
//   - a pod whose bound PV is labelled with zone 2 is placed on the zone-2 node (VolumeZone);
//   - that pod's volume fills the zone-2 node's attach limit, so a 2-pod gang with a volume
//     each finds one slot for two pods: its earlier pod's placement counts against its later
//     one, and the gang waits whole, saying why (NodeVolumeLimits);
//   - a ReadWriteOncePod claim one pod runs with keeps a second pod of it pending, saying why
//     (VolumeRestrictions).
func TestVolumeZoneLimitsAndReadWriteOncePod(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	const limited, unlimited = "limited.csi.e2e", "unlimited.csi.e2e"
	zone := func(z string) map[string]string { return map[string]string{corev1.LabelTopologyZone: e.ns + "-" + z} }
	for _, n := range []struct{ name, zone string }{{"one", "z1"}, {"two", "z2"}} {
		e.gpuNode(n.name, 1, 10, 24576, 0)
		e.labelNode(n.name, corev1.LabelTopologyZone, zone(n.zone)[corev1.LabelTopologyZone])
		e.attachLimit(n.name, limited, 1)
	}
	e.csiClaim("zoned", limited, corev1.ReadWriteOnce, zone("z2"))
	e.csiClaim("first", limited, corev1.ReadWriteOnce, nil)
	e.csiClaim("second", limited, corev1.ReadWriteOnce, nil)
	e.csiClaim("solo", unlimited, corev1.ReadWriteOncePod, nil)
	e.scheduler(chartConf(t))
	claimOf := map[string]string{"zoned-0": "zoned", "pair-0": "first", "pair-1": "second", "solo-0": "solo", "again-0": "solo"}
	mount := func(p *corev1.Pod) { mountClaim(claimOf[p.Name])(p) }
	waitsFor := func(name, reason string) {
		pg := e.podGroup(name, 30*time.Second, "Unschedulable: "+reason, func(pg *schedulingv1beta1.PodGroup) bool {
			c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
			return c != nil && strings.Contains(c.Message, reason)
		})
		t.Logf("PodGroup %s: %s", name, condition(pg, schedulingv1beta1.PodGroupUnschedulableType).Message)
		if bound, _, err := e.boundPods(ctx, name+"-"); err != nil || bound != 0 {
			t.Errorf("%s: %d pods bound (%v), want none", name, bound, err)
		}
	}

	e.vgpuGangOfClass("zoned", "", "", 1, 1, 2000, 0, mount)
	if pod := podPhase(t, e.cs, e.ns, "zoned-0", corev1.PodRunning, 60*time.Second); pod.Spec.NodeName != e.name+"-two" {
		t.Errorf("zoned-0 on %q, want %s-two, the node in its PV's zone", pod.Spec.NodeName, e.name)
	}
	e.vgpuGangOfClass("pair", "", "", 2, 2, 2000, 0, mount)
	waitsFor("pair", "node(s) exceed max volume count")

	e.vgpuGangOfClass("solo", "", "", 1, 1, 2000, 0, mount)
	podPhase(t, e.cs, e.ns, "solo-0", corev1.PodRunning, 60*time.Second)
	e.vgpuGangOfClass("again", "", "", 1, 1, 2000, 0, mount)
	waitsFor("again", "ReadWriteOncePod access mode already in-use by another pod")
}
