package main

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// binderWorkers send Bindings at once: as many as vc-scheduler's bind workers (its default),
// enough that the API server, not the binder, is the limit.
const binderWorkers = 128

// runBinder is the benchmark's baseline, the least a scheduler can do: it binds every pending
// pod of its scheduler name to the next node with the bench label, in turn, with one Binding
// and nothing else (no placement, no status, no events). It runs until ctx ends.
func runBinder(ctx context.Context, cs kubernetes.Interface, schedulerName string) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true"})
	if err != nil {
		return fmt.Errorf("binder: list nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("binder: no node has the label %s=true", benchNodeLabel)
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer queue.ShutDown()
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.AndSelectors(fields.OneTermEqualSelector("spec.schedulerName", schedulerName),
			fields.OneTermEqualSelector("spec.nodeName", "")).String()
	}))
	_, err = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { queue.Add(cache.MetaObjectToName(obj.(*corev1.Pod))) },
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	klog.InfoS(binderReady, "nodes", len(nodes.Items))
	var next atomic.Uint64
	for range binderWorkers {
		go func() {
			for {
				name, shutdown := queue.Get()
				if shutdown {
					return
				}
				node := nodes.Items[next.Add(1)%uint64(len(nodes.Items))].Name
				binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				err := cs.CoreV1().Pods(name.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
				// A conflict is a pod bound already, NotFound one deleted: nothing to retry.
				if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
					klog.ErrorS(err, "Bind failed; retrying", "pod", name)
					queue.AddRateLimited(name)
				} else {
					queue.Forget(name)
				}
				queue.Done(name)
			}
		}()
	}
	<-ctx.Done()
	return nil
}
