package metrics

import "time"

// Results of CountAttempt, upstream's label values of volcano_schedule_attempts_total.
const (
	// AttemptScheduled: a task got a node.
	AttemptScheduled = "scheduled"
	// AttemptUnschedulable: no node could take the task.
	AttemptUnschedulable = "unschedulable"
	// AttemptError: a node was found but a plugin refused the placement.
	AttemptError = "error"
)

// ObserveCycle records how long a whole scheduling cycle that began at start took.
func (m *Set) ObserveCycle(start time.Time) {
	if m != nil {
		m.e2eSchedulingLatency.Observe(since(start))
	}
}

// ObserveAction records how long one action of a cycle, begun at start, took.
func (m *Set) ObserveAction(action string, start time.Time) {
	if m != nil {
		m.actionLatency.WithLabelValues(action).Observe(since(start))
	}
}

// ObservePlugin records how long a plugin's OnSessionOpen or OnSessionClose (point) took.
func (m *Set) ObservePlugin(plugin, point string, start time.Time) {
	if m != nil {
		m.pluginLatency.WithLabelValues(plugin, point).Observe(since(start))
	}
}

// ObserveJobDispatched records a job's scheduling latency when its gang is dispatched: from
// its PodGroup's creation until the session that made it ready.
func (m *Set) ObserveJobDispatched(created time.Time) {
	if m != nil {
		m.e2eJobSchedulingLatency.Observe(since(created))
	}
}

// CountAttempt counts one decision of an action that places tasks: result is AttemptScheduled,
// AttemptUnschedulable or AttemptError.
func (m *Set) CountAttempt(result string) {
	if m != nil {
		m.attempts[result].Inc()
	}
}

// PodBound counts a pod the binder bound, created at created.
func (m *Set) PodBound(created time.Time) {
	if m != nil {
		m.scheduledPods.Inc()
		m.taskSchedulingLatency.Observe(since(created))
	}
}

// BindFailed counts a bind the API server refused.
func (m *Set) BindFailed() {
	if m != nil {
		m.bindFailures.Inc()
	}
}

// VictimsChosen records how many victims a preemption or reclaim attempt chose on a node.
func (m *Set) VictimsChosen(n int) {
	if m != nil {
		m.preemptionVictims.Set(float64(n))
	}
}

// Consolidated counts a GPU the consolidate action freed by moving pods.
func (m *Set) Consolidated(pods int) {
	if m != nil {
		m.consolidationMoves.Add(float64(pods))
		m.consolidationFreed.Inc()
	}
}

// CountPreemptionAttempt counts one preemption or reclaim attempt of a preemptor on a node.
func (m *Set) CountPreemptionAttempt() {
	if m != nil {
		m.preemptionAttempts.Inc()
	}
}

// GangUnready counts a session close that left the job (by its PodGroup's name, as
// upstream) short of its gang, by unready tasks.
func (m *Set) GangUnready(job string, unready int32) {
	if m != nil {
		m.jobRetryCounts.WithLabelValues(job).Inc()
		m.unscheduleTaskCount.WithLabelValues(job).Set(float64(unready))
	}
}

// UnreadyJobs records how many jobs the last session close left short of their gang.
func (m *Set) UnreadyJobs(n int) {
	if m != nil {
		m.unscheduleJobCount.Set(float64(n))
	}
}
