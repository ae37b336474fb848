// Package priorityqueue is the heap the actions walk queues and jobs with.
package priorityqueue

import "container/heap"

// Queue pops the item that goes first by less. less is asked again at every push
// and pop, so an item pushed back after its plugin state changed (a queue's share, a job's
// readiness) takes its new place.
type Queue[T any] struct{ h items[T] }

// New is an empty queue ordered by less.
func New[T any](less func(l, r T) bool) *Queue[T] {
	return &Queue[T]{h: items[T]{less: less}}
}

func (q *Queue[T]) Len() int { return len(q.h.list) }
func (q *Queue[T]) Push(x T) { heap.Push(&q.h, x) }
func (q *Queue[T]) Pop() T   { return heap.Pop(&q.h).(T) }

// Peek is the item Pop would return; the queue must not be empty.
func (q *Queue[T]) Peek() T { return q.h.list[0] }

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
