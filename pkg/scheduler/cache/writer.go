package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// writeKey names the object a status write goes to.
type writeKey struct {
	resource, namespace, name string
}

// statusWriter runs status writes off the scheduling loop. Writes are keyed by object and
// only the latest for each is kept: a backlog never sends a stale status after a newer one,
// and never sends one object's status twice for one change.
//
// A failed write is logged and dropped, not retried: every status the cache writes is
// recomputed from the cluster each cycle, so the next cycle sends it again if still needed.
type statusWriter struct {
	mu      sync.Mutex
	pending map[writeKey]func(context.Context) error
	queue   workqueue.TypedDelayingInterface[writeKey]
	// handingBack: the cache's Stop ran out of time; writes not started are dropped (the next
	// leader writes the status again) and counted in handedBack.
	handingBack atomic.Bool
	handedBack  atomic.Int64
}

func newStatusWriter() *statusWriter {
	return &statusWriter{
		pending: map[writeKey]func(context.Context) error{},
		queue:   workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[writeKey]{Name: "status"}),
	}
}

// enqueue schedules write for the object, replacing one not yet started.
func (w *statusWriter) enqueue(key writeKey, write func(context.Context) error) {
	w.enqueueAfter(key, write, 0)
}

// enqueueAfter is enqueue for a write that may wait: it is sent after delay, or sooner, with
// whatever is latest for the object then, when another write to the object is enqueued
// without one. Changes that come in the meantime are sent in one write.
func (w *statusWriter) enqueueAfter(key writeKey, write func(context.Context) error, delay time.Duration) {
	w.mu.Lock()
	w.pending[key] = write
	w.mu.Unlock()
	w.queue.AddAfter(key, delay)
}

// processNext runs one write; false once the writer is shut down.
func (w *statusWriter) processNext(ctx context.Context) bool {
	key, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)
	w.mu.Lock()
	write := w.pending[key]
	delete(w.pending, key)
	w.mu.Unlock()
	if write == nil {
		return true
	}
	if w.handingBack.Load() {
		w.handedBack.Add(1)
		return true
	}
	if err := write(ctx); err != nil {
		klog.ErrorS(err, "Status write failed; the next cycle sends it again if still needed",
			"resource", key.resource, "object", klog.KRef(key.namespace, key.name))
	}
	return true
}

// shutDownWithDrain waits for the writes already queued, then stops the workers. Writes still
// waiting out a delay are dropped: they carry PodGroup statuses, which the next leader
// recomputes from the pods in its first cycle.
func (w *statusWriter) shutDownWithDrain() { w.queue.ShutDownWithDrain() }
