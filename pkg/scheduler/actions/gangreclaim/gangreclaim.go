// Package gangreclaim is Volcano v1.15's gang-aware reclaim: a starving job of a queue that
// is not overused takes room back from other, reclaimable queues a victim job at a time, a
// job's surplus over its minMember (and each role's over its minTaskMember) first and a
// whole job only when no surplus makes room (unless the allowWholeBundle argument is false),
// evicting only when its whole gang then has a place (actions/internal/gangevict decides
// how).
//
// The queues are reclaim's (reclaim.QueueRules: the plugins' Preemptive, such as proportion's
// deserved share, for the reclaiming queue; spec.reclaimable for the others), the victims'
// queues are taken in the session's victim queue order, and the plugins' Reclaimable, less
// gang's rule that keeps every victim job at its minimum, says which pods may go. So a
// single-pod job, a whole bundle of one, can be reclaimed under the chart's configuration,
// which classic reclaim never does there.
package gangreclaim

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/gangevict"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "gangreclaim"

// New is the action.
func New() framework.Action { return gangevict.NewAction(Name, otherQueues) }

// otherQueues lets the jobs of a queue take from other queues as reclaim's rules allow.
func otherQueues(ssn *framework.Session, queue *api.QueueInfo) (gangevict.Scope, bool) {
	mayReclaim, fromQueue, ok := reclaim.QueueRules(ssn, queue)
	if !ok {
		return gangevict.Scope{}, false
	}
	candidates := func(_ *api.JobInfo, t *api.TaskInfo) bool { return fromQueue(t) }
	return gangevict.Scope{MayEvict: mayReclaim, Candidates: candidates, Allow: ssn.BundleReclaimable}, true
}
