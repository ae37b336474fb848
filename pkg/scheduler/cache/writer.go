package cache

import (
	"context"
	"sync"

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
	queue   workqueue.TypedInterface[writeKey]
}

func newStatusWriter() *statusWriter {
	return &statusWriter{
		pending: map[writeKey]func(context.Context) error{},
		queue:   workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[writeKey]{Name: "status"}),
	}
}

// enqueue schedules write for the object, replacing one not yet started.
func (w *statusWriter) enqueue(key writeKey, write func(context.Context) error) {
	w.mu.Lock()
	w.pending[key] = write
	w.mu.Unlock()
	w.queue.Add(key)
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
	if err := write(ctx); err != nil {
		klog.ErrorS(err, "Status write failed; the next cycle sends it again if still needed",
			"resource", key.resource, "object", klog.KRef(key.namespace, key.name))
	}
	return true
}

// shutDownWithDrain waits for the writes already queued, then stops the workers.
func (w *statusWriter) shutDownWithDrain() { w.queue.ShutDownWithDrain() }
