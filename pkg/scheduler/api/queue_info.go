package api

import schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

// QueueInfo is one Queue.
type QueueInfo struct {
	UID      QueueID
	Name     string
	Weight   int32
	Priority int32
	Parent   QueueID
	// Queue is the informer's object: shared, never modified.
	Queue *schedulingv1beta1.Queue
}

// NewQueueInfo wraps a Queue. An unset weight counts as 1 (the admission default).
func NewQueueInfo(q *schedulingv1beta1.Queue) *QueueInfo {
	w := q.Spec.Weight
	if w <= 0 {
		w = 1
	}
	return &QueueInfo{
		UID: QueueID(q.Name), Name: q.Name, Weight: w, Priority: q.Spec.Priority,
		Parent: QueueID(q.Spec.Parent), Queue: q,
	}
}

// IsOpen: the queue accepts work. As upstream, a queue whose state the queue controller has
// not set yet is not open.
func (q *QueueInfo) IsOpen() bool {
	return q.Queue.Status.State == schedulingv1beta1.QueueStateOpen
}

// IsClosed: the queue is Closed or Closing, so it takes no new job whatever plugins run; the
// jobs it has are left alone.
func (q *QueueInfo) IsClosed() bool {
	s := q.Queue.Status.State
	return s == schedulingv1beta1.QueueStateClosed || s == schedulingv1beta1.QueueStateClosing
}

// Clone shares the Queue object (read-only) and copies the rest.
func (q *QueueInfo) Clone() *QueueInfo {
	c := *q
	return &c
}
