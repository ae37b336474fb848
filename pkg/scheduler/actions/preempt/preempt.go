// Package preempt is the action that evicts lower-priority pods of a queue so that its
// starving jobs fit, as upstream's: for every admitted, valid job that the plugins call
// starving, its pending tasks in task order each look for a node where evicting pods of
// other jobs of the same queue (those the plugins' Preemptable allows) makes room; the
// job's evictions and pipelined tasks form one statement, committed only when the job is
// then pipelined (its whole gang has a place), discarded otherwise. A second pass lets a
// starving job's tasks preempt lower-priority tasks of the same job.
//
// A preemptor is only pipelined: it is bound by a later cycle's allocate, once its victims
// are gone. Victim choice per node, and the rule that a task that would not fit evicts
// nothing, are in actions/internal/victims.
//
// Volcano v1.15 adds gangpreempt, which chooses victims a job at a time. A configuration
// written for it runs this action under that name: this one too evicts only for a gang that
// then fits whole, and gang's Preemptable, where it is on, keeps every victim gang at its
// minimum. Unlike upstream's, it never evicts a victim gang whole, and gangpreempt's
// arguments (maxDomains, allowWholeBundle) have no effect here.
package preempt

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/victims"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "preempt"

// GangName is Volcano v1.15's name for its gang-aware preemption, which runs this action.
const GangName = "gangpreempt"

// action is the action under one of its names. The name is also what a victim's Evict event
// says it was evicted for, as upstream's preempt and gangpreempt each give their own.
type action struct{ name string }

// New is the action under Name.
func New() framework.Action { return action{Name} }

// NewGang is the action under GangName.
func NewGang() framework.Action { return action{GangName} }

func (a action) Name() string { return a.name }

func (a action) Execute(ssn *framework.Session) {
	queues, starving := victims.StarvingJobs(ssn)
	for _, queue := range queues {
		for _, job := range starving[queue.UID] {
			a.betweenJobs(ssn, queue, job)
		}
	}
	for _, queue := range queues {
		for _, job := range starving[queue.UID] {
			if ssn.JobStarving(job) {
				a.withinJob(ssn, job)
			}
		}
	}
}

// betweenJobs lets the job's pending tasks evict pods of other jobs of its queue.
func (a action) betweenJobs(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo) {
	otherJobOfQueue := func(t *api.TaskInfo) bool {
		j := ssn.Jobs[t.Job]
		return t.Job != job.UID && j != nil && j.Queue == queue.UID
	}
	victims.ForJob(ssn, job, nil, otherJobOfQueue, ssn.Preemptable, a.name)
}

// withinJob lets the job's pending tasks evict its own lower-priority running tasks, each
// eviction committed at once, as upstream's.
func (a action) withinJob(ssn *framework.Session, job *api.JobInfo) {
	sameJob := func(t *api.TaskInfo) bool { return t.Job == job.UID }
	for _, task := range victims.PendingTasks(ssn, job) {
		stmt := ssn.NewStatement()
		// Why it found no room is betweenJobs' record to give (victims.ForJob): reasons about
		// the job's own pods alone would hide it.
		placed, _ := victims.Search(ssn, stmt, task, sameJob, ssn.Preemptable, a.name)
		stmt.Commit()
		if !placed {
			return
		}
	}
}
