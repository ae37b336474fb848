package drf

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
)

// e2eGauges reads the e2e gauges of job ns/<name> (queue "default") from reg: start and last
// time in Unix seconds, duration in milliseconds; found is false when the job has none.
func e2eGauges(t *testing.T, reg prometheus.Gatherer, name string) (start, last, duration float64, found bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"job_name": name, "job_namespace": "ns", "queue": "default"}
	values := map[string]float64{}
	for _, f := range families {
	series:
		for _, m := range f.Metric {
			if len(m.Label) != len(want) {
				continue
			}
			for _, l := range m.Label {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			values[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	if len(values) == 0 {
		return 0, 0, 0, false
	}
	if len(values) != 3 {
		t.Fatalf("job %s has e2e gauges %v, want all three", name, values)
	}
	return values["volcano_e2e_job_scheduling_start_time"], values["volcano_e2e_job_scheduling_last_time"],
		values["volcano_e2e_job_scheduling_duration"], true
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// What becomes of a placement made by allocate.
type outcome int

const (
	commit outcome = iota
	discard
	leave // neither committed nor discarded: still Allocated when the session closes
)

// allocate places the job's task on n0, then commits, discards or leaves the placement.
func allocate(t *testing.T, ssn *framework.Session, job, task string, then outcome) {
	t.Helper()
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(ssn.Jobs[api.JobID("ns/"+job)].Tasks[api.TaskID(task)], ssn.Nodes["n0"]); err != nil {
		t.Fatal(err)
	}
	switch then {
	case commit:
		stmt.Commit()
	case discard:
		stmt.Discard()
	}
}

// TestJobShareMetric: volcano_job_share shows each job's share at the close of the session,
// committed placements included; finished and deleted jobs lose their series.
func TestJobShareMetric(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	ssn := frameworktest.OpenRecording(t, m, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
	allocate(t, ssn, "idle", "idle-0", commit) // 3 of 8 cpu
	framework.CloseSession(ssn)
	want := `
# HELP volcano_job_share The job's dominant resource share: the largest fraction of any cluster resource it holds
# TYPE volcano_job_share gauge
volcano_job_share{job_id="cpu-heavy",job_ns="ns"} 0.375
volcano_job_share{job_id="idle",job_ns="ns"} 0.375
volcano_job_share{job_id="memory-heavy",job_ns="ns"} 0.25
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_job_share"); err != nil {
		t.Error(err)
	}

	// memory-heavy is deleted and cpu-heavy has completed.
	jobs := sessionJobs()
	jobs[0].PodGroup.Status.Phase = schedulingv1beta1.PodGroupCompleted
	framework.CloseSession(frameworktest.OpenRecording(t, m, onTwoNodes(jobs[0], jobs[2]), "allocate", builders, drfOnly))
	want = `
# HELP volcano_job_share The job's dominant resource share: the largest fraction of any cluster resource it holds
# TYPE volcano_job_share gauge
volcano_job_share{job_id="idle",job_ns="ns"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_job_share"); err != nil {
		t.Errorf("after jobs finished and went: %v", err)
	}
}

// TestE2EJobSchedulingMetrics: only a job whose tasks reached the binder gets the e2e
// gauges; the start time stays the first such session's, the last time and the duration
// (from the PodGroup's creation) follow the latest.
func TestE2EJobSchedulingMetrics(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	created := float64(3) // newJob("idle", 3, ...)

	// Placed and discarded, then placed and never committed: not scheduled.
	ssn := frameworktest.OpenRecording(t, m, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
	allocate(t, ssn, "idle", "idle-0", discard)
	allocate(t, ssn, "idle", "idle-0", leave)
	framework.CloseSession(ssn)
	for _, name := range []string{"idle", "cpu-heavy", "memory-heavy"} {
		if _, _, _, found := e2eGauges(t, reg, name); found {
			t.Errorf("%s has e2e gauges without any task reaching the binder", name)
		}
	}

	before := unixSeconds(time.Now())
	ssn = frameworktest.OpenRecording(t, m, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
	allocate(t, ssn, "idle", "idle-0", commit)
	framework.CloseSession(ssn)
	after := unixSeconds(time.Now())
	firstStart, last, duration, found := e2eGauges(t, reg, "idle")
	if !found {
		t.Fatal("idle has no e2e gauges after its task was bound")
	}
	if firstStart < before || firstStart > after || last != firstStart {
		t.Errorf("start %v, last %v; want both the close time, within [%v, %v]", firstStart, last, before, after)
	}
	if want := (last - created) * 1000; duration < want-1 || duration > want+1 {
		t.Errorf("duration %v ms, want %v (last - creation)", duration, want)
	}

	// Scheduled again later: the start stays.
	before = unixSeconds(time.Now())
	ssn = frameworktest.OpenRecording(t, m, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
	allocate(t, ssn, "idle", "idle-0", commit)
	framework.CloseSession(ssn)
	start, last, _, _ := e2eGauges(t, reg, "idle")
	if start != firstStart || last < before {
		t.Errorf("second scheduling: start %v, last %v; want start %v and last at or after %v", start, last, firstStart, before)
	}

	// The job is deleted: its e2e series go.
	framework.CloseSession(frameworktest.OpenRecording(t, m, onTwoNodes(sessionJobs()[:2]...), "allocate", builders, drfOnly))
	if _, _, _, found := e2eGauges(t, reg, "idle"); found {
		t.Error("a deleted job keeps its e2e gauges")
	}
}
