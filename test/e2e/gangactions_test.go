//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
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
// With gangpreempt and gangreclaim named, gangreclaim takes single-pod jobs as whole bundles
// of one: exactly 4 of a's pods go, 2 on each of 2 GPUs, with upstream's Warning Evict event,
// b's gang runs whole (Scheduled) on the GPUs they freed, a keeps its other 4, and no GPU is
// ever over capacity. With the classic names (preempt, reclaim) under the same configuration,
// none of them goes and b's gang stays Unschedulable: each single-pod job is at its minimum.
func TestGangReclaimTakesSinglePodJobs(t *testing.T) {
	for _, actions := range []string{gangActions, classicActions} {
		reclaim := map[string]string{gangActions: "gangreclaim", classicActions: "reclaim"}[actions]
		t.Run(reclaim, func(t *testing.T) {
			e := newSchedulerEnv(t)
			ctx := context.Background()
			nodes := map[string][]vgpu.NodeDevice{e.name + "-gpus": e.gpuNode("gpus", 4, 4, 24576, 0)}
			e.neverOverbooked(nodes)
			qa, qb := e.queue("a", nil), e.queue("b", nil)
			e.scheduler(chartConfWith(t, actions))
			for i := range 8 {
				e.volcanoJob(fmt.Sprintf("notebook%d", i), qa, 1, 1, 12288)
			}
			e.waitBound("notebook", 8, 60*time.Second)

			e.volcanoJob("train", qb, 2, 2, 24576)
			if actions == classicActions {
				e.podGroup("train", 30*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
					c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
					return c != nil && c.Status == corev1.ConditionTrue
				})
				for _, action := range []string{"preempt", "reclaim"} {
					if evicted, err := e.evictedFor(ctx, action); err != nil || len(evicted) != 0 {
						t.Errorf("classic %s evicted %v (%v), want none: every single-pod job is at its minimum", action, evicted, err)
					}
				}
				return
			}
			e.waitBound("train-", 2, 60*time.Second)
			e.waitScheduled("train")
			for _, name := range e.waitEvicted(reclaim, 4) {
				if !strings.HasPrefix(name, "notebook") {
					t.Errorf("%s evicted %s, not one of queue a's", reclaim, name)
				}
			}
			if evicted, err := e.evictedFor(ctx, "gangpreempt"); err != nil || len(evicted) != 0 {
				t.Errorf("evicted for gangpreempt %v (%v), want none: the gang is alone in its queue", evicted, err)
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

// The actions a GPU cluster should name for preemption and reclaim (README), and the classic
// ones.
const gangActions, classicActions = "gangpreempt, gangreclaim", "preempt, reclaim"

// waitEvicted waits until n pods have upstream's Warning Evict event for the action (the
// events are written apart from the evictions), and returns them, sorted.
func (e *schedulerEnv) waitEvicted(action string, n int) []string {
	e.t.Helper()
	var evicted []string
	eventually(e.t, 20*time.Second, fmt.Sprintf("%d Evict events for %s", n, action), func(ctx context.Context) (bool, string, error) {
		var err error
		evicted, err = e.evictedFor(ctx, action)
		return len(evicted) >= n, strings.Join(evicted, ", "), err
	})
	if len(evicted) != n {
		e.t.Fatalf("evicted for %s %v, want %d", action, evicted, n)
	}
	return evicted
}

// waitScheduled waits until the PodGroup runs with gang's Scheduled condition.
func (e *schedulerEnv) waitScheduled(name string) {
	e.t.Helper()
	e.podGroup(name, 30*time.Second, "Running and Scheduled", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupScheduled)
		return pg.Status.Phase == schedulingv1beta1.PodGroupRunning && c != nil && c.Status == corev1.ConditionTrue
	})
}

// Issue 47's gang case under the chart's configuration with gangpreempt and gangreclaim: one
// GPU of 32 GiB (4 slots) holds gang g (3 pods, minMember 2) and the single-pod job s, all of
// 8 GiB and low priority. High-priority single pods of 8 GiB come one after the other:
//   - the first takes g's surplus member, the one pod above its minimum, not the whole job s;
//   - the second takes s, a whole job of one: single-pod jobs stay preemptable, and g, at its
//     minimum, is spared while s makes room;
//   - the third takes the whole of g (both its pods), since nothing else makes room and g
//     cannot run without them.
//
// Each preemptor's PodGroup runs with its Scheduled condition, g's PodGroup stays Scheduled
// at its minimum until it goes whole, and no GPU is ever over capacity.
func TestGangPreemptTakesTheSurplusFirst(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 32768, 0)}
	e.neverOverbooked(nodes)
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	e.scheduler(chartConfWith(t, gangActions))
	e.volcanoJobOfClass("g", "", low, 2, 3, 8192)
	e.volcanoJobOfClass("s", "", low, 1, 1, 8192)
	e.waitBound("g-", 3, 60*time.Second)
	e.waitBound("s-", 1, 60*time.Second)
	bound := func(prefix string, want int) {
		t.Helper()
		if b, _, err := e.boundPods(ctx, prefix); err != nil || b != want {
			t.Errorf("%s* pods bound %d (%v), want %d", prefix, b, err, want)
		}
	}

	e.volcanoJobOfClass("urgent1", "", high, 1, 1, 8192)
	e.waitBound("urgent1-", 1, 60*time.Second)
	e.waitScheduled("urgent1")
	first := e.waitEvicted("gangpreempt", 1)
	if !strings.HasPrefix(first[0], "g-") {
		t.Fatalf("evicted %v for the first preemptor, want one of g's pods", first)
	}
	bound("s-", 1)
	bound("g-", 2)
	e.waitScheduled("g")

	e.volcanoJobOfClass("urgent2", "", high, 1, 1, 8192)
	e.waitBound("urgent2-", 1, 60*time.Second)
	e.waitScheduled("urgent2")
	if second := e.waitEvicted("gangpreempt", 2); !slices.Contains(second, "s-0") {
		t.Fatalf("evicted %v after the second preemptor, want s-0 beside %s", second, first[0])
	}
	bound("g-", 2)

	e.volcanoJobOfClass("urgent3", "", high, 1, 1, 8192)
	e.waitBound("urgent3-", 1, 60*time.Second)
	e.waitScheduled("urgent3")
	if all := e.waitEvicted("gangpreempt", 4); !slices.Equal(all, []string{"g-0", "g-1", "g-2", "s-0"}) {
		t.Errorf("evicted %v after the third preemptor, want every pod of g and s-0", all)
	}
	bound("g-", 0)
	bound("urgent", 3)
	if evicted, err := e.evictedFor(ctx, "gangreclaim"); err != nil || len(evicted) != 0 {
		t.Errorf("evicted for gangreclaim %v (%v), want none: one queue", evicted, err)
	}
}

// Issue 47's annotation case, under the chart's configuration, with the gang actions named and
// with the classic ones: one GPU of 4 slots holds job "cheap" (priority 1), whose pod's author
// wrote volcano.sh/task-priority "1000000", and gang "dear" (priority 5, 3 pods at minMember
// 3). A pod of priority 1000 asking one slot evicts cheap's pod: victims rank by their job's
// priority, and a task priority orders pods only inside its own job, so no pod author moves
// eviction onto another job. The preemptor runs (Scheduled), dear keeps all 3 pods, and no GPU
// is ever over capacity.
func TestAnnotatedTaskPriorityDoesNotMoveEviction(t *testing.T) {
	for _, actions := range []string{gangActions, classicActions} {
		preempt := map[string]string{gangActions: "gangpreempt", classicActions: "preempt"}[actions]
		t.Run(preempt, func(t *testing.T) {
			e := newSchedulerEnv(t)
			ctx := context.Background()
			nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 32768, 0)}
			e.neverOverbooked(nodes)
			p1, p5, high := e.priorityClass("p1", 1), e.priorityClass("p5", 5), e.priorityClass("high", 1000)
			e.scheduler(chartConfWith(t, actions))
			req := workerRequest(8192)
			e.gangWith("cheap", "", p1, 1, 1, "", nil, nil, func(_ int, pod *corev1.Pod) {
				workerResources(pod, req)
				pod.Annotations["volcano.sh/task-priority"] = "1000000"
			})
			e.volcanoJobOfClass("dear", "", p5, 3, 3, 8192)
			e.waitBound("cheap-", 1, 60*time.Second)
			e.waitBound("dear-", 3, 60*time.Second)

			e.volcanoJobOfClass("urgent", "", high, 1, 1, 8192)
			e.waitBound("urgent-", 1, 60*time.Second)
			e.waitScheduled("urgent")
			if evicted := e.waitEvicted(preempt, 1); evicted[0] != "cheap-0" {
				t.Errorf("evicted for %s %v, want [cheap-0]: its job has the lowest priority, whatever its pod's annotation says", preempt, evicted)
			}
			if b, _, err := e.boundPods(ctx, "dear-"); err != nil || b != 3 {
				t.Errorf("dear's pods bound %d (%v), want all 3", b, err)
			}
		})
	}
}
