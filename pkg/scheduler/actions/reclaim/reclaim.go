// Package reclaim is the action that gives starving queues their deserved share back, as
// upstream's: queues in queue order, those not overused, take for each starving job's
// pending tasks what the plugins let them (Preemptive) from pods of other queues that are
// reclaimable (spec.reclaimable, true unless set false) and that the plugins' Reclaimable
// allows, such as those of queues above their deserved share. A job's evictions stand only
// when the whole job is then pipelined.
//
// The turn each starving job gets, victim choice per node, and the rule that a task that
// would not fit evicts nothing, are in actions/internal/evictsearch; this package says what a
// job may evict. The reclaimer is bound by a later cycle once its victims are gone.
// gangreclaim (Volcano v1.15's) shares its queue rules (QueueRules) and chooses its victims a
// victim job at a time instead.
package reclaim

import (
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "reclaim"

// New is the action.
func New() framework.Action { return evictsearch.NewAction(Name, rules) }

// rules: a starving job takes from other queues only, in a single turn.
var rules = evictsearch.Rules{Scope: otherQueues}

// otherQueues lets the jobs of a queue that is not overused evict the pods of other,
// reclaimable queues that the plugins' Reclaimable allows, for the tasks the plugins'
// Preemptive lets the queue take resources back for.
func otherQueues(ssn *framework.Session, queue *api.QueueInfo) (evictsearch.Scope, bool) {
	mayReclaim, ofReclaimableQueue, ok := QueueRules(ssn, queue)
	if !ok {
		return evictsearch.Scope{}, false
	}
	return evictsearch.Scope{MayEvict: mayReclaim, Candidates: ofReclaimableQueue, Choose: ssn.Reclaimable, Together: ssn.ReclaimTogether}, true
}

// QueueRules are reclaim's rules on queues, which gangreclaim shares: a queue that is
// overused reclaims nothing (ok false); it may take back for the tasks the plugins'
// Preemptive allows (mayReclaim: nil, or why not), from pods of other queues that are
// reclaimable (fromQueue).
func QueueRules(ssn *framework.Session, queue *api.QueueInfo) (mayReclaim func(*api.TaskInfo) error, fromQueue func(*api.TaskInfo) bool, ok bool) {
	if ssn.Overused(queue) {
		klog.V(3).InfoS("Queue is overused; it reclaims nothing", "queue", queue.Name)
		return nil, nil, false
	}
	fromQueue = func(t *api.TaskInfo) bool {
		j := ssn.Jobs[t.Job]
		if j == nil || j.Queue == queue.UID {
			return false
		}
		q := ssn.Queues[j.Queue]
		return q != nil && reclaimable(q)
	}
	mayReclaim = func(t *api.TaskInfo) error { return ssn.Preemptive(queue, t) }
	return mayReclaim, fromQueue, true
}

// reclaimable: the queue's spec.reclaimable, true when unset.
func reclaimable(q *api.QueueInfo) bool {
	r := q.Queue.Spec.Reclaimable
	return r == nil || *r
}
