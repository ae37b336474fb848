//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// spreadConfWithConsolidate is the chart's configuration with the consolidate action after
// allocate and deviceshare's GPU policy spread (slices spread over GPUs leave every GPU with a
// little room: the fragmentation consolidate undoes).
func spreadConfWithConsolidate(t *testing.T) string {
	t.Helper()
	c := chartConfWith(t, "consolidate")
	spread := strings.Replace(c, "deviceshare.SchedulePolicy: binpack", "deviceshare.SchedulePolicy: spread", 1)
	if spread == c {
		t.Fatal("config/volcano-scheduler.conf: no deviceshare.SchedulePolicy to set to spread")
	}
	return spread
}

// podTemplate is a pod of this env's scheduler asking 1 cpu, 1Gi and one vGPU of memMiB, as a
// Deployment or StatefulSet template gives it.
func (e *schedulerEnv) podTemplate(labels, annotations map[string]string, memMiB int64) corev1.PodTemplateSpec {
	pod := tinyPod(e.ns, "", "")
	pod.Spec.SchedulerName = e.name
	pod.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists}}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits: corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("1"),
			vgpu.DefaultMemoryResource: *resource.NewQuantity(memMiB, resource.DecimalSI)},
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}, Spec: pod.Spec}
}

// gpuDeployment creates a Deployment of replicas pods of memMiB each (each pod gets a PodGroup
// of its own from the stand-in controllers, as Volcano's gives a Deployment's pods).
func (e *schedulerEnv) gpuDeployment(name string, replicas int32, memMiB int64) {
	e.t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: e.podTemplate(labels, nil, memMiB)}}
	if _, err := e.cs.AppsV1().Deployments(e.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create deployment %s: %v", name, err)
	}
}

// gangStatefulSet creates a PodGroup of minMember replicas and a StatefulSet of replicas pods
// of memMiB each in it: a gang at its minimum whose pods a controller recreates.
func (e *schedulerEnv) gangStatefulSet(name string, replicas int32, memMiB int64) {
	e.t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	tmpl := e.podTemplate(labels, map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: name}, memMiB)
	pods := make([]*corev1.Pod, replicas)
	for i := range pods {
		pods[i] = &corev1.Pod{Spec: tmpl.Spec}
	}
	min := minresources.Of(pods, int(replicas))
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{MinMember: replicas, MinResources: &min}}
	if _, err := e.vc.SchedulingV1beta1().PodGroups(e.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create podgroup %s: %v", name, err)
	}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement, Template: tmpl}}
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create statefulset %s: %v", name, err)
	}
}

// perGPU counts the pods of a GPU map by GPU.
func perGPU(gpus map[string]string) map[string]int {
	out := map[string]int{}
	for _, g := range gpus {
		out[g]++
	}
	return out
}

// Issue 52's shape: 4 GPUs of 24 GiB, each holding three 6000 MiB pods of a Deployment
// (6576 MiB free on each, 26,304 in all); a pod asking 20,000 MiB fits no GPU. With the
// consolidate action the three pods of one GPU are evicted (upstream's Warning Evict event,
// "because of consolidate: moved to free <GPU> on node <node> for podgroup <ns>/big"), the
// PodGroup gets a Normal Consolidated event naming them, the Deployment recreates them on the
// other GPUs, the pod binds on the GPU they left, all 12 replicas run again, no GPU is ever
// over its memory, cores or split, and /metrics counts 3 pods moved and 1 GPU freed.
func TestConsolidateFreesAGPUForAPod(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpus": e.gpuNode("gpus", 4, 10, 24576, 0)}
	e.neverOverbooked(nodes)
	addr := freeAddress(t)
	e.scheduler(spreadConfWithConsolidate(t), "--enable-metrics", "--listen-address", addr)
	e.gpuDeployment("serve", 12, 6000)
	e.waitBound("serve-", 12, 60*time.Second)
	before := e.gpuOf(ctx, "serve-")
	for gpu, n := range perGPU(before) {
		if n != 3 {
			t.Fatalf("GPU %s holds %d of serve's pods, want 3 on each (spread): %v", gpu, n, before)
		}
	}

	e.vgpuGangOfClass("big", "", "", 1, 1, 20000, 0)
	evicted := e.waitEvicted("consolidate: ", 3)
	freed := map[string]bool{}
	for _, name := range evicted {
		freed[before[name]] = true
	}
	if len(freed) != 1 {
		t.Fatalf("moved %v from GPUs %v, want the three pods of one GPU", evicted, freed)
	}
	for gpu := range freed {
		detail := fmt.Sprintf("consolidate: moved to free %s on node %s for podgroup %s/big", gpu, e.name+"-gpus", e.ns)
		if exact, err := e.evictedFor(ctx, detail); err != nil || len(exact) != 3 {
			t.Errorf("Evict events saying %q: %v (%v), want the 3 moved pods", detail, exact, err)
		}
		prefix := fmt.Sprintf("moved 3 pods to free %s on node %s: ", gpu, e.name+"-gpus")
		waitEvent(t, e.cs, 20*time.Second, e.ns, "involvedObject.kind=PodGroup,involvedObject.name=big", "Consolidated event on big",
			func(ev corev1.Event) bool {
				return ev.Type == corev1.EventTypeNormal && ev.Reason == "Consolidated" && strings.HasPrefix(ev.Message, prefix)
			})
	}
	e.waitBound("big-", 1, 60*time.Second)
	e.waitBoundCount("serve-", "12 of serve's pods bound, the moved ones recreated", func(n int) bool { return n == 12 }, 60*time.Second)
	big := e.gpuOf(ctx, "big-")["big-0"]
	if !freed[big] {
		t.Errorf("big-0 runs on %s, want the GPU its room was made on (%v)", big, freed)
	}
	for pod, gpu := range e.gpuOf(ctx, "serve-") {
		if gpu == big {
			t.Errorf("%s runs on %s beside big-0", pod, gpu)
		}
	}
	e.noOverbooking(ctx, nodes)
	families := parseScrape(t, scrape(t, "http://"+addr+"/metrics"))
	for name, want := range map[string]float64{"volcano_consolidation_moved_pods_total": 3, "volcano_consolidation_freed_gpus_total": 1} {
		if got := sum(families[name]); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// What never moves: on 2 GPUs of 24 GiB, six 6000 MiB pods that no controller recreates
// (bare pods, each its own PodGroup), or a StatefulSet's six pods in one gang at its minimum
// (minMember 6). A pod asking 20,000 MiB stays Unschedulable and nothing is evicted.
func TestConsolidateNeverMovesBarePodsOrAGangAtItsMinimum(t *testing.T) {
	for _, shape := range []string{"bare", "gang"} {
		t.Run(shape, func(t *testing.T) {
			e := newSchedulerEnv(t)
			ctx := context.Background()
			nodes := map[string][]vgpu.NodeDevice{e.name + "-gpus": e.gpuNode("gpus", 2, 10, 24576, 0)}
			e.neverOverbooked(nodes)
			e.scheduler(spreadConfWithConsolidate(t))
			if shape == "bare" {
				for i := range 6 {
					e.vgpuGangOfClass(fmt.Sprintf("bare%d", i), "", "", 1, 1, 6000, 0)
				}
			} else {
				e.gangStatefulSet("gang", 6, 6000)
			}
			e.waitBound(shape, 6, 60*time.Second)
			e.vgpuGangOfClass("big", "", "", 1, 1, 20000, 0)
			e.podGroup("big", 30*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
				c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
				return c != nil && c.Status == corev1.ConditionTrue
			})
			if evicted, err := e.evictedFor(ctx, "consolidate: "); err != nil || len(evicted) != 0 {
				t.Errorf("consolidate evicted %v (%v), want none", evicted, err)
			}
			if bound, pending, err := e.boundPods(ctx, shape); err != nil || bound != 6 {
				t.Errorf("%d of the %s pods bound (pending %v, %v), want all 6 untouched", bound, shape, pending, err)
			}
		})
	}
}
