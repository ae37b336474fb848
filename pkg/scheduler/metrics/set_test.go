package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// registered is a new Set on a pedantic registry of its own, which checks every series
// against its descriptor when the test scrapes it.
func registered(t *testing.T) (*Set, *prometheus.Registry) {
	t.Helper()
	m, reg := New(), prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	return m, reg
}

// Two Sets share nothing: what one records, the other's registry never shows.
func TestSetsAreIndependent(t *testing.T) {
	a, regA := registered(t)
	_, regB := registered(t)
	a.PodBound(time.Now())
	a.ReportJobs([]JobFigures{{Namespace: "ns", Name: "j", Queue: "q", Share: 0.5}}, time.Now())
	for _, c := range []struct {
		reg  *prometheus.Registry
		want int
	}{{regA, 2}, {regB, 1}} {
		// volcano_scheduled_pods_total always has its one series; only a holds the job's.
		if n, err := testutil.GatherAndCount(c.reg, "volcano_scheduled_pods_total", "volcano_job_share"); err != nil || n != c.want {
			t.Errorf("%d series (err %v), want %d", n, err, c.want)
		}
	}
	if got := testutil.ToFloat64(a.scheduledPods); got != 1 {
		t.Errorf("scheduled pods %v, want 1", got)
	}
}

// A nil Set records nothing and fails nothing: it is what tests and benchmarks that watch
// no metrics hand the scheduler.
func TestNilSetRecordsNothing(t *testing.T) {
	var m *Set
	now := time.Now()
	m.ObserveCycle(now)
	m.ObserveAction("allocate", now)
	m.ObservePlugin("gang", OnSessionOpen, now)
	m.ObserveJobDispatched(now)
	m.CountAttempt(AttemptScheduled)
	m.PodBound(now)
	m.BindFailed()
	m.VictimsChosen(1)
	m.CountPreemptionAttempt()
	m.GangUnready("j", 1)
	m.UnreadyJobs(1)
	m.ReportJobs([]JobFigures{{Name: "j"}}, now)
	m.ReportQueues(nil)
}
