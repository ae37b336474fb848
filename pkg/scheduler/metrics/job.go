package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// jobMetrics are the per-job gauges, with what the e2e ones remember between sessions.
type jobMetrics struct {
	share *prometheus.GaugeVec
	// The e2e job gauges follow upstream's labels. Times of day are Unix seconds, the
	// Prometheus convention for timestamps; the duration is in milliseconds, the unit of every
	// latency metric here.
	e2eDuration, e2eStartTime, e2eLastTime *prometheus.GaugeVec

	mu        sync.Mutex
	published Publisher
	// scheduled holds the jobs of the last report that have been scheduled at least once.
	scheduled map[jobKey]scheduledJob
}

func newJobMetrics() jobMetrics {
	e2e := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(gaugeOpts(name, help), []string{"job_name", "queue", "job_namespace"})
	}
	return jobMetrics{
		share: prometheus.NewGaugeVec(gaugeOpts("job_share",
			"The job's dominant resource share: the largest fraction of any cluster resource it holds"), []string{"job_ns", "job_id"}),
		e2eDuration:  e2e("e2e_job_scheduling_duration", "Milliseconds from the job's creation to the last time this scheduler bound tasks of it"),
		e2eStartTime: e2e("e2e_job_scheduling_start_time", "Unix time in seconds at which this scheduler first bound tasks of the job"),
		e2eLastTime:  e2e("e2e_job_scheduling_last_time", "Unix time in seconds at which this scheduler last bound tasks of the job"),
		scheduled:    map[jobKey]scheduledJob{},
	}
}

func (j *jobMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{j.share, j.e2eDuration, j.e2eStartTime, j.e2eLastTime}
}

// JobFigures is one job of the session as the job metrics show it.
type JobFigures struct {
	Namespace, Name, Queue string
	// Created is the PodGroup's creation time, where the e2e scheduling duration starts.
	Created time.Time
	// Share is the job's dominant resource share.
	Share float64
	// Scheduled: the session handed tasks of the job to the binder.
	Scheduled bool
}

type jobKey struct{ namespace, name string }

// scheduledJob is what the e2e gauges of a job show, remembered between sessions because
// the start time is the first time the job was scheduled in this process.
type scheduledJob struct {
	created, start, last time.Time
}

// ReportJobs sets the job metrics to exactly the given jobs, which should be every job the
// session still schedules, at time now: their shares, and the e2e gauges of the jobs ever
// scheduled. The series of a job left out (finished or deleted) are deleted and its first
// scheduling time forgotten, so neither the series nor this memory grows with old jobs.
func (m *Set) ReportJobs(figures []JobFigures, now time.Time) {
	if m == nil {
		return
	}
	jobs := &m.jobs
	jobs.mu.Lock()
	defer jobs.mu.Unlock()
	jobs.published.Publish(func(r Report) {
		scheduled := make(map[jobKey]scheduledJob, len(jobs.scheduled))
		for _, j := range figures {
			r.Set(jobs.share, j.Share, j.Namespace, j.Name)
			key := jobKey{j.Namespace, j.Name}
			rec, known := jobs.scheduled[key]
			if known && !rec.created.Equal(j.Created) {
				// Deleted and created again between two sessions: a new job under the old name.
				known = false
			}
			switch {
			case j.Scheduled && !known:
				rec = scheduledJob{created: j.Created, start: now, last: now}
			case j.Scheduled:
				rec.last = now
			case !known:
				continue
			}
			scheduled[key] = rec
			// The queue label is the job's queue now: were it moved, the series under the old
			// queue is left out of the report and so deleted.
			r.Set(jobs.e2eDuration, float64(rec.last.Sub(rec.created).Microseconds())/1000, j.Name, j.Queue, j.Namespace)
			r.Set(jobs.e2eStartTime, unixSeconds(rec.start), j.Name, j.Queue, j.Namespace)
			r.Set(jobs.e2eLastTime, unixSeconds(rec.last), j.Name, j.Queue, j.Namespace)
		}
		jobs.scheduled = scheduled
	})
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
