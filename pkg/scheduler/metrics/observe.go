package metrics

import "time"

// Results of ScheduleAttempts, upstream's label values.
const (
	// AttemptScheduled: a task got a node.
	AttemptScheduled = "scheduled"
	// AttemptUnschedulable: no node could take the task.
	AttemptUnschedulable = "unschedulable"
	// AttemptError: a node was found but a plugin refused the placement.
	AttemptError = "error"
)

// attempts are ScheduleAttempts' series, resolved once: a count is taken per task decision.
var attempts = map[string]interface{ Inc() }{
	AttemptScheduled:     ScheduleAttempts.WithLabelValues(AttemptScheduled),
	AttemptUnschedulable: ScheduleAttempts.WithLabelValues(AttemptUnschedulable),
	AttemptError:         ScheduleAttempts.WithLabelValues(AttemptError),
}

// CountAttempt counts one decision of an action that places tasks: result is AttemptScheduled,
// AttemptUnschedulable or AttemptError.
func CountAttempt(result string) { attempts[result].Inc() }

// ObservePlugin records how long a plugin's OnSessionOpen or OnSessionClose (point) took.
func ObservePlugin(plugin, point string, start time.Time) {
	PluginLatency.WithLabelValues(plugin, point).Observe(Since(start))
}

// ObserveJobDispatched records a job's scheduling latency when its gang is dispatched: from
// its PodGroup's creation until the session that made it ready.
func ObserveJobDispatched(created time.Time) {
	E2EJobSchedulingLatency.Observe(Since(created))
}
