// Package backfill is the action that places best-effort pods, those that request nothing
// but a pod slot. allocate leaves them out; they fit wherever a node has a free
// pod slot and passes the predicates. Each placement is its own statement, bound at once
// when the job is ready.
//
// Left out: upstream also takes back best-effort tasks that an earlier action pipelined and
// places them again. Nothing here pipelines a best-effort task (allocate skips them, and
// preempt and reclaim evict only for tasks that request something: evictsearch.PendingTasks),
// and the framework has no way to undo another action's placement.
package backfill

import (
	"sort"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/nodesearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "backfill"

// Options bound how far a node search goes: the same flags bound allocate's search.
type Options = nodesearch.Options

type action struct{ search *nodesearch.NodeSearch }

// New is the action with the default search bounds.
func New() framework.Action { return NewWithOptions(nodesearch.DefaultOptions()) }

// NewWithOptions is the action with the search bounds the command-line flags give (the
// same flags bound allocate's search).
func NewWithOptions(opts Options) framework.Action {
	return &action{search: nodesearch.New(opts)}
}

func (a *action) Name() string { return Name }

func (a *action) Execute(ssn *framework.Session) {
	search := a.search.Open(ssn, nodesearch.PredicateErrorCacheEnabled(ssn, Name))
	for _, task := range candidates(ssn) {
		if ssn.Stopping() {
			return
		}
		job := ssn.JobFor(task)
		if err := ssn.PrePredicate(task); err != nil {
			klog.V(3).InfoS("Pre-predicate failed", "pod", klog.KRef(task.Namespace, task.Name), "err", err)
			job.NodesFitErrors[task.UID] = search.FailAllNodes(err)
			ssn.Metrics().CountAttempt(metrics.AttemptUnschedulable)
			continue
		}
		node, fitErrors := search.Find(task)
		if node == nil {
			job.NodesFitErrors[task.UID] = fitErrors
			ssn.Metrics().CountAttempt(metrics.AttemptUnschedulable)
			continue
		}
		stmt := ssn.NewStatement()
		if err := nodesearch.Place(stmt, task, node); err != nil {
			klog.ErrorS(err, "A plugin refused the placement", "pod", klog.KRef(task.Namespace, task.Name), "node", node.Name)
			job.NodesFitErrors[task.UID] = nodesearch.PlacementFailure(node, err)
			ssn.Metrics().CountAttempt(metrics.AttemptError)
			continue
		}
		ssn.Metrics().CountAttempt(metrics.AttemptScheduled)
		// A pending best-effort task already counts towards the gang, so placing one never
		// makes a job ready: a job that is not ready lacks other tasks, and its best-effort
		// ones wait for them (the undone placement still says where the pod would go).
		if ssn.JobReady(job) {
			stmt.Commit()
		} else {
			stmt.Discard()
		}
	}
}

// candidates are the pending, ungated best-effort tasks of admitted, valid jobs whose queue
// exists, in queue, then job, then task order.
func candidates(ssn *framework.Session) []*api.TaskInfo {
	var tasks []*api.TaskInfo
	for _, job := range ssn.Jobs {
		if job.IsPending() {
			continue
		}
		first := len(tasks)
		for _, t := range job.TaskStatusIndex[api.Pending] {
			if t.BestEffort && !t.SchGated {
				tasks = append(tasks, t)
			}
		}
		if len(tasks) == first {
			continue
		}
		if _, ok := ssn.Queues[job.Queue]; !ok {
			klog.V(3).InfoS("Queue of the job not found; not backfilling it", "podGroup", klog.KRef(job.Namespace, job.Name),
				"queue", job.Queue)
			tasks = tasks[:first]
			continue
		}
		if res := ssn.JobValid(job); res != nil {
			klog.V(4).InfoS("Job is not valid; not backfilling it", "podGroup", klog.KRef(job.Namespace, job.Name),
				"reason", res.Reason, "message", res.Message)
			tasks = tasks[:first]
		}
	}
	sort.Slice(tasks, func(i, j int) bool {
		l, r := tasks[i], tasks[j]
		lj, rj := ssn.JobFor(l), ssn.JobFor(r)
		if lj.Queue != rj.Queue {
			return ssn.QueueOrderFn(ssn.Queues[lj.Queue], ssn.Queues[rj.Queue])
		}
		if lj != rj {
			return ssn.JobOrderFn(lj, rj)
		}
		return ssn.TaskOrderFn(l, r)
	})
	return tasks
}
