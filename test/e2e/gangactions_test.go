//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Issue 47's reclaim case, under the chart's configuration (gang's enablePreemptable off): queue
// a fills 4 GPUs of 24 GiB with 8 single-pod jobs (Deployments' and notebooks' shape) of half a
// GPU each; queue b's gang of 2 pods asking a whole GPU each is then owed half the cluster.
// gangreclaim takes single-pod jobs as whole bundles of one: exactly 4 of a's pods go, 2 on
// each of 2 GPUs, with upstream's Warning Evict event, b's gang runs whole on the GPUs they
// freed, a keeps its other 4, and no GPU is ever over capacity. Classic reclaim, under the same
// configuration, evicts none of them: each single-pod job is at its minimum.
func TestGangReclaimTakesSinglePodJobs(t *testing.T) {
	for _, action := range []string{"gangreclaim", "reclaim"} {
		t.Run(action, func(t *testing.T) {
			e := newSchedulerEnv(t)
			ctx := context.Background()
			nodes := map[string][]vgpu.NodeDevice{e.name + "-gpus": e.gpuNode("gpus", 4, 4, 24576, 0)}
			e.neverOverbooked(nodes)
			qa, qb := e.queue("a", nil), e.queue("b", nil)
			e.scheduler(chartConfWith(t, action))
			for i := range 8 {
				e.volcanoJob(fmt.Sprintf("notebook%d", i), qa, 1, 1, 12288)
			}
			e.waitBound("notebook", 8, 60*time.Second)

			e.volcanoJob("train", qb, 2, 2, 24576)
			if action == "reclaim" {
				e.podGroup("train", 30*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
					c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
					return c != nil && c.Status == corev1.ConditionTrue
				})
				if evicted, err := e.evictedFor(ctx, action); err != nil || len(evicted) != 0 {
					t.Errorf("classic reclaim evicted %v (%v), want none: every single-pod job is at its minimum", evicted, err)
				}
				return
			}
			e.waitBound("train-", 2, 60*time.Second)
			evicted, err := e.evictedFor(ctx, action)
			if err != nil || len(evicted) != 4 {
				t.Fatalf("evicted for %s %v (%v), want 4 of queue a's", action, evicted, err)
			}
			for _, name := range evicted {
				if !strings.HasPrefix(name, "notebook") {
					t.Errorf("%s evicted %s, not one of queue a's", action, name)
				}
			}
			gpus := e.gpuOf(ctx, "train-")
			kept := e.gpuOf(ctx, "notebook")
			if len(kept) != 4 {
				t.Errorf("queue a keeps %d pods, want 4", len(kept))
			}
			for pod, gpu := range gpus {
				for other, g := range kept {
					if g == gpu {
						t.Errorf("%s runs on %s beside %s, which was to make room", pod, gpu, other)
					}
				}
			}
		})
	}
}

// volcanoJobOfClass is volcanoJob of a priority class (its PodGroup's and its pods').
func (e *schedulerEnv) volcanoJobOfClass(name, queue, class string, min, pods int, memMiB int64) {
	e.t.Helper()
	req := workerRequest(memMiB)
	e.gangWith(name, queue, class, min, pods, "", nil, nil, func(_ int, pod *corev1.Pod) { workerResources(pod, req) })
}

// workerResources gives the pod's container req as a user writes it: cpu and memory under
// requests, the vGPU resources under limits only.
func workerResources(pod *corev1.Pod, req corev1.ResourceList) {
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: req[corev1.ResourceCPU], corev1.ResourceMemory: req[corev1.ResourceMemory]}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		vgpu.DefaultCountResource: req[vgpu.DefaultCountResource], vgpu.DefaultMemoryResource: req[vgpu.DefaultMemoryResource]}
}

// volcanoJob is a job as a VolcanoJob makes it: pods of workers asking cpu, memory and one vGPU
// of memMiB, their PodGroup's minResources computed by Volcano's job controller from the pod
// template, where the vGPU resources sit under limits only (so minResources names none).
func (e *schedulerEnv) volcanoJob(name, queue string, min, pods int, memMiB int64) {
	e.t.Helper()
	e.volcanoJobOfClass(name, queue, "", min, pods, memMiB)
}

// Issue 47's gang case with gangpreempt under the chart's configuration: one GPU of 32 GiB
// (4 slots) holds gang g (3 pods, minMember 2) and the single-pod job s, all of 8 GiB and low
// priority. A high-priority pod asking 8 GiB takes g's surplus member, the one pod above its
// minimum, rather than the whole job s; g keeps its minimum and s runs on.
func TestGangPreemptTakesTheSurplusFirst(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 32768, 0)}
	e.neverOverbooked(nodes)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	e.scheduler(chartConfWith(t, "gangpreempt"))
	e.volcanoJobOfClass("g", "", low, 2, 3, 8192)
	e.volcanoJobOfClass("s", "", low, 1, 1, 8192)
	e.waitBound("g-", 3, 60*time.Second)
	e.waitBound("s-", 1, 60*time.Second)

	e.volcanoJobOfClass("urgent", "", high, 1, 1, 8192)
	e.waitBound("urgent-", 1, 60*time.Second)
	evicted, err := e.evictedFor(ctx, "gangpreempt")
	if err != nil || len(evicted) != 1 || !strings.HasPrefix(evicted[0], "g-") {
		t.Fatalf("evicted for gangpreempt %v (%v), want one of g's pods", evicted, err)
	}
	if b, _, err := e.boundPods(ctx, "s-"); err != nil || b != 1 {
		t.Errorf("s's pod bound %d (%v), want it kept", b, err)
	}
	if b, _, err := e.boundPods(ctx, "g-"); err != nil || b != 2 {
		t.Errorf("g's pods bound %d (%v), want its minimum of 2", b, err)
	}
}

// Issue 47's annotation case, under the chart's configuration with preempt: one GPU of 4 slots
// holds job "cheap" (priority 1), whose pod's author wrote volcano.sh/task-priority "1000000",
// and job "dear" (priority 5, 3 pods). A pod of priority 1000 asking one slot evicts cheap's
// pod: victims rank by their job's priority, and a task priority orders pods only inside its
// own job, so no pod author moves eviction onto another job.
func TestAnnotatedTaskPriorityDoesNotMoveEviction(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 32768, 0)}
	e.neverOverbooked(nodes)
	p1, p5, high := e.priorityClass("p1", 1), e.priorityClass("p5", 5), e.priorityClass("high", 1000)
	e.scheduler(chartConfWith(t, "preempt"))
	req := workerRequest(8192)
	e.gangWith("cheap", "", p1, 1, 1, "", nil, nil, func(_ int, pod *corev1.Pod) {
		workerResources(pod, req)
		pod.Annotations["volcano.sh/task-priority"] = "1000000"
	})
	e.volcanoJobOfClass("dear", "", p5, 1, 3, 8192)
	e.waitBound("cheap-", 1, 60*time.Second)
	e.waitBound("dear-", 3, 60*time.Second)

	e.volcanoJobOfClass("urgent", "", high, 1, 1, 8192)
	e.waitBound("urgent-", 1, 60*time.Second)
	if evicted, err := e.evictedFor(ctx, "preempt"); err != nil || len(evicted) != 1 || evicted[0] != "cheap-0" {
		t.Errorf("evicted for preempt %v (%v), want [cheap-0]: its job has the lowest priority, whatever its pod's annotation says", evicted, err)
	}
	if b, _, err := e.boundPods(ctx, "dear-"); err != nil || b != 3 {
		t.Errorf("dear's pods bound %d (%v), want all 3", b, err)
	}
}
