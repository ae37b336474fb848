package main

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// loop feeds object keys to a controller's sync function. sync reads the object's current
// state and makes the cluster match it, so a key queued many times is synced once, and a
// failed sync is retried with backoff until it succeeds or the object is gone.
type loop struct {
	name  string
	queue workqueue.TypedRateLimitingInterface[string]
	sync  func(ctx context.Context, key string) error
}

func newLoop(name string, sync func(ctx context.Context, key string) error) *loop {
	return &loop{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		sync: sync,
	}
}

// enqueue queues obj's own key ("namespace/name", or "name" for cluster objects).
func (l *loop) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	l.queue.Add(key)
}

// enqueueOwner queues the key of obj's controller when that controller is of the given
// group and kind; objects controlled by anything else are ignored.
func (l *loop) enqueueOwner(obj any, group, kind string) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	meta, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(meta)
	if ref == nil || ref.Kind != kind {
		return
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != group {
		return
	}
	l.queue.Add(meta.GetNamespace() + "/" + ref.Name)
}

// run syncs keys with the given number of workers until ctx ends.
func (l *loop) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	l.queue.ShutDown()
	wg.Wait()
}

func (l *loop) next(ctx context.Context) bool {
	key, shutdown := l.queue.Get()
	if shutdown {
		return false
	}
	defer l.queue.Done(key)
	if err := l.sync(ctx, key); err != nil {
		klog.ErrorS(err, "Sync failed, will retry", "controller", l.name, "key", key)
		l.queue.AddRateLimited(key)
		return true
	}
	l.queue.Forget(key)
	return true
}
