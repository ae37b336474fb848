//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// preemptConf is upstream's default configuration with preempt after allocate.
var preemptConf = strings.Replace(defaultConf, `"enqueue, allocate, backfill"`, `"enqueue, allocate, preempt, backfill"`, 1)

// withoutEnqueue drops the enqueue action, as upstream's own preemption specs do ("it
// conflicts with preempt"): in a full cluster overcommit admits no job whose minResources
// exceed its spare fifth, and preempt and reclaim skip a job that was never admitted;
// without enqueue, allocate admits every job.
func withoutEnqueue(conf string) string {
	return strings.Replace(conf, `"enqueue, `, `"`, 1)
}

// priorityClass creates a PriorityClass of the value for this test, and returns its name.
func (e *schedulerEnv) priorityClass(suffix string, value int32) string {
	e.t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + suffix}, Value: value}
	if _, err := e.cs.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create priority class %s: %v", pc.Name, err)
	}
	e.t.Cleanup(func() {
		_ = e.cs.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	return pc.Name
}

// fullOfLowPriority is a 4-CPU node that four 1-CPU pods of a low priority class (gang "low",
// minMember 1) fill, under a scheduler running conf; it returns the env and a high class.
func fullOfLowPriority(t *testing.T, conf string) (*schedulerEnv, string) {
	e := newSchedulerEnv(t)
	e.node("a", "4")
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	e.scheduler(conf)
	e.gangOfClass("low", "", low, 1, 4, "1", nil)
	e.waitBound("low-", 4, 30*time.Second)
	return e, high
}

// A high-priority 2-pod gang on a full node evicts exactly two low-priority pods, each told
// why in upstream's Warning Evict event, and then runs whole; the other low pods keep running.
func TestPreemptEvictsOnlyWhatTheGangNeeds(t *testing.T) {
	e, high := fullOfLowPriority(t, withoutEnqueue(preemptConf))

	e.gangOfClass("high", "", high, 2, 2, "1", nil)
	e.waitBound("high-", 2, 60*time.Second)
	e.waitBound("low-", 2, 30*time.Second)
	evicted := 0
	eventually(t, 20*time.Second, "two Evict events on low pods", func(ctx context.Context) (bool, string, error) {
		events, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evict"})
		if err != nil {
			return false, err.Error(), nil
		}
		evicted = 0
		var seen []string
		for _, ev := range events.Items {
			seen = append(seen, ev.InvolvedObject.Name+" "+ev.Type+": "+ev.Message)
			if ev.Type == corev1.EventTypeWarning && ev.Message == "Pod is evicted, because of preempt" && strings.HasPrefix(ev.InvolvedObject.Name, "low-") {
				evicted++
			}
		}
		return evicted == 2, strings.Join(seen, "; "), nil
	})
	// Nothing more goes: the two pods left are not evicted in later cycles.
	b, _, err := e.boundPods(context.Background(), "low-")
	if err != nil || b != 2 {
		t.Errorf("low pods bound after preemption: %d (%v), want 2", b, err)
	}
}

// A preemptor that would not fit even with every lower-priority pod gone evicts nothing.
func TestPreemptorThatCannotFitEvictsNothing(t *testing.T) {
	e, high := fullOfLowPriority(t, withoutEnqueue(preemptConf))

	e.gangOfClass("high", "", high, 1, 1, "5", nil)
	e.podGroup("high", 30*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	events, err := e.cs.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Evict"})
	if err != nil || len(events.Items) != 0 {
		t.Errorf("Evict events %d (%v), want none", len(events.Items), err)
	}
	if b, _, err := e.boundPods(context.Background(), "low-"); err != nil || b != 4 {
		t.Errorf("low pods bound %d (%v), want all 4", b, err)
	}
}

// With enqueue in the conf, the same preemptor's job is never admitted (its minResources, 2
// cpu, exceed what overcommit leaves on the full node: 4.8 - 4), so it evicts nothing, as
// upstream's "preemption doesn't work when podgroup is pending due to insufficient resource".
func TestPendingJobPreemptsNothing(t *testing.T) {
	e, high := fullOfLowPriority(t, preemptConf)

	e.gangOfClass("high", "", high, 2, 2, "1", nil)
	pg := e.podGroup("high", 30*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	if pg.Status.Phase != schedulingv1beta1.PodGroupPending {
		t.Errorf("preemptor's PodGroup phase %s, want Pending", pg.Status.Phase)
	}
	events, err := e.cs.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Evict"})
	if err != nil || len(events.Items) != 0 {
		t.Errorf("Evict events %d (%v), want none", len(events.Items), err)
	}
	if b, _, err := e.boundPods(context.Background(), "low-"); err != nil || b != 4 {
		t.Errorf("low pods bound %d (%v), want all 4", b, err)
	}
}

// reclaimConf is upstream's default configuration with reclaim after allocate.
var reclaimConf = strings.Replace(defaultConf, `"enqueue, allocate, backfill"`, `"enqueue, allocate, reclaim, backfill"`, 1)

// Two queues of weight 1: queue a has taken the whole node; queue b's 2-pod gang takes back
// its deserved half, two of a's pods evicted with upstream's Warning Evict event, and no
// more: a keeps the other two.
func TestReclaimGivesBackTheDeservedShare(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("a", "4")
	qa, qb := e.queue("a", nil), e.queue("b", nil)
	e.scheduler(withoutEnqueue(reclaimConf))
	e.gang("ajob", qa, 1, 4, "1", nil)
	e.waitBound("ajob-", 4, 30*time.Second)

	e.gang("bjob", qb, 2, 2, "1", nil)
	e.waitBound("bjob-", 2, 60*time.Second)
	e.waitBound("ajob-", 2, 30*time.Second)
	waitEvent(t, e.cs, 20*time.Second, e.ns, "reason=Evict", "Evict events on queue a's pods", func(ev corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Message == "Pod is evicted, because of reclaim" && strings.HasPrefix(ev.InvolvedObject.Name, "ajob-")
	})
	events, err := e.cs.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Evict"})
	if err != nil || len(events.Items) != 2 {
		t.Errorf("Evict events %d (%v), want 2", len(events.Items), err)
	}
}
