package allocate

import (
	"sort"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/priorityqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// jobQueue holds one queue's jobs in JobOrderFn order. The jobs not tried yet are sorted
// once: a job's rank follows from its own state (priority, gang readiness, dominant share),
// which changes only when the job itself is tried. Jobs that come back after a turn go into
// a heap, ranked anew. A heap alone would be just as exact, and asks JobOrderFn twice as
// often: with thousands of small jobs the ordering, not the node search, was the cost.
type jobQueue struct {
	untried []*api.JobInfo
	next    int
	back    *priorityqueue.Queue[*api.JobInfo]
	less    func(l, r *api.JobInfo) bool
}

func newJobQueue(jobs []*api.JobInfo, less func(l, r *api.JobInfo) bool) *jobQueue {
	sort.Slice(jobs, func(i, j int) bool { return less(jobs[i], jobs[j]) })
	return &jobQueue{untried: jobs, back: priorityqueue.New(less), less: less}
}

func (q *jobQueue) Len() int { return len(q.untried) - q.next + q.back.Len() }

// Push returns a job after its turn.
func (q *jobQueue) Push(job *api.JobInfo) { q.back.Push(job) }

// Pop takes the job that goes first; the queue must not be empty.
func (q *jobQueue) Pop() *api.JobInfo {
	if q.next < len(q.untried) && (q.back.Len() == 0 || !q.less(q.back.Peek(), q.untried[q.next])) {
		job := q.untried[q.next]
		q.untried[q.next] = nil
		q.next++
		return job
	}
	return q.back.Pop()
}
