// Package metrics holds the scheduler's Prometheus metrics under upstream Volcano's names
// (subsystem "volcano"), so dashboards built for the stock vc-scheduler keep working, plus
// the counters upstream lacks (volcano#4930: no throughput metric).
//
// Nothing here is process-wide: New builds one Set, cmd/vc-scheduler registers its
// Collectors on the registry /metrics serves and hands it to what writes it (the cache, the
// scheduler loop, and through the session the plugins and actions). A test builds a Set of
// its own and scrapes it.
package metrics

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

const subsystem = "volcano"

// Label values of the plugin latency's OnSession label.
const (
	OnSessionOpen  = "OnSessionOpen"
	OnSessionClose = "OnSessionClose"
)

// Set is one scheduler's metrics. Its methods are safe for concurrent use (the binder
// writes from its workers), and a nil *Set records nothing, for callers that watch no
// metrics: most tests and the benchmarks.
type Set struct {
	// e2eSchedulingLatency: one whole scheduling cycle.
	e2eSchedulingLatency prometheus.Histogram
	// e2eJobSchedulingLatency: from a job's creation until it was dispatched.
	e2eJobSchedulingLatency prometheus.Histogram
	pluginLatency           *prometheus.HistogramVec
	actionLatency           *prometheus.HistogramVec
	// taskSchedulingLatency: pod creation to bind.
	taskSchedulingLatency prometheus.Histogram
	unscheduleTaskCount   *prometheus.GaugeVec
	unscheduleJobCount    prometheus.Gauge
	jobRetryCounts        *prometheus.CounterVec
	// scheduleAttempts counts task decisions by result (declared but never incremented
	// upstream). attempts are its series, resolved once: a count is taken per decision.
	scheduleAttempts *prometheus.CounterVec
	attempts         map[string]prometheus.Counter
	// scheduledPods counts pods bound by this scheduler: the throughput users asked for.
	scheduledPods prometheus.Counter
	// preemptionVictims is how many victims the last preemption or reclaim attempt chose.
	preemptionVictims prometheus.Gauge
	// preemptionAttempts counts preemption and reclaim attempts, one per preemptor and node.
	preemptionAttempts prometheus.Counter
	// bindFailures counts failed binds (each is rolled back and retried).
	bindFailures prometheus.Counter
	// consolidationMoves and consolidationFreed count the pods the consolidate action moved
	// and the devices (GPUs) it freed by moving them; ours, upstream has no such action.
	consolidationMoves, consolidationFreed prometheus.Counter

	jobs   jobMetrics
	queues queueMetrics
}

// New builds a Set, registered nowhere.
func New() *Set {
	m := &Set{
		e2eSchedulingLatency: prometheus.NewHistogram(histogramOpts("e2e_scheduling_latency_milliseconds",
			"E2e scheduling latency in milliseconds (scheduling algorithm + binding)", prometheus.ExponentialBuckets(5, 2, 15))),
		e2eJobSchedulingLatency: prometheus.NewHistogram(histogramOpts("e2e_job_scheduling_latency_milliseconds",
			"E2e job scheduling latency in milliseconds", prometheus.ExponentialBuckets(32, 2, 10))),
		pluginLatency: prometheus.NewHistogramVec(histogramOpts("plugin_scheduling_latency_milliseconds",
			"Plugin scheduling latency in milliseconds", prometheus.ExponentialBuckets(5, 2, 10)), []string{"plugin", "OnSession"}),
		actionLatency: prometheus.NewHistogramVec(histogramOpts("action_scheduling_latency_milliseconds",
			"Action scheduling latency in milliseconds", prometheus.ExponentialBuckets(5, 2, 10)), []string{"action"}),
		taskSchedulingLatency: prometheus.NewHistogram(histogramOpts("task_scheduling_latency_milliseconds",
			"Task scheduling latency in milliseconds", prometheus.ExponentialBuckets(5, 2, 10))),
		unscheduleTaskCount: prometheus.NewGaugeVec(gaugeOpts("unschedule_task_count", "Number of tasks could not be scheduled"), []string{"job_id"}),
		unscheduleJobCount:  prometheus.NewGauge(gaugeOpts("unschedule_job_count", "Number of jobs could not be scheduled")),
		jobRetryCounts:      prometheus.NewCounterVec(counterOpts("job_retry_counts", "Number of retry counts for one job"), []string{"job_id"}),
		scheduleAttempts: prometheus.NewCounterVec(counterOpts("schedule_attempts_total", "Number of attempts to schedule pods, by the result"),
			[]string{"result"}),
		scheduledPods:      prometheus.NewCounter(counterOpts("scheduled_pods_total", "Number of pods this scheduler bound to a node")),
		preemptionVictims:  prometheus.NewGauge(gaugeOpts("pod_preemption_victims", "Number of victims chosen by the last preemption or reclaim attempt")),
		preemptionAttempts: prometheus.NewCounter(counterOpts("total_preemption_attempts", "Number of preemption and reclaim attempts since the scheduler started")),
		bindFailures:       prometheus.NewCounter(counterOpts("bind_failures_total", "Number of bind requests the API server refused")),
		consolidationMoves: prometheus.NewCounter(counterOpts("consolidation_moved_pods_total",
			"Number of running pods the consolidate action evicted to free a GPU for a waiting job")),
		consolidationFreed: prometheus.NewCounter(counterOpts("consolidation_freed_gpus_total",
			"Number of GPUs the consolidate action freed for a waiting pod by moving others")),
		jobs:   newJobMetrics(),
		queues: newQueueMetrics(),
	}
	m.attempts = map[string]prometheus.Counter{}
	for _, result := range []string{AttemptScheduled, AttemptUnschedulable, AttemptError} {
		m.attempts[result] = m.scheduleAttempts.WithLabelValues(result)
	}
	return m
}

// gaugeOpts, counterOpts and histogramOpts name a metric in the subsystem.
func gaugeOpts(name, help string) prometheus.GaugeOpts {
	return prometheus.GaugeOpts{Subsystem: subsystem, Name: name, Help: help}
}

func counterOpts(name, help string) prometheus.CounterOpts {
	return prometheus.CounterOpts{Subsystem: subsystem, Name: name, Help: help}
}

func histogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}
}

// Collectors are every metric of the Set, for the registry that serves them. The Go
// runtime and process collectors are not among them: the component-base legacy registry,
// which Handler merges in, already carries them, and one family gathered from two
// registries makes the whole scrape fail.
func (m *Set) Collectors() []prometheus.Collector {
	c := []prometheus.Collector{m.e2eSchedulingLatency, m.e2eJobSchedulingLatency, m.pluginLatency, m.actionLatency,
		m.taskSchedulingLatency, m.unscheduleTaskCount, m.unscheduleJobCount, m.jobRetryCounts, m.scheduleAttempts,
		m.scheduledPods, m.bindFailures, m.preemptionVictims, m.preemptionAttempts, m.consolidationMoves, m.consolidationFreed}
	c = append(c, m.jobs.collectors()...)
	return append(c, m.queues.collectors()...)
}

// since is the time from start in milliseconds, the unit of every latency metric.
func since(start time.Time) float64 { return float64(time.Since(start).Microseconds()) / 1000 }

// gatherer is everything /metrics serves: the scheduler's registry merged with the
// component-base legacy registry (Go runtime, process, and client-go's rest_client_* and
// workqueue_* metrics), as upstream's /metrics does.
func gatherer(scheduler prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.Gatherers{scheduler, legacyregistry.DefaultGatherer}
}

// Handler serves the scheduler's registry with the legacy registry's metrics. A collector
// that fails is logged and left out; the rest of the scrape is still served, so one bad
// series never blinds Prometheus to all the others.
func Handler(scheduler prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(gatherer(scheduler), promhttp.HandlerOpts{
		ErrorLog:      promLogger{},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// promLogger sends promhttp's errors to klog.
type promLogger struct{}

func (promLogger) Println(v ...any) { klog.ErrorS(nil, "Serving /metrics", "error", fmt.Sprint(v...)) }
