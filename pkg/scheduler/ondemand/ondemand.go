// Package ondemand is a plugin's watch on one kind of namespaced object (ResourceQuotas for
// resourcequota, PodDisruptionBudgets for pdb). It is the plugin's framework.Component: the
// informer joins the scheduler cache's informer factory, and is started the first time a
// session asks for the objects, so that a scheduler whose configuration does not name the
// plugin lists and watches nothing of that kind, and needs no permission to.
package ondemand

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Watch is the watch on objects of type T, which informer gets from the factory.
type Watch[T any] struct {
	informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer

	// ctx and factory are Start's.
	ctx     context.Context
	factory informers.SharedInformerFactory

	once    sync.Once
	indexer toolscache.Indexer
	synced  toolscache.InformerSynced
}

var _ framework.Component = (*Watch[any])(nil)

// New starts nothing yet: see Start.
func New[T any](informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer) *Watch[T] {
	return &Watch[T]{informer: informer}
}

// Start keeps the cache's informer factory, which InNamespace adds the informer to, and ctx,
// which ends its watch.
func (w *Watch[T]) Start(ctx context.Context, cache framework.ComponentCache) {
	w.ctx, w.factory = ctx, cache.Informers()
}

// Configure does nothing: the watch starts when a session first asks.
func (*Watch[T]) Configure(context.Context, *conf.SchedulerConfiguration) {}

// Collectors are none: the watch keeps no metrics.
func (*Watch[T]) Collectors() []prometheus.Collector { return nil }

// InNamespace is the namespace's objects, and false while the watch has not yet listed them
// (the first call starts it). Sessions call it one at a time.
func (w *Watch[T]) InNamespace(namespace string) ([]T, bool) {
	w.once.Do(func() {
		inf := w.informer(w.factory)
		w.indexer, w.synced = inf.GetIndexer(), inf.HasSynced
		w.factory.Start(w.ctx.Done())
	})
	if !w.synced() {
		return nil, false
	}
	objs, err := w.indexer.ByIndex(toolscache.NamespaceIndex, namespace)
	if err != nil {
		// The factory's informers all have the namespace index: unreachable.
		klog.ErrorS(err, "Listing a namespace's objects failed", "namespace", namespace)
		return nil, false
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, true
}
