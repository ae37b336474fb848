// Package gangpreempt is Volcano v1.15's gang-aware preemption: a starving job of a queue
// takes room from lower-priority jobs of the same queue a victim job at a time, a job's
// surplus over its minMember (and each role's over its minTaskMember) first and a whole job
// only when no surplus makes room (unless the allowWholeBundle argument is false), evicting
// only when its whole gang then has a place (actions/internal/gangevict decides how).
//
// The plugins' Preemptable, less gang's rule that keeps every victim job at its minimum (the
// bundles keep it here), says which pods may go: under the chart's configuration, priority
// (a lower-priority job) and conformance (not a critical pod). Unlike preempt, it has no
// second turn in which a job evicts its own lower-priority pods.
package gangpreempt

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/gangevict"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "gangpreempt"

// New is the action.
func New() framework.Action { return gangevict.NewAction(Name, sameQueue) }

// sameQueue lets a job take from the jobs of its own queue whose priority is below its own,
// as upstream's action decides whatever the plugins say.
func sameQueue(ssn *framework.Session, queue *api.QueueInfo) (gangevict.Scope, bool) {
	lower := func(preemptor *api.JobInfo, t *api.TaskInfo) bool {
		j := ssn.Jobs[t.Job]
		return j != nil && j.Queue == queue.UID && j.Priority < preemptor.Priority
	}
	return gangevict.Scope{Candidates: lower, Allow: ssn.BundlePreemptable}, true
}
