//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// chartConfWith is the chart's default configuration (deviceshare with binpack) with action
// after allocate.
func chartConfWith(t *testing.T, action string) string {
	t.Helper()
	chart := chartConf(t)
	conf := strings.Replace(chart, `"enqueue, allocate, backfill"`, `"enqueue, allocate, `+action+`, backfill"`, 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no actions line to add " + action + " to")
	}
	return conf
}

// chartConfWithPreempt is chartConfWith preempt.
func chartConfWithPreempt(t *testing.T) string { return chartConfWith(t, "preempt") }

// evictedPods are the pods with upstream's Warning Evict event for preempt, sorted.
func (e *schedulerEnv) evictedPods(ctx context.Context) ([]string, error) {
	return e.evictedFor(ctx, "preempt")
}

// evictedFor are the pods with upstream's Warning Evict event for the action, sorted. action
// may end with ": " and the start of the detail that follows it (consolidate's "moved to
// free ...").
func (e *schedulerEnv) evictedFor(ctx context.Context, action string) ([]string, error) {
	events, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evict"})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ev := range events.Items {
		message := "Pod is evicted, because of " + action
		if ev.Type == corev1.EventTypeWarning && (ev.Message == message || strings.HasSuffix(action, ": ") && strings.HasPrefix(ev.Message, message)) {
			names = append(names, ev.InvolvedObject.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// gpuOf maps each bound pod whose name starts with prefix to the GPU its assignment names.
func (e *schedulerEnv) gpuOf(ctx context.Context, prefix string) map[string]string {
	e.t.Helper()
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, prefix) || p.Spec.NodeName == "" {
			continue
		}
		assigned, err := vgpu.DecodePodDevices(p.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil || len(assigned) != 1 || len(assigned[0]) != 1 {
			e.t.Fatalf("pod %s: assignment %q (%v)", p.Name, p.Annotations[vgpu.AssignedDevicesAnnotation], err)
		}
		out[p.Name] = assigned[0][0].UUID
	}
	return out
}

// noOverbooking fails the test for any GPU booked past its slots, memory or cores.
func (e *schedulerEnv) noOverbooking(ctx context.Context, nodes map[string][]vgpu.NodeDevice) {
	e.t.Helper()
	_, problems, err := e.checkLedger(ctx, nodes)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range problems {
		e.t.Error(p)
	}
}

// neverOverbooked follows the GPUs' ledger through the rest of the test (watchHandOver: after
// every pod event), and fails the test at its end once for each distinct problem seen.
func (e *schedulerEnv) neverOverbooked(nodes map[string][]vgpu.NodeDevice) {
	e.t.Helper()
	watched := e.watchHandOver(nodes)
	e.t.Cleanup(func() {
		problems, _, _ := watched.report()
		slices.Sort(problems)
		for _, p := range slices.Compact(problems) {
			e.t.Errorf("GPU ledger: %s", p)
		}
	})
}

// gpusFullOfLowPriority is a node of gpus 24 GiB GPUs (split 10), that this env's scheduler
// with preempt sees, holding four low-priority pods of lowMiB each (gang "low", minMember 1);
// it returns the env, the node's GPUs by node name and a high priority class.
func gpusFullOfLowPriority(t *testing.T, gpus int, lowMiB int64) (*schedulerEnv, map[string][]vgpu.NodeDevice, string) {
	e := newSchedulerEnv(t)
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", gpus, 10, 24576, 0)}
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	e.scheduler(chartConfWithPreempt(t))
	e.neverOverbooked(nodes)
	e.vgpuGangOfClass("low", "", low, 1, 4, lowMiB, 0)
	e.waitBound("low-", 4, 30*time.Second)
	return e, nodes, high
}

// One 24 GiB GPU holds four low-priority 6000 MiB pods: a high-priority 2-pod gang of 6000
// MiB each evicts exactly two of them, with upstream's Warning Evict event, and runs whole on
// that GPU once they are gone; the other two keep running and the GPU is never overbooked.
func TestVGPUPreemptEvictsOnlyWhatTheGangNeeds(t *testing.T) {
	e, nodes, high := gpusFullOfLowPriority(t, 1, 6000)
	ctx := context.Background()

	e.vgpuGangOfClass("high", "", high, 2, 2, 6000, 0)
	e.waitBound("high-", 2, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	var evicted []string
	eventually(t, 20*time.Second, "two Evict events on low pods", func(ctx context.Context) (bool, string, error) {
		var err error
		evicted, err = e.evictedPods(ctx)
		return len(evicted) == 2 && strings.HasPrefix(evicted[0], "low-") && strings.HasPrefix(evicted[1], "low-"),
			strings.Join(evicted, ", "), err
	})
	if b, _, err := e.boundPods(ctx, "low-"); err != nil || b != 2 {
		t.Errorf("low pods bound after preemption: %d (%v), want 2", b, err)
	}
}

// A node has two GPUs, each holding two low-priority 10000 MiB pods: a high-priority pod
// asking one 20000 MiB vGPU evicts the two pods of one GPU, and none of the other, and is
// bound on the GPU they freed.
func TestVGPUPreemptFreesOneGPU(t *testing.T) {
	e, nodes, high := gpusFullOfLowPriority(t, 2, 10000)
	ctx := context.Background()
	before := e.gpuOf(ctx, "low-")

	e.vgpuGangOfClass("high", "", high, 1, 1, 20000, 0)
	e.waitBound("high-", 1, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	evicted, err := e.evictedPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(evicted) != 2 || before[evicted[0]] != before[evicted[1]] {
		t.Fatalf("evicted %v on GPUs %v, want the two pods of one GPU", evicted, before)
	}
	if got := e.gpuOf(ctx, "high-")["high-0"]; got != before[evicted[0]] {
		t.Errorf("the preemptor is on GPU %s, want %s, the one its victims freed", got, before[evicted[0]])
	}
	if b, _, err := e.boundPods(ctx, "low-"); err != nil || b != 2 {
		t.Errorf("low pods bound after preemption: %d (%v), want 2", b, err)
	}
}

// A gang of two 13000 MiB vGPUs cannot fit one 24 GiB GPU however many pods leave it: it
// evicts nothing, and its PodGroup says why: preemption found one pod a place (three low pods
// would go) but not the other, whose reason is the origin. Which of the two
// found the place is the task order's choice, so either may be named; the pod named has the
// same reason as its PodScheduled message.
func TestVGPUPreemptorThatCannotFitEvictsNothing(t *testing.T) {
	e, _, high := gpusFullOfLowPriority(t, 1, 6000)
	ctx := context.Background()

	// The words of pkg/scheduler/actions/internal/evictsearch (AfterEvictions), spelled out: they
	// are what users read.
	const reason = "0/1 nodes are unavailable: 1 Insufficient volcano.sh/vgpu-memory even with every allowed victim evicted."
	const prefix = "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 Unschedulable. Origin reason is "
	e.vgpuGangOfClass("high", "", high, 2, 2, 13000, 0)
	// The first cycles may write the condition before preempt has had its turn (the gang is
	// still being enqueued): wait for the one that carries preempt's reason.
	var origin string
	e.podGroup("high", 30*time.Second, "Unschedulable with preempt's origin reason", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		if c == nil || c.Status != corev1.ConditionTrue {
			return false
		}
		for _, pod := range []string{"high-0", "high-1"} {
			if c.Message == prefix+pod+": "+reason {
				origin = pod
				return true
			}
		}
		return false
	})
	eventually(t, 20*time.Second, "pod "+origin+" PodScheduled=False with the origin reason", func(ctx context.Context) (bool, string, error) {
		p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, origin, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c.Status == corev1.ConditionFalse && c.Message == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message), nil
			}
		}
		return false, "no PodScheduled condition", nil
	})
	if evicted, err := e.evictedPods(ctx); err != nil || len(evicted) != 0 {
		t.Errorf("evicted %v (%v), want none", evicted, err)
	}
	if b, _, err := e.boundPods(ctx, "low-"); err != nil || b != 4 {
		t.Errorf("low pods bound %d (%v), want all 4", b, err)
	}
}

// Two of the four low-priority 6000 MiB pods on a 24 GiB GPU are marked
// volcano.sh/preemptable: "false": a high-priority pod asking 12000 MiB evicts the other two,
// never those.
func TestVGPUPreemptSparesNonPreemptablePods(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 10, 24576, 0)}
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	e.scheduler(chartConfWithPreempt(t))
	e.vgpuGangOfClass("keep", "", low, 1, 2, 6000, 0, func(p *corev1.Pod) {
		p.Annotations[schedulingv1beta1.PodPreemptable] = "false"
	})
	e.vgpuGangOfClass("low", "", low, 1, 2, 6000, 0)
	e.waitBound("keep-", 2, 30*time.Second)
	e.waitBound("low-", 2, 30*time.Second)

	e.vgpuGangOfClass("high", "", high, 1, 1, 12000, 0)
	e.waitBound("high-", 1, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	if evicted, err := e.evictedPods(ctx); err != nil || strings.Join(evicted, ",") != "low-0,low-1" {
		t.Errorf("evicted %v (%v), want low-0 and low-1 only", evicted, err)
	}
	if b, _, err := e.boundPods(ctx, "keep-"); err != nil || b != 2 {
		t.Errorf("non-preemptable pods bound %d (%v), want both", b, err)
	}
}

// Two queues of weight 1 share one 24 GiB GPU: queue a's four 6000 MiB pods hold it all;
// queue b's gang of two 6000 MiB pods takes back its deserved half, two of a's pods evicted
// with upstream's Warning Evict event for reclaim, and no more.
func TestVGPUReclaimGivesBackTheDeservedShare(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 10, 24576, 0)}
	qa, qb := e.queue("a", nil), e.queue("b", nil)
	e.scheduler(chartConfWith(t, "reclaim"))
	e.vgpuGangOfClass("ajob", qa, "", 1, 4, 6000, 0)
	e.waitBound("ajob-", 4, 30*time.Second)

	e.vgpuGang("bjob", qb, 2, 6000, 0)
	e.waitBound("bjob-", 2, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	if b, _, err := e.boundPods(ctx, "ajob-"); err != nil || b != 2 {
		t.Errorf("queue a's pods bound %d (%v), want 2", b, err)
	}
	if evicted, err := e.evictedFor(ctx, "reclaim"); err != nil || len(evicted) != 2 ||
		!strings.HasPrefix(evicted[0], "ajob-") || !strings.HasPrefix(evicted[1], "ajob-") {
		t.Errorf("evicted for reclaim %v (%v), want two of queue a's pods", evicted, err)
	}
}

// Gang's Preemptable on (the chart sets it off): on a 24 GiB GPU, gang "atmin" (priority 5,
// minMember 2) runs two 6000 MiB pods and gang "spare" (priority 10, minMember 1) two more. A
// high-priority pod asking 6000 MiB evicts one of spare's, although atmin's are of lower
// priority: atmin is at its minimum, and losing a pod would break it.
func TestVGPUPreemptNeverCutsAGangBelowItsMinimum(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 10, 24576, 0)}
	lowest, low, high := e.priorityClass("lowest", 5), e.priorityClass("low", 10), e.priorityClass("high", 1000)
	chart := chartConfWithPreempt(t)
	conf := strings.Replace(chart, "- name: gang\n    enablePreemptable: false\n", "- name: gang\n", 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no gang entry with enablePreemptable: false")
	}
	e.scheduler(conf)
	e.vgpuGangOfClass("atmin", "", lowest, 2, 2, 6000, 0)
	e.vgpuGangOfClass("spare", "", low, 1, 2, 6000, 0)
	e.waitBound("atmin-", 2, 30*time.Second)
	e.waitBound("spare-", 2, 30*time.Second)

	e.vgpuGangOfClass("high", "", high, 1, 1, 6000, 0)
	e.waitBound("high-", 1, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	if evicted, err := e.evictedPods(ctx); err != nil || len(evicted) != 1 || !strings.HasPrefix(evicted[0], "spare-") {
		t.Errorf("evicted %v (%v), want one of spare's pods only", evicted, err)
	}
	if b, _, err := e.boundPods(ctx, "atmin-"); err != nil || b != 2 {
		t.Errorf("gang atmin has %d pods bound (%v), want both", b, err)
	}
}
