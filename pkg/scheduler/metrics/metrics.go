// Package metrics holds the scheduler's Prometheus metrics under upstream Volcano's names
// (subsystem "volcano"), so dashboards built for the stock vc-scheduler keep working, plus
// the counters upstream lacks (volcano#4930: no throughput metric).
package metrics

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics/legacyregistry"
	// Registers client-go's request, rate-limiter and workqueue metrics (rest_client_requests_total
	// by code, method and host, ...) with the legacy registry, so API traffic can be watched.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	"k8s.io/klog/v2"
)

const subsystem = "volcano"

// Label values of PluginLatency's OnSession label.
const (
	OnSessionOpen  = "OnSessionOpen"
	OnSessionClose = "OnSessionClose"
)

var (
	// E2ESchedulingLatency: one whole scheduling cycle.
	E2ESchedulingLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "e2e_scheduling_latency_milliseconds",
		Help:    "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
		Buckets: prometheus.ExponentialBuckets(5, 2, 15),
	})
	// E2EJobSchedulingLatency: from a job's first attempt until it was dispatched.
	E2EJobSchedulingLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "e2e_job_scheduling_latency_milliseconds",
		Help:    "E2e job scheduling latency in milliseconds",
		Buckets: prometheus.ExponentialBuckets(32, 2, 10),
	})
	PluginLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "plugin_scheduling_latency_milliseconds",
		Help:    "Plugin scheduling latency in milliseconds",
		Buckets: prometheus.ExponentialBuckets(5, 2, 10),
	}, []string{"plugin", "OnSession"})
	ActionLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "action_scheduling_latency_milliseconds",
		Help:    "Action scheduling latency in milliseconds",
		Buckets: prometheus.ExponentialBuckets(5, 2, 10),
	}, []string{"action"})
	// TaskSchedulingLatency: pod creation to bind.
	TaskSchedulingLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: subsystem, Name: "task_scheduling_latency_milliseconds",
		Help:    "Task scheduling latency in milliseconds",
		Buckets: prometheus.ExponentialBuckets(5, 2, 10),
	})
	UnscheduleTaskCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "unschedule_task_count",
		Help: "Number of tasks could not be scheduled",
	}, []string{"job_id"})
	UnscheduleJobCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "unschedule_job_count",
		Help: "Number of jobs could not be scheduled",
	})
	JobRetryCounts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "job_retry_counts",
		Help: "Number of retry counts for one job",
	}, []string{"job_id"})
	// ScheduleAttempts counts scheduling cycles by result (declared but never incremented
	// upstream; we count "scheduled" and "unschedulable" per task decision).
	ScheduleAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "schedule_attempts_total",
		Help: "Number of attempts to schedule pods, by the result",
	}, []string{"result"})
	// ScheduledPods counts pods bound by this scheduler: the throughput users asked for.
	ScheduledPods = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "scheduled_pods_total",
		Help: "Number of pods this scheduler bound to a node",
	})
	// PreemptionVictims is how many victims the last preemption or reclaim attempt chose.
	PreemptionVictims = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "pod_preemption_victims",
		Help: "Number of victims chosen by the last preemption or reclaim attempt",
	})
	// PreemptionAttempts counts preemption and reclaim attempts, one per preemptor and node.
	PreemptionAttempts = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "total_preemption_attempts",
		Help: "Number of preemption and reclaim attempts since the scheduler started",
	})
	// BindFailures counts failed binds (each is rolled back and retried).
	BindFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: subsystem, Name: "bind_failures_total",
		Help: "Number of bind requests the API server refused",
	})
)

// Registry holds the scheduler's metrics.
var Registry = prometheus.NewRegistry()

// The Go runtime and process collectors are not registered here: the component-base legacy
// registry, which Handler merges in, already carries them, and one family gathered from two
// registries makes the whole scrape fail.
func init() {
	Registry.MustRegister(E2ESchedulingLatency, E2EJobSchedulingLatency, PluginLatency, ActionLatency,
		TaskSchedulingLatency, UnscheduleTaskCount, UnscheduleJobCount, JobRetryCounts, ScheduleAttempts,
		ScheduledPods, BindFailures, PreemptionVictims, PreemptionAttempts)
}

// Since is the time from start in milliseconds, the unit of every latency metric.
func Since(start time.Time) float64 { return float64(time.Since(start).Microseconds()) / 1000 }

// Gatherer is everything /metrics serves: the scheduler's metrics merged with the
// component-base legacy registry (Go runtime, process, and client-go's rest_client_* and
// workqueue_* metrics), as upstream's /metrics does.
func Gatherer() prometheus.Gatherer {
	return prometheus.Gatherers{Registry, legacyregistry.DefaultGatherer}
}

// Handler serves Gatherer. A collector that fails is logged and left out; the rest of the
// scrape is still served, so one bad series never blinds Prometheus to all the others.
func Handler() http.Handler {
	return promhttp.HandlerFor(Gatherer(), promhttp.HandlerOpts{
		ErrorLog:      promLogger{},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// promLogger sends promhttp's errors to klog.
type promLogger struct{}

func (promLogger) Println(v ...any) { klog.ErrorS(nil, "Serving /metrics", "error", fmt.Sprint(v...)) }
