package allocate

import (
	"container/heap"
	"sort"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// priorityQueue pops the item that goes first by less. less is asked again at every push
// and pop, so an item pushed back after its plugin state changed (a queue's share, a job's
// readiness) takes its new place.
type priorityQueue[T any] struct{ h items[T] }

func newPriorityQueue[T any](less func(l, r T) bool) *priorityQueue[T] {
	return &priorityQueue[T]{h: items[T]{less: less}}
}

func (q *priorityQueue[T]) Len() int { return len(q.h.list) }
func (q *priorityQueue[T]) Push(x T) { heap.Push(&q.h, x) }
func (q *priorityQueue[T]) Pop() T   { return heap.Pop(&q.h).(T) }

// Peek is the item Pop would return; the queue must not be empty.
func (q *priorityQueue[T]) Peek() T { return q.h.list[0] }

// items implements heap.Interface.
type items[T any] struct {
	list []T
	less func(l, r T) bool
}

func (h *items[T]) Len() int           { return len(h.list) }
func (h *items[T]) Less(i, j int) bool { return h.less(h.list[i], h.list[j]) }
func (h *items[T]) Swap(i, j int)      { h.list[i], h.list[j] = h.list[j], h.list[i] }
func (h *items[T]) Push(x any)         { h.list = append(h.list, x.(T)) }
func (h *items[T]) Pop() any {
	last := h.list[len(h.list)-1]
	var zero T
	h.list[len(h.list)-1] = zero
	h.list = h.list[:len(h.list)-1]
	return last
}

// jobQueue holds one queue's jobs in JobOrderFn order. The jobs not tried yet are sorted
// once: a job's rank follows from its own state (priority, gang readiness, dominant share),
// which changes only when the job itself is tried. Jobs that come back after a turn go into
// a heap, ranked anew. A heap alone would be just as exact, and asks JobOrderFn twice as
// often: with thousands of small jobs the ordering, not the node search, was the cost.
type jobQueue struct {
	untried []*api.JobInfo
	next    int
	back    *priorityQueue[*api.JobInfo]
	less    func(l, r *api.JobInfo) bool
}

func newJobQueue(jobs []*api.JobInfo, less func(l, r *api.JobInfo) bool) *jobQueue {
	sort.Slice(jobs, func(i, j int) bool { return less(jobs[i], jobs[j]) })
	return &jobQueue{untried: jobs, back: newPriorityQueue(less), less: less}
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
