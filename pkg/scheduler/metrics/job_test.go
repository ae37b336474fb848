package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

var jobMetricNames = []string{
	"volcano_job_share",
	"volcano_e2e_job_scheduling_duration", "volcano_e2e_job_scheduling_start_time", "volcano_e2e_job_scheduling_last_time",
}

const jobHelp = `
# HELP volcano_job_share The job's dominant resource share: the largest fraction of any cluster resource it holds
# TYPE volcano_job_share gauge
# HELP volcano_e2e_job_scheduling_duration Milliseconds from the job's creation to the last time this scheduler bound tasks of it
# TYPE volcano_e2e_job_scheduling_duration gauge
# HELP volcano_e2e_job_scheduling_start_time Unix time in seconds at which this scheduler first bound tasks of the job
# TYPE volcano_e2e_job_scheduling_start_time gauge
# HELP volcano_e2e_job_scheduling_last_time Unix time in seconds at which this scheduler last bound tasks of the job
# TYPE volcano_e2e_job_scheduling_last_time gauge
`

// TestJobMetrics follows two jobs through four sessions: the e2e start time is the first
// report that scheduled the job, the last time and duration the latest, and a job left out
// of a report loses its series and is forgotten.
func TestJobMetrics(t *testing.T) {
	m, reg := registered(t)
	created := time.Unix(1000, 0)
	train := func(share float64, scheduled bool) JobFigures {
		return JobFigures{Namespace: "team-a", Name: "train", Queue: "gpu", Created: created, Share: share, Scheduled: scheduled}
	}
	serve := func(share float64, scheduled bool) JobFigures {
		return JobFigures{Namespace: "team-b", Name: "serve", Queue: "default", Created: created, Share: share, Scheduled: scheduled}
	}
	sessions := []struct {
		name string
		now  int64 // Unix seconds
		jobs []JobFigures
		want string
	}{
		{
			name: "train scheduled, serve waiting",
			now:  1010, jobs: []JobFigures{train(0.25, true), serve(0, false)},
			want: `
volcano_job_share{job_id="serve",job_ns="team-b"} 0
volcano_job_share{job_id="train",job_ns="team-a"} 0.25
volcano_e2e_job_scheduling_duration{job_name="train",job_namespace="team-a",queue="gpu"} 10000
volcano_e2e_job_scheduling_start_time{job_name="train",job_namespace="team-a",queue="gpu"} 1010
volcano_e2e_job_scheduling_last_time{job_name="train",job_namespace="team-a",queue="gpu"} 1010
`,
		},
		{
			name: "serve scheduled; train's e2e gauges stay as they were",
			now:  1020, jobs: []JobFigures{train(0.25, false), serve(0.5, true)},
			want: `
volcano_job_share{job_id="serve",job_ns="team-b"} 0.5
volcano_job_share{job_id="train",job_ns="team-a"} 0.25
volcano_e2e_job_scheduling_duration{job_name="serve",job_namespace="team-b",queue="default"} 20000
volcano_e2e_job_scheduling_duration{job_name="train",job_namespace="team-a",queue="gpu"} 10000
volcano_e2e_job_scheduling_start_time{job_name="serve",job_namespace="team-b",queue="default"} 1020
volcano_e2e_job_scheduling_start_time{job_name="train",job_namespace="team-a",queue="gpu"} 1010
volcano_e2e_job_scheduling_last_time{job_name="serve",job_namespace="team-b",queue="default"} 1020
volcano_e2e_job_scheduling_last_time{job_name="train",job_namespace="team-a",queue="gpu"} 1010
`,
		},
		{
			name: "train scheduled again keeps its start; serve finished",
			now:  1030, jobs: []JobFigures{train(0.5, true)},
			want: `
volcano_job_share{job_id="train",job_ns="team-a"} 0.5
volcano_e2e_job_scheduling_duration{job_name="train",job_namespace="team-a",queue="gpu"} 30000
volcano_e2e_job_scheduling_start_time{job_name="train",job_namespace="team-a",queue="gpu"} 1010
volcano_e2e_job_scheduling_last_time{job_name="train",job_namespace="team-a",queue="gpu"} 1030
`,
		},
		{
			name: "serve recreated under the same name starts afresh",
			now:  1040, jobs: []JobFigures{train(0.5, false), serve(0.125, true)},
			want: `
volcano_job_share{job_id="serve",job_ns="team-b"} 0.125
volcano_job_share{job_id="train",job_ns="team-a"} 0.5
volcano_e2e_job_scheduling_duration{job_name="serve",job_namespace="team-b",queue="default"} 40000
volcano_e2e_job_scheduling_duration{job_name="train",job_namespace="team-a",queue="gpu"} 30000
volcano_e2e_job_scheduling_start_time{job_name="serve",job_namespace="team-b",queue="default"} 1040
volcano_e2e_job_scheduling_start_time{job_name="train",job_namespace="team-a",queue="gpu"} 1010
volcano_e2e_job_scheduling_last_time{job_name="serve",job_namespace="team-b",queue="default"} 1040
volcano_e2e_job_scheduling_last_time{job_name="train",job_namespace="team-a",queue="gpu"} 1030
`,
		},
	}
	for _, s := range sessions {
		m.ReportJobs(s.jobs, time.Unix(s.now, 0))
		if err := testutil.GatherAndCompare(reg, strings.NewReader(jobHelp+s.want), jobMetricNames...); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// TestJobMovedToAnotherQueue: the e2e series follow the job's queue label; none is left
// under the old queue.
func TestJobMovedToAnotherQueue(t *testing.T) {
	m, reg := registered(t)
	job := JobFigures{Namespace: "ns", Name: "j", Queue: "old", Created: time.Unix(0, 0), Scheduled: true}
	m.ReportJobs([]JobFigures{job}, time.Unix(5, 0))
	job.Queue, job.Scheduled = "new", false
	m.ReportJobs([]JobFigures{job}, time.Unix(6, 0))
	want := `
# HELP volcano_e2e_job_scheduling_start_time Unix time in seconds at which this scheduler first bound tasks of the job
# TYPE volcano_e2e_job_scheduling_start_time gauge
volcano_e2e_job_scheduling_start_time{job_name="j",job_namespace="ns",queue="new"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_e2e_job_scheduling_start_time"); err != nil {
		t.Error(err)
	}
}

// TestRecreatedJob: a job deleted and created again under the same name between two
// sessions is a new job: its old e2e series go until it is scheduled, from when it starts
// afresh.
func TestRecreatedJob(t *testing.T) {
	m, reg := registered(t)
	job := JobFigures{Namespace: "ns", Name: "j", Queue: "q", Created: time.Unix(0, 0), Scheduled: true}
	m.ReportJobs([]JobFigures{job}, time.Unix(5, 0))
	job.Created, job.Scheduled = time.Unix(10, 0), false
	m.ReportJobs([]JobFigures{job}, time.Unix(15, 0))
	if n, err := testutil.GatherAndCount(reg, "volcano_e2e_job_scheduling_start_time"); err != nil || n != 0 {
		t.Errorf("%d e2e start series for the recreated, unscheduled job (err %v), want 0", n, err)
	}
	job.Scheduled = true
	m.ReportJobs([]JobFigures{job}, time.Unix(20, 0))
	want := `
# HELP volcano_e2e_job_scheduling_duration Milliseconds from the job's creation to the last time this scheduler bound tasks of it
# TYPE volcano_e2e_job_scheduling_duration gauge
volcano_e2e_job_scheduling_duration{job_name="j",job_namespace="ns",queue="q"} 10000
# HELP volcano_e2e_job_scheduling_start_time Unix time in seconds at which this scheduler first bound tasks of the job
# TYPE volcano_e2e_job_scheduling_start_time gauge
volcano_e2e_job_scheduling_start_time{job_name="j",job_namespace="ns",queue="q"} 20
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"volcano_e2e_job_scheduling_duration", "volcano_e2e_job_scheduling_start_time"); err != nil {
		t.Error(err)
	}
}

func TestEmptyJobReportDeletesEverything(t *testing.T) {
	m, reg := registered(t)
	m.ReportJobs([]JobFigures{{Namespace: "ns", Name: "j", Queue: "q", Created: time.Unix(0, 0), Share: 1, Scheduled: true}}, time.Unix(1, 0))
	m.ReportJobs(nil, time.Unix(2, 0))
	if n, err := testutil.GatherAndCount(reg, jobMetricNames...); err != nil || n != 0 {
		t.Errorf("%d job series after an empty report (err %v), want 0", n, err)
	}
}
