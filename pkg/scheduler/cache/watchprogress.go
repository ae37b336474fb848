package cache

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// watchProgress tells how far the pod informer has brought the cache, in the API server's
// resourceVersions, so that a new leader can wait until its cache holds every pod the API
// server held at a version it read (CatchUp).
//
// The informer's reflector is handed lists, watch events and bookmarks, in the order of
// their versions; an event or a bookmark at version v says the watch has sent everything up
// to v. What the reflector is handed reaches the cache's handler later, through the
// informer's queue, in the order it was handed (client-go's in-order informers, which
// newCache requires). So the cache holds everything up to v once the reflector has been
// handed v or later and the handler has been given the last object event handed before.
// After a list nothing says when the handler has been given all of it (the informer hands on
// only the objects that changed): the first list counts once the handler has synced, and a
// later one (a watch the API server could not resume) once an event after it has been given.
//
// resourceVersions are documented as opaque, but the API server's are etcd revisions:
// integers that every write to any object raises. resourceversion.CompareResourceVersion
// orders them so, and refuses anything else; a version it refuses is reported, and the
// cache is then never taken as caught up, since scheduling without knowing could book a
// GPU twice.
type watchProgress struct {
	mu sync.Mutex
	// received is the version of what the reflector was last handed: a list, an event or a
	// bookmark.
	received string
	// lastEvent is the version of the last object event handed since the latest list; ""
	// while none has been.
	lastEvent string
	// lists counts the lists handed.
	lists int
	// given is the highest version among the objects the handler has been given.
	given string
	// initialSynced reports that the handler has been given the whole first list.
	initialSynced func() bool
}

// caughtUp reports whether the cache holds everything the API server held at version rv.
func (p *watchProgress) caughtUp(rv string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.received == "" {
		return false, nil
	}
	if c, err := resourceversion.CompareResourceVersion(p.received, rv); err != nil || c < 0 {
		return false, err
	}
	if p.lastEvent == "" {
		return p.lists == 1 && p.initialSynced != nil && p.initialSynced(), nil
	}
	if p.given == "" {
		return false, nil
	}
	c, err := resourceversion.CompareResourceVersion(p.given, p.lastEvent)
	return err == nil && c >= 0, err
}

// at is the version of what the reflector was last handed, for logs.
func (p *watchProgress) at() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.received
}

// informer builds the pod informer (informers.NewInformerFunc) over a list and watch that
// record what they hand its reflector. It is the default pod informer but for that: all pods,
// indexed by namespace.
func (p *watchProgress) informer(client kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
			if err == nil && list.Continue == "" { // the last page of the list
				p.listed(list.ResourceVersion)
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
			w, err := client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return p.watched(w, opts.SendInitialEvents != nil && *opts.SendInitialEvents), nil
		},
	}
	return toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, client),
		&corev1.Pod{}, resync, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
}

// listed records a list handed at version rv.
func (p *watchProgress) listed(rv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.received, p.lastEvent = rv, ""
	p.lists++
}

// handed records an event handed to the reflector. A watch that streams a list first
// (initialEvents: client-go's watch-list) hands its objects as that list, which the bookmark
// marked as the end of the initial events closes.
func (p *watchProgress) handed(e apiwatch.Event, initialEvents *bool) {
	m, err := meta.Accessor(e.Object)
	if err != nil || e.Type == apiwatch.Error {
		return
	}
	rv := m.GetResourceVersion()
	switch {
	case *initialEvents && e.Type == apiwatch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true":
		*initialEvents = false
		p.listed(rv)
	case *initialEvents:
	case e.Type == apiwatch.Bookmark:
		p.mu.Lock()
		p.received = rv
		p.mu.Unlock()
	default:
		p.mu.Lock()
		p.received, p.lastEvent = rv, rv
		p.mu.Unlock()
	}
}

// gave records an object the informer gave the cache's handler: added, updated or deleted
// (a deleted pod carries the version of its deletion).
func (p *watchProgress) gave(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	rv := m.GetResourceVersion()
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, err := resourceversion.CompareResourceVersion(rv, p.given); p.given == "" || (err == nil && c > 0) {
		p.given = rv
	}
}

// observed wraps the handler the cache registers on the pod informer so that each object
// given is recorded, whether the handler takes it or not.
func (p *watchProgress) observed(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return observedHandler{h, p}
}

type observedHandler struct {
	handler  toolscache.ResourceEventHandler
	progress *watchProgress
}

func (o observedHandler) OnAdd(obj any, initial bool) {
	o.handler.OnAdd(obj, initial)
	o.progress.gave(obj)
}
func (o observedHandler) OnUpdate(old, cur any) { o.handler.OnUpdate(old, cur); o.progress.gave(cur) }
func (o observedHandler) OnDelete(obj any)      { o.handler.OnDelete(obj); o.progress.gave(obj) }

// watched passes the API server's events on to the reflector, recording each once it has
// been handed.
func (p *watchProgress) watched(w apiwatch.Interface, initialEvents bool) apiwatch.Interface {
	r := &recordedWatch{Interface: w, result: make(chan apiwatch.Event), stopped: make(chan struct{})}
	go func() {
		defer close(r.result)
		for e := range w.ResultChan() {
			select {
			case r.result <- e:
				p.handed(e, &initialEvents)
			case <-r.stopped:
				return
			}
		}
	}()
	return r
}

// recordedWatch is the API server's watch with its events passed on by watched.
type recordedWatch struct {
	apiwatch.Interface
	result   chan apiwatch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func (r *recordedWatch) ResultChan() <-chan apiwatch.Event { return r.result }

func (r *recordedWatch) Stop() {
	r.stopOnce.Do(func() {
		close(r.stopped)
		r.Interface.Stop()
	})
}
