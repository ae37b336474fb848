// Package cache keeps the scheduler's view of the cluster up to date from informers (pods,
// nodes, PodGroups, Queues, PriorityClasses), hands each session a private snapshot of it, and
// carries the session's decisions back to the API server: binds, PodGroup and Queue status,
// pod conditions and events. It implements framework.Cache.
//
// One mutex guards the cluster maps; Snapshot copies them under it. Tasks, jobs and nodes are
// added, moved and dropped under it by bookkeeping.go only, whose functions the informer
// handlers (event_handlers.go) call with what an event shows, Bind and Evict with what a
// session committed, and the bind and evict workers (binder.go, evictor.go) with what the API
// server answered; deriver.go derives the nodes' device state. API requests are made by worker
// goroutines, never under the mutex.
package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

var _ framework.Cache = (*SchedulerCache)(nil)

// SchedulerCache is the scheduler's cluster state. Build it with New, start it with Run.
type SchedulerCache struct {
	kube kubernetes.Interface
	// meta lists the bound pods CatchUp waits for, metadata only (Options.Metadata).
	meta metadata.Interface
	vc   versioned.Interface

	schedulerNames sets.Set[string]
	defaultQueue   string
	nodeSelector   nodeSelector
	bindWorkers    int
	statusWorkers  int

	// kubeInformers holds the pod, node and PriorityClass informers, and those components add
	// (Informers): Run starts them all and WaitForCacheSync waits for them all.
	kubeInformers informers.SharedInformerFactory
	vcInformers   vcinformers.SharedInformerFactory
	// synced reports, per registered handler, that it has seen the informer's initial list.
	synced []toolscache.InformerSynced

	recorder record.EventRecorder
	// metrics records the binders' outcomes; nil records nothing.
	metrics *metrics.Set
	clock   clock.PassiveClock
	// stopWorkers cancels the context of the bind, resync and status workers' API calls.
	stopWorkers context.CancelFunc
	// handingBack: Stop's time is up; binds and evictions not started are not sent, and
	// handedBack counts them.
	handingBack atomic.Bool
	handedBack  atomic.Int64
	// bindsCutOff counts the Bindings Stop cancelled in flight (bound or not, unknown here).
	bindsCutOff atomic.Int64
	// changes counts what the cache has been told, each counted once applied (Changes).
	changes atomic.Uint64

	// binds holds pods whose placement Bind accepted, for the bind workers.
	binds workqueue.TypedInterface[podRef]
	// evictions holds pods whose eviction Evict accepted, for the evict workers.
	evictions workqueue.TypedInterface[podRef]
	// resyncs holds pods whose bind failed, to re-read from the API server with backoff.
	resyncs workqueue.TypedRateLimitingInterface[podRef]
	// writes coalesces status writes per object for the status workers.
	writes *statusWriter
	// conditions remembers the PodScheduled condition last sent to each pod, podGroupStatuses
	// the status last sent to each PodGroup, jobEvents the event last emitted on each.
	conditions       *lastSent[podCondition]
	podGroupStatuses *lastSent[sentStatus]
	// statusWriteDelay is StatusWriteDelay; tests shorten it.
	statusWriteDelay time.Duration
	jobEvents        *lastSent[string]
	settings         settingReports

	mu    sync.Mutex
	jobs  map[api.JobID]*api.JobInfo
	nodes map[string]*api.NodeInfo
	// underived holds the nodes whose device state is to be derived at the next snapshot.
	underived map[string]struct{}
	queues    map[api.QueueID]*api.QueueInfo
	// tasks indexes every task by pod UID; the job's and this index share the object, the node
	// holds its own copy.
	tasks map[api.TaskID]*api.TaskInfo
	// evicting holds, with its reason, every task whose eviction was accepted and whose pod
	// the informer still shows undeleted: it stays Releasing whatever updates come.
	evicting        map[api.TaskID]string
	priorityClasses map[string]*schedulingv1.PriorityClass
	// released is what the last closed session handed back (Release), for the next snapshot;
	// generation numbers the snapshots.
	released   *api.Released
	generation uint64
	derivers   []framework.DeviceDeriver
	// claimed holds, per deriver name, the nodes whose object announces its devices.
	claimed  map[string]map[string]struct{}
	dangling *danglingReferences
	// queueProblems remembers the queues out of the queue hierarchy already told so.
	queueProblems *danglingReferences
	// arrivals holds one signal while newly schedulable work (see noteArrival) waits for a
	// cycle.
	arrivals chan struct{}
}

// podRef names a pod in the work queues (comparable, unlike the pod).
type podRef struct {
	Namespace, Name string
	UID             api.TaskID
}

func refOf(t *api.TaskInfo) podRef { return podRef{Namespace: t.Namespace, Name: t.Name, UID: t.UID} }

// queueCreationTimeout bounds how long New retries creating the root and default queues.
const queueCreationTimeout = 60 * time.Second

// New builds the cache, creates the root and default queues (retrying for up to a minute, or
// until ctx ends) and registers the informers. Nothing is watched until Run.
func New(ctx context.Context, cfg Options, kube kubernetes.Interface, vc versioned.Interface) (*SchedulerCache, error) {
	sc, err := newCache(cfg, kube, vc)
	if err != nil {
		return nil, err
	}
	if err := createDefaultQueues(ctx, vc, sc.defaultQueue, queueCreationBackoff(queueCreationTimeout)); err != nil {
		return nil, err
	}
	return sc, nil
}

// newCache is New without touching the API server.
func newCache(cfg Options, kube kubernetes.Interface, vc versioned.Interface) (*SchedulerCache, error) {
	cfg = cfg.withDefaults()
	sel, err := parseNodeSelector(cfg.NodeSelector)
	if err != nil {
		return nil, err
	}
	sc := &SchedulerCache{
		kube:           kube,
		meta:           cfg.Metadata,
		vc:             vc,
		schedulerNames: sets.New(cfg.SchedulerNames...),
		defaultQueue:   cfg.DefaultQueue,
		nodeSelector:   sel,
		bindWorkers:    cfg.BindWorkers,
		statusWorkers:  cfg.StatusWorkers,
		kubeInformers:  informers.NewSharedInformerFactory(kube, cfg.ResyncPeriod),
		vcInformers:    vcinformers.NewSharedInformerFactory(vc, cfg.ResyncPeriod),
		recorder:       cfg.Recorder,
		metrics:        cfg.Metrics,
		clock:          clock.RealClock{},
		binds:          workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[podRef]{Name: "bind"}),
		evictions:      workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[podRef]{Name: "evict"}),
		resyncs: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[podRef](),
			workqueue.TypedRateLimitingQueueConfig[podRef]{Name: "bind-resync"}),
		writes:           newStatusWriter(),
		conditions:       newLastSent[podCondition](),
		podGroupStatuses: newLastSent[sentStatus](),
		statusWriteDelay: StatusWriteDelay,
		jobEvents:        newLastSent[string](),
		jobs:             map[api.JobID]*api.JobInfo{},
		nodes:            map[string]*api.NodeInfo{},
		underived:        map[string]struct{}{},
		claimed:          map[string]map[string]struct{}{},
		queues:           map[api.QueueID]*api.QueueInfo{},
		tasks:            map[api.TaskID]*api.TaskInfo{},
		evicting:         map[api.TaskID]string{},
		priorityClasses:  map[string]*schedulingv1.PriorityClass{},
		dangling:         newDanglingReferences(),
		queueProblems:    newDanglingReferences(),
		arrivals:         make(chan struct{}, 1),
	}
	usePodInformer(sc.kubeInformers)
	if err := sc.addEventHandlers(cfg.PriorityClass); err != nil {
		return nil, err
	}
	return sc, nil
}

// Informers is the factory of the cache's pod and node informers, for a component that
// watches them too (kube-scheduler's volume plugins) or more beside them
// (framework.ComponentCache).
func (sc *SchedulerCache) Informers() informers.SharedInformerFactory { return sc.kubeInformers }

// Run starts the informers and the bind, evict, resync and status workers, and returns. The
// informers stop when ctx is done; the workers keep going until Stop, so that binds and status
// writes the last scheduling cycle asked for are not cut off by the signal that ends it.
func (sc *SchedulerCache) Run(ctx context.Context) {
	sc.kubeInformers.Start(ctx.Done())
	sc.vcInformers.Start(ctx.Done())
	ctx, sc.stopWorkers = context.WithCancel(context.WithoutCancel(ctx))
	for range sc.bindWorkers {
		go func() {
			for sc.processNextBind(ctx) {
			}
		}()
		go func() {
			for sc.processNextEvict(ctx) {
			}
		}()
	}
	go func() {
		for sc.processNextResync(ctx) {
		}
	}()
	for range sc.statusWorkers {
		go func() {
			for sc.writes.processNext(ctx) {
			}
		}()
	}
}

// Stop ends the workers once nothing schedules any more. Binds, evictions and status writes
// already accepted are sent until ctx ends; those not started by then are handed back (a pod
// stays Pending and a victim running, for the next leader to decide again; a status is
// written again by the next leader's cycle), and the API calls in flight are given
// inFlightGrace to finish before they are cancelled (a Binding cut off leaves its pod
// pending, or bound with its assignment: one request carries both; which one is not known
// here, so it is counted and logged as cut off, neither undone nor reported as failed).
//
// It reports whether every Binding sent was answered. When one was cut off, or a call is
// still in flight when Stop gives up waiting, the API server may yet apply a Binding, and
// the next leader must not read the cluster before it has (handOver in cmd/vc-scheduler).
func (sc *SchedulerCache) Stop(ctx context.Context) (bindsAnswered bool) {
	sc.resyncs.ShutDown()
	drained := make(chan struct{})
	go func() {
		sc.binds.ShutDownWithDrain()
		sc.evictions.ShutDownWithDrain()
		sc.writes.shutDownWithDrain()
		close(drained)
	}()
	inFlight := false
	select {
	case <-drained:
	case <-ctx.Done():
		sc.handingBack.Store(true)
		sc.writes.handingBack.Store(true)
		select {
		case <-drained:
		case <-time.After(inFlightGrace):
			klog.ErrorS(ctx.Err(), "API calls still in flight at shutdown were cancelled")
			if sc.stopWorkers != nil {
				sc.stopWorkers()
			}
			// The cancelled calls return at once, and are counted before the log below.
			select {
			case <-drained:
			case <-time.After(inFlightGrace):
				inFlight = true
			}
		}
		klog.InfoS("Handed back what was not started at shutdown", "bindsAndEvictions", sc.handedBack.Load(),
			"statusWrites", sc.writes.handedBack.Load(), "bindsCutOff", sc.bindsCutOff.Load(), "stillInFlight", inFlight)
	}
	if sc.stopWorkers != nil {
		sc.stopWorkers()
	}
	return !inFlight && sc.bindsCutOff.Load() == 0
}

// inFlightGrace is how long Stop waits, once its time is up, for the API calls in flight.
const inFlightGrace = 300 * time.Millisecond

// WaitForCacheSync blocks until every informer's initial list has been handled, or ctx ends;
// it reports whether the cache is synced.
func (sc *SchedulerCache) WaitForCacheSync(ctx context.Context) bool {
	if !toolscache.WaitForCacheSync(ctx.Done(), sc.synced...) {
		return false
	}
	for _, synced := range sc.kubeInformers.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return false
		}
	}
	return true
}

// Synced reports whether every informer's initial list has been handled (for /healthz).
func (sc *SchedulerCache) Synced() bool {
	for _, s := range sc.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Changes implements framework.ChangeCounter: informer events the cache took, binds,
// evictions and their failures, re-reads after a failed bind, and device rederivations.
func (sc *SchedulerCache) Changes() uint64 { return sc.changes.Load() }

// changed counts one change; called once it is applied and mu released, so that a snapshot
// taken meanwhile is never counted as having seen it.
func (sc *SchedulerCache) changed() { sc.changes.Add(1) }
