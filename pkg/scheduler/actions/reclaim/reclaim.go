// Package reclaim is the action that gives starving queues their deserved share back, as
// upstream's: queues in queue order, those not overused, take for each starving job's
// pending tasks what the plugins let them (Preemptive) from pods of other queues that are
// reclaimable (spec.reclaimable, true unless set false) and that the plugins' Reclaimable
// allows, such as those of queues above their deserved share. A job's evictions stand only
// when the whole job is then pipelined.
//
// Victim choice per node, and the rule that a task that would not fit evicts nothing, are in
// actions/internal/victims; the reclaimer is bound by a later cycle once its victims are gone.
//
// Volcano v1.15's gangreclaim runs this action under that name, as gangpreempt runs preempt
// and with the same differences (see package preempt); here it is gang's Reclaimable that
// keeps victim gangs at their minimum.
package reclaim

import (
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/victims"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "reclaim"

// GangName is Volcano v1.15's name for its gang-aware reclaim, which runs this action.
const GangName = "gangreclaim"

// action is the action under one of its names. The name is also what a victim's Evict event
// says it was evicted for, as upstream's reclaim and gangreclaim each give their own.
type action struct{ name string }

// New is the action under Name.
func New() framework.Action { return action{Name} }

// NewGang is the action under GangName.
func NewGang() framework.Action { return action{GangName} }

func (a action) Name() string { return a.name }

func (a action) Execute(ssn *framework.Session) {
	queues, starving := victims.StarvingJobs(ssn)
	for _, queue := range queues {
		if ssn.Overused(queue) {
			klog.V(3).InfoS("Queue is overused; it reclaims nothing", "queue", queue.Name)
			continue
		}
		for _, job := range starving[queue.UID] {
			a.reclaimFor(ssn, queue, job)
		}
	}
}

// reclaimFor lets the job's pending tasks evict pods of other, reclaimable queues.
func (a action) reclaimFor(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo) {
	otherReclaimableQueue := func(t *api.TaskInfo) bool {
		j := ssn.Jobs[t.Job]
		if j == nil || j.Queue == queue.UID {
			return false
		}
		q := ssn.Queues[j.Queue]
		return q != nil && reclaimable(q)
	}
	mayReclaim := func(t *api.TaskInfo) error { return ssn.Preemptive(queue, t) }
	victims.ForJob(ssn, job, mayReclaim, otherReclaimableQueue, ssn.Reclaimable, a.name)
}

// reclaimable: the queue's spec.reclaimable, true when unset.
func reclaimable(q *api.QueueInfo) bool {
	r := q.Queue.Spec.Reclaimable
	return r == nil || *r
}
