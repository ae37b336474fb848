package main

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// bindWatcher records when each pod was sent for creation and when a watch first showed it
// bound, and when the last pod of each job was sent.
type bindWatcher struct {
	stopCh chan struct{}
	mu     sync.Mutex
	sent   map[string]time.Time
	jobOf  map[string]string    // pod name -> its job (PodGroup) name
	lastOf map[string]time.Time // job name -> when the last create of its pods was answered
	bound  map[string]time.Time
	pods   map[string]*corev1.Pod // the latest of each bound pod, for the placement check
	last   time.Time
}

func watchBinds(ctx context.Context, cs kubernetes.Interface, ns string) (*bindWatcher, error) {
	w := &bindWatcher{stopCh: make(chan struct{}), sent: map[string]time.Time{}, jobOf: map[string]string{}, lastOf: map[string]time.Time{}, bound: map[string]time.Time{}, pods: map[string]*corev1.Pod{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	seen := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.bound[pod.Name]; !ok {
			w.bound[pod.Name], w.last = now, now
		}
		w.pods[pod.Name] = pod
	}
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	})
	if err != nil {
		return nil, err
	}
	factory.Start(w.stopCh)
	factory.WaitForCacheSync(ctx.Done())
	return w, nil
}

func (w *bindWatcher) stop() { close(w.stopCh) }

// created notes that the pod of job is about to be sent for creation.
func (w *bindWatcher) created(name, job string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent[name], w.jobOf[name] = time.Now(), job
}

// stored notes that the API server answered the create of a pod of job: the gang is complete
// once the last one is answered.
func (w *bindWatcher) stored(job string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := time.Now(); now.After(w.lastOf[job]) {
		w.lastOf[job] = now
	}
}

// waitAll waits until pods pods are bound, or no pod was bound for stall; it returns the time
// of the last bind seen.
func (w *bindWatcher) waitAll(ctx context.Context, pods int, stall time.Duration) time.Time {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	progress, count := time.Now(), 0
	for {
		w.mu.Lock()
		n, last := len(w.bound), w.last
		w.mu.Unlock()
		if n >= pods || ctx.Err() != nil || time.Since(progress) > stall {
			return last
		}
		if n > count {
			progress, count = time.Now(), n
		}
		<-tick.C
	}
}

// latencies is every bound pod's time from its create to bound, and from its job's last
// answered create (when the gang was complete) to bound; and the first create.
func (w *bindWatcher) latencies() (first time.Time, fromCreate, fromComplete []time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, sent := range w.sent {
		if first.IsZero() || sent.Before(first) {
			first = sent
		}
		if b, ok := w.bound[name]; ok {
			fromCreate = append(fromCreate, b.Sub(sent))
			fromComplete = append(fromComplete, b.Sub(w.lastOf[w.jobOf[name]]))
		}
	}
	return first, fromCreate, fromComplete
}

func (w *bindWatcher) boundPods() []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(w.pods))
	for _, p := range w.pods {
		out = append(out, p)
	}
	return out
}
