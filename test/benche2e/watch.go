package main

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// bindWatcher records when each pod was sent for creation, when a watch first showed it
// bound and its Scheduled Event, and when the last pod of each job was sent.
type bindWatcher struct {
	stopCh chan struct{}
	mu     sync.Mutex
	sent   map[string]time.Time
	jobOf  map[string]string    // pod name -> its job (PodGroup) name
	lastOf map[string]time.Time // job name -> when the last create of its pods was answered
	bound  map[string]time.Time
	// scheduled is when the pod's Scheduled Event was first seen.
	scheduled map[string]time.Time
	pods      map[string]*corev1.Pod // the latest of each bound pod, for the placement check
	last      time.Time
}

func watchBinds(ctx context.Context, cs kubernetes.Interface, ns string) (*bindWatcher, error) {
	w := &bindWatcher{stopCh: make(chan struct{}), sent: map[string]time.Time{}, jobOf: map[string]string{}, lastOf: map[string]time.Time{}, bound: map[string]time.Time{}, scheduled: map[string]time.Time{}, pods: map[string]*corev1.Pod{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	// Started with the pods' informer by watchPods.
	_, err := factory.Core().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		e, ok := obj.(*corev1.Event)
		if !ok || e.Reason != "Scheduled" || e.InvolvedObject.Kind != "Pod" {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.scheduled[e.InvolvedObject.Name]; !ok {
			w.scheduled[e.InvolvedObject.Name] = now
		}
	}})
	if err != nil {
		return nil, err
	}
	seen := func(pod *corev1.Pod, now time.Time) {
		if pod.Spec.NodeName == "" {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.bound[pod.Name]; !ok {
			w.bound[pod.Name], w.last = now, now
		}
		w.pods[pod.Name] = pod
	}
	if err := watchPods(ctx, factory, w.stopCh, seen, nil); err != nil {
		return nil, err
	}
	return w, nil
}

// watchPods starts the factory's pod informer, calling seen on each pod added or changed and
// gone (unless nil) on each deleted, with the time the event was seen, until stopCh closes; it
// returns once the cache has synced.
func watchPods(ctx context.Context, factory informers.SharedInformerFactory, stopCh chan struct{}, seen, gone func(*corev1.Pod, time.Time)) error {
	call := func(f func(*corev1.Pod, time.Time), obj any) {
		if last, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = last.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok && f != nil {
			f(pod, time.Now())
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(seen, obj) },
		UpdateFunc: func(_, obj any) { call(seen, obj) },
		DeleteFunc: func(obj any) { call(gone, obj) },
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(handler); err != nil {
		return err
	}
	factory.Start(stopCh)
	factory.WaitForCacheSync(ctx.Done())
	return nil
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

// eventLags is, for each bound pod with its Scheduled Event seen, the time from the bind to
// the Event; and how many bound pods had none.
func (w *bindWatcher) eventLags() (lags []time.Duration, missing int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, bound := range w.bound {
		if at, ok := w.scheduled[name]; ok {
			lags = append(lags, max(0, at.Sub(bound)))
		} else {
			missing++
		}
	}
	return lags, missing
}

// firstBind is when the first pod was seen bound; zero before.
func (w *bindWatcher) firstBind() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for _, b := range w.bound {
		if first.IsZero() || b.Before(first) {
			first = b
		}
	}
	return first
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

// ledgerWatcher keeps a gpuLedger from one watch of every pod of a scheduler name: one
// informer, so its events come in the API server's order, and every GPU a bind or a
// deletion touches is checked as it is seen. A pod holds its GPUs until the API server has
// deleted it (a terminating pod still runs), as the scheduler keeps a victim's slices booked
// until its pod is gone (pkg/scheduler/plugins/deviceshare/future.go).
type ledgerWatcher struct {
	stopCh chan struct{}
	mu     sync.Mutex
	ledger *gpuLedger
	freed  map[string]time.Time // GPU -> when a pod last left it
	// handover is, for each pod bound on a GPU some pod had left, the time from the latest
	// such leave to its bind, by namespace: for a preemptor, from its last victim gone to
	// bound.
	handover map[string][]time.Duration
	released map[string]int // namespace -> bound pods deleted
}

// watchLedger starts the watch with the GPUs of nodes as the capacity.
func watchLedger(ctx context.Context, cs kubernetes.Interface, schedulerName string, nodes []corev1.Node) (*ledgerWatcher, error) {
	w := &ledgerWatcher{stopCh: make(chan struct{}), ledger: newGPULedger(), freed: map[string]time.Time{},
		handover: map[string][]time.Duration{}, released: map[string]int{}}
	for i := range nodes {
		if err := w.ledger.addNode(&nodes[i]); err != nil {
			return nil, err
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", schedulerName).String()
	}))
	hold := func(pod *corev1.Pod, now time.Time) {
		w.mu.Lock()
		defer w.mu.Unlock()
		var last time.Time
		for _, gpu := range w.ledger.hold(pod) {
			if t := w.freed[gpu]; t.After(last) {
				last = t
			}
		}
		if !last.IsZero() {
			w.handover[pod.Namespace] = append(w.handover[pod.Namespace], now.Sub(last))
		}
	}
	release := func(pod *corev1.Pod, now time.Time) {
		w.mu.Lock()
		defer w.mu.Unlock()
		gpus := w.ledger.release(pod.UID)
		for _, gpu := range gpus {
			w.freed[gpu] = now
		}
		if len(gpus) > 0 {
			w.released[pod.Namespace]++
		}
	}
	if err := watchPods(ctx, factory, w.stopCh, hold, release); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *ledgerWatcher) stop() { close(w.stopCh) }

// ledgerSummary is what a ledgerWatcher saw so far.
type ledgerSummary struct {
	over       []string // each GPU ever over capacity, sorted
	unassigned int
	released   map[string]int
	handover   map[string][]time.Duration
}

func (w *ledgerWatcher) summary() ledgerSummary {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := ledgerSummary{unassigned: len(w.ledger.unassigned), released: maps.Clone(w.released), handover: map[string][]time.Duration{}}
	for _, what := range w.ledger.over {
		s.over = append(s.over, what)
	}
	sort.Strings(s.over)
	for ns, d := range w.handover {
		s.handover[ns] = slices.Clone(d)
	}
	return s
}
