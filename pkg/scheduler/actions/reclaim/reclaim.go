// Package reclaim is the action that gives starving queues their deserved share back, as
// upstream's: queues in queue order, those not overused, take for each starving job's
// pending tasks what the plugins let them (Preemptive) from pods of other queues that are
// reclaimable (spec.reclaimable, true unless set false) and that the plugins' Reclaimable
// allows, such as those of queues above their deserved share. A job's evictions stand only
// when the whole job is then pipelined.
//
// Victim choice per node, and the rule that a task that would not fit evicts nothing, are in
// actions/internal/victims; the reclaimer is bound by a later cycle once its victims are gone.
package reclaim

import (
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/victims"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "reclaim"

// EvictReason is what a victim's Evict event says it was evicted for (upstream's word).
const EvictReason = "reclaim"

type action struct{}

// New is the action.
func New() framework.Action { return action{} }

func (action) Name() string { return Name }

func (action) Execute(ssn *framework.Session) {
	queues, starving := victims.StarvingJobs(ssn)
	for _, queue := range queues {
		if ssn.Overused(queue) {
			klog.V(3).InfoS("Queue is overused; it reclaims nothing", "queue", queue.Name)
			continue
		}
		for _, job := range starving[queue.UID] {
			reclaimFor(ssn, queue, job)
		}
	}
}

// reclaimFor lets the job's pending tasks evict pods of other, reclaimable queues.
func reclaimFor(ssn *framework.Session, queue *api.QueueInfo, job *api.JobInfo) {
	otherReclaimableQueue := func(t *api.TaskInfo) bool {
		j := ssn.Jobs[t.Job]
		if j == nil || j.Queue == queue.UID {
			return false
		}
		q := ssn.Queues[j.Queue]
		return q != nil && reclaimable(q)
	}
	mayReclaim := func(t *api.TaskInfo) error { return ssn.Preemptive(queue, t) }
	victims.ForJob(ssn, job, mayReclaim, otherReclaimableQueue, ssn.Reclaimable, EvictReason)
}

// reclaimable: the queue's spec.reclaimable, true when unset.
func reclaimable(q *api.QueueInfo) bool {
	r := q.Queue.Spec.Reclaimable
	return r == nil || *r
}
