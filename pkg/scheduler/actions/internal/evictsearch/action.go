package evictsearch

import (
	"slices"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/priorityqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Rules are what an eviction action (preempt, reclaim) decides its own way; the rest of the
// action is NewAction's.
type Rules struct {
	// Scope is what the starving jobs of queue may evict. It is asked at the queue's turn, so
	// it sees the evictions of the queues before it; ok false: they evict nothing this cycle.
	Scope func(ssn *framework.Session, queue *api.QueueInfo) (scope Scope, ok bool)
	// Then, when set, is a second turn, once every job has had its first, for each job still
	// starving, in the same order; reason is the action's name, as Search takes it.
	Then func(ssn *framework.Session, job *api.JobInfo, reason string)
}

// Scope is what a starving job of one queue may evict: pods of other jobs that Candidates
// accepts and Choose allows.
type Scope struct {
	// MayEvict, when set, is asked first for each task; its refusal ends the job's turn.
	MayEvict func(*api.TaskInfo) error
	// Candidates accepts the pods the job may take from, among those that may be victims at
	// all (running or bound, asking for something, not volcano.sh/preemptable: "false").
	Candidates func(*api.TaskInfo) bool
	// Choose is the plugins' say among the candidates on a node, and Together on which of
	// those may go together.
	Choose   Chooser
	Together Together
}

// NewAction is the eviction action that rules describe, under name. The name is also what
// a victim's Evict event says it was evicted for, as upstream's actions each give their own.
func NewAction(name string, rules Rules) framework.Action {
	return action{name: name, rules: rules}
}

type action struct {
	name  string
	rules Rules
}

func (a action) Name() string { return a.name }

// Execute gives every starving job its turn (forJob), queues in queue order and each queue's
// jobs in job order, then Then's turns.
func (a action) Execute(ssn *framework.Session) {
	queues, starving := StarvingJobs(ssn)
	for _, queue := range queues {
		scope, ok := a.rules.Scope(ssn, queue)
		if !ok {
			continue
		}
		for _, job := range starving[queue.UID] {
			if ssn.Stopping() {
				return
			}
			forJob(ssn, job, scope, a.name)
		}
	}
	if a.rules.Then == nil {
		return
	}
	for _, queue := range queues {
		for _, job := range starving[queue.UID] {
			if ssn.Stopping() {
				return
			}
			if ssn.JobStarving(job) {
				a.rules.Then(ssn, job, a.name)
			}
		}
	}
}

// StarvingJobs are the admitted, valid, starving jobs with pending tasks, by queue; queues
// in queue order, each queue's jobs in job order.
func StarvingJobs(ssn *framework.Session) ([]*api.QueueInfo, map[api.QueueID][]*api.JobInfo) {
	byQueue := map[api.QueueID][]*api.JobInfo{}
	order := priorityqueue.New(ssn.QueueOrderFn)
	for _, job := range ssn.Jobs {
		if job.IsPending() || len(job.TaskStatusIndex[api.Pending]) == 0 {
			continue
		}
		if res := ssn.JobValid(job); res != nil {
			continue
		}
		queue := ssn.Queues[job.Queue]
		if queue == nil || !ssn.JobStarving(job) {
			continue
		}
		if _, ok := byQueue[queue.UID]; !ok {
			order.Push(queue)
		}
		byQueue[queue.UID] = append(byQueue[queue.UID], job)
	}
	var queues []*api.QueueInfo
	for order.Len() > 0 {
		q := order.Pop()
		queues = append(queues, q)
		jobs := byQueue[q.UID]
		slices.SortStableFunc(jobs, compareBy(ssn.JobOrderFn))
	}
	return queues, byQueue
}
