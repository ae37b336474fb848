//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/sla"
)

// The sla plugin in the chart's conf's first tier: a queue capped at 1 cpu is full, so
// proportion keeps new jobs in it Pending; a job whose PodGroup asks for a 5 s waiting time
// is enqueued once it has waited that long while its twin without one stays Pending, and a
// PodGroup with a malformed waiting time says so in a condition and a Warning Event.
func TestSLAWaitingTimeEnqueuesPastAFullQueue(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("a", "8")
	small := e.queue("small", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	chart := chartConf(t)
	conf := strings.Replace(chart, "  - name: conformance\n", "  - name: conformance\n  - name: sla\n", 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no conformance line to add sla after")
	}
	e.scheduler(conf)
	one := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	e.gang("first", small, 1, 1, "1", one)
	e.waitBound("first-", 1, 60*time.Second)

	waiting := func(value string) func(*schedulingv1beta1.PodGroup) {
		return func(pg *schedulingv1beta1.PodGroup) {
			pg.Annotations = map[string]string{sla.PrefixedWaitingTime: value}
		}
	}
	created := time.Now()
	e.gangWith("late", small, "", 1, 1, "1", one, waiting("5s"), nil)
	e.gangWith("plain", small, "", 1, 1, "1", one, nil, nil)
	e.gangWith("bad", small, "", 1, 1, "1", one, waiting("soon"), nil)

	e.podGroup("late", 60*time.Second, "Inqueue", func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Status.Phase == schedulingv1beta1.PodGroupInqueue
	})
	if waited := time.Since(created); waited < 5*time.Second {
		t.Errorf("late was enqueued %v after it was created, before its 5 s waiting time", waited)
	}
	if pg := e.podGroup("plain", time.Second, "read", func(*schedulingv1beta1.PodGroup) bool { return true }); pg.Status.Phase != schedulingv1beta1.PodGroupPending {
		t.Errorf("plain, with no waiting time, is %s in a full queue; want Pending", pg.Status.Phase)
	}

	want := `annotation volcano.sh/sla-waiting-time: "soon" is not a duration`
	e.podGroup("bad", 30*time.Second, "condition "+string(sla.Condition), func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, sla.Condition)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "InvalidAnnotation" && strings.HasPrefix(c.Message, want)
	})
	waitEvent(t, e.cs, 30*time.Second, e.ns, "involvedObject.name=bad,involvedObject.kind=PodGroup", "a Warning Event on bad",
		func(ev corev1.Event) bool {
			return ev.Type == corev1.EventTypeWarning && ev.Reason == string(sla.Condition) && strings.HasPrefix(ev.Message, want)
		})
	if pg := e.podGroup("bad", time.Second, "read", func(*schedulingv1beta1.PodGroup) bool { return true }); pg.Status.Phase != schedulingv1beta1.PodGroupPending {
		t.Errorf("bad, whose waiting time is ignored, is %s in a full queue; want Pending", pg.Status.Phase)
	}
}
