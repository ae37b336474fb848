// Package preempt is the action that evicts lower-priority pods of a queue so that its
// starving jobs fit, as upstream's: for every admitted, valid job that the plugins call
// starving, its pending tasks in task order each look for a node where evicting pods of
// other jobs of the same queue (those the plugins' Preemptable allows) makes room; the
// job's evictions and pipelined tasks form one statement, committed only when the job is
// then pipelined (its whole gang has a place), discarded otherwise. A second pass lets a
// starving job's tasks preempt lower-priority tasks of the same job.
//
// A preemptor is only pipelined: it is bound by a later cycle's allocate, once its victims
// are gone. The turn each starving job gets, victim choice per node, and the rule that a task
// that would not fit evicts nothing, are in actions/internal/evictsearch; this package says
// what a job may evict. gangpreempt (Volcano v1.15's) chooses its victims a victim job at a
// time instead.
package preempt

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "preempt"

// New is the action.
func New() framework.Action { return evictsearch.NewAction(Name, rules) }

// rules: a starving job first evicts pods of other jobs of its queue, then, if still
// starving, its own lower-priority pods.
var rules = evictsearch.Rules{Scope: betweenJobs, Then: withinJob}

// betweenJobs lets a job evict the pods of the other jobs of its queue that the plugins'
// Preemptable allows.
func betweenJobs(ssn *framework.Session, queue *api.QueueInfo) (evictsearch.Scope, bool) {
	ofQueue := func(t *api.TaskInfo) bool {
		j := ssn.Jobs[t.Job]
		return j != nil && j.Queue == queue.UID
	}
	return evictsearch.Scope{Candidates: ofQueue, Choose: ssn.Preemptable, Together: ssn.PreemptTogether}, true
}

// withinJob lets the job's pending tasks evict its own lower-priority running tasks, each
// eviction committed at once, as upstream's.
func withinJob(ssn *framework.Session, job *api.JobInfo, reason string) {
	sameJob := func(t *api.TaskInfo) bool { return t.Job == job.UID }
	for _, task := range evictsearch.PendingTasks(ssn, job) {
		stmt := ssn.NewStatement()
		// Why it found no room is the first turn's record to give (evictsearch's): reasons
		// about the job's own pods alone would hide it.
		placed, _ := evictsearch.Search(ssn, stmt, task, sameJob, ssn.Preemptable, ssn.PreemptTogether, reason)
		stmt.Commit()
		if !placed {
			return
		}
	}
}
