package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	componentbaseconfig "k8s.io/component-base/config"
	// Registers client-go's request, rate-limiter and workqueue metrics (rest_client_requests_total
	// by code, method and host, ...) with the legacy registry that /metrics serves too, so API
	// traffic can be watched, and leader election's leader_election_master_status{name=<Lease>}
	// (1 while this replica leads, 0 once it stopped; none before it first led), which the
	// chart's alert on a scheduler without a leader reads.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	"k8s.io/klog/v2"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/apideadline"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/events"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/cache"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
)

// configPollInterval: how often the configuration file is re-read. The kubelet refreshes a
// mounted ConfigMap about once a minute, so a change is picked up soon after it lands.
const configPollInterval = 2 * time.Second

// On SIGTERM the scheduler is gone within 2 s, so that a rolling update or a node drain does
// not wait for it and its standby leads at once: the cycle in progress ends, the binds and
// status writes it asked for are sent until bindsGrace after the signal (those not started by
// then are handed back: their pods stay Pending for the next leader, cache.Stop), the Lease
// is released, and the Events still queued are written until exitWithin after the signal
// (what is left then is counted as dropped). The chart's terminationGracePeriodSeconds
// leaves room for it.
const (
	bindsGrace = 500 * time.Millisecond
	exitWithin = 1700 * time.Millisecond
)

// shutdownClock is the time ctx ended (the signal), from which the shutdown's steps share
// their budget; a process that stops for another reason starts it on first use.
type shutdownClock struct {
	once  sync.Once
	start time.Time
}

func newShutdownClock(ctx context.Context) *shutdownClock {
	c := &shutdownClock{}
	context.AfterFunc(ctx, c.begin)
	return c
}

func (c *shutdownClock) begin() { c.once.Do(func() { c.start = time.Now() }) }

// after is a context that ends d after the clock started, not canceled with parent.
func (c *shutdownClock) after(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c.begin()
	return context.WithDeadline(context.WithoutCancel(parent), c.start.Add(d))
}

// errLeadershipLost ends a replica that stopped holding the Lease.
var errLeadershipLost = errors.New("leader election lost")

func run(ctx context.Context, o *options) (err error) {
	restCfg, err := clientcmd.BuildConfigFromFlags(o.master, o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %q, master %q: %w", o.kubeconfig, o.master, err)
	}
	restCfg.QPS, restCfg.Burst = o.kubeAPIQPS, o.kubeAPIBurst
	restCfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/vc-scheduler"
	apideadline.Set(restCfg, apideadline.Default) // binds, status writes, leases; not watches
	// Kubernetes' own objects travel as protobuf, as kube-scheduler's do: a restarted
	// scheduler's first lists of every pod and node decode several times faster than JSON.
	// Volcano's CRDs have JSON only.
	kubeCfg := rest.CopyConfig(restCfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	vc, err := vcclient.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return err
	}

	// The binary owns the registry /metrics serves; everything that keeps metrics registers
	// on it here and is handed what it writes.
	served := prometheus.NewRegistry()
	recorded := metrics.New()
	served.MustRegister(recorded.Collectors()...)
	pipe, err := events.New(kube, o.schedulerNames[0])
	if err != nil {
		return err
	}
	pipe.Start()
	served.MustRegister(pipe.Collectors()...)
	stopping := newShutdownClock(ctx)
	// Events recorded until the very end (the last cycle's, the last binds') are written
	// before the process goes.
	defer func() {
		ctx, cancel := stopping.after(ctx, exitWithin)
		defer cancel()
		pipe.Shutdown(ctx)
	}()
	confEvents := newConfigEvents(pipe.Recorder(), o)
	registry := newClusterRegistry(allocate.Options{
		MinimumFeasibleNodes:         int(o.minNodesToFind),
		PercentageNodesToFind:        int(o.pctNodesToFind),
		MinimumPercentageNodesToFind: int(o.minPctNodesFind),
	}, kube, pipe.Recorder())
	// The plugins' components (watches, state their sessions share, metrics) live as long as
	// the process, and are all run alike: collected from, started on the cache, and
	// configured with every configuration put in force.
	components := registry.Components()
	for _, c := range components {
		served.MustRegister(c.Collectors()...)
	}
	configure := func(cfg *conf.SchedulerConfiguration) {
		for _, c := range components {
			c.Configure(ctx, cfg)
		}
	}

	sc, err := cache.New(ctx, cache.Options{
		SchedulerNames: o.schedulerNames, DefaultQueue: o.defaultQueue, NodeSelector: o.nodeSelector,
		ResyncPeriod: o.compat.resyncPeriod, PriorityClass: o.compat.priorityClass, Recorder: pipe.Recorder(),
		Metrics: recorded, Metadata: meta,
	}, kube, vc)
	if err != nil {
		return err
	}
	for _, c := range components {
		c.Start(ctx, sc)
	}
	report := newConfigReport(confEvents, o.schedulerConf, sc.NodesClaimedBy, func(cfg *conf.SchedulerConfiguration) bool {
		return registry.Places(cfg, deviceshare.PluginName)
	})
	served.MustRegister(report.Collectors()...)
	config, err := loadConfig(o, registry, report)
	if err != nil {
		return err
	}
	serveHTTP(ctx, o, served, sc, report)

	var lock resourcelock.Interface
	var atStart leaseAtStart
	if o.leaderElection.LeaderElect {
		if lock, err = newLeaseLock(o, kube); err != nil {
			return err
		}
		// Before the informers list anything: see leaseAtStart.
		if atStart, err = readLeaseAtStart(ctx, o, kube, lock.Identity()); err != nil {
			return err
		}
	}
	// Every replica keeps a warm cache (and so a truthful /healthz); only the leader schedules.
	sc.Run(ctx)
	// Once the scheduling loop has returned: the binds and status writes the last cycle asked
	// for are sent (before a leader's Lease is released, so that the next leader's cache sees
	// them), and their Events recorded, before the Event pipe drains (deferred earlier, so it
	// runs later). A replica that lost the Lease sends nothing more: another one schedules.
	stopCache := sync.OnceValue(func() bool {
		ctx, cancel := stopping.after(ctx, bindsGrace)
		defer cancel()
		if errors.Is(err, errLeadershipLost) {
			cancel()
		}
		return sc.Stop(ctx)
	})
	defer stopCache()
	syncCtx, cancel := context.WithTimeout(ctx, o.compat.resourceSyncTimeout)
	synced := sc.WaitForCacheSync(syncCtx)
	cancel()
	if !synced {
		return fmt.Errorf("informers not synced within %s", o.compat.resourceSyncTimeout)
	}
	if config != nil {
		go config.Run(ctx, configPollInterval, func(c *conf.SchedulerConfiguration) {
			klog.InfoS("Scheduler configuration reloaded", "path", config.Path(), "actions", c.Actions)
			report.Loaded(config.Skipped())
			configure(c)
		}, func(err error) {
			report.Rejected(err, "the configuration in force")
		})
	}
	current := report.Builtin
	if config != nil {
		current = config.Current
	}
	configure(current())
	current = report.Checked(current)
	s := scheduler.New(sc, current, registry, recorded, o.schedulePeriod)
	s.WakeOn(sc.Arrivals())

	if !o.leaderElection.LeaderElect {
		s.Run(ctx)
		return nil
	}
	return runAsLeader(ctx, o, lock, func(ctx context.Context) {
		// A new leader schedules only once its cache has the previous leader's last binds:
		// at once when its informers started after that leader had handed the Lease over.
		if atStart.handedOver(ctx) {
			klog.InfoS("Cache started after the previous leader handed the Lease over: it holds that leader's binds", "lease", lock.Describe())
		} else if err := sc.CatchUp(ctx); err != nil {
			klog.ErrorS(err, "Not scheduling")
			return
		}
		s.Run(ctx)
	}, stopCache)
}

// loadConfig reads --scheduler-conf. Without the flag the built-in configuration is used.
// A file that is missing or cannot be used at start keeps the built-in one (with an error in
// the log and an event), unless --disable-default-scheduler-config makes that fatal. What a
// loaded file skips is reported.
func loadConfig(o *options, registry conf.KnownNames, report *configReport) (*conf.Watcher, error) {
	if o.schedulerConf == "" {
		return nil, nil
	}
	w := conf.NewWatcher(o.schedulerConf, registry, report.Builtin)
	if _, err := w.Reload(); err != nil {
		if o.compat.disableDefaultConfig {
			return nil, err
		}
		report.Rejected(err, "the built-in configuration")
		return w, nil
	}
	report.Loaded(w.Skipped())
	return w, nil
}

// runAsLeader schedules only while holding the Lease; losing it ends the process (as
// upstream), so a restarted replica starts from a fresh cache. When ctx ends (SIGTERM) the
// scheduling loop is stopped first, then stop sends what it asked for and reports whether
// every Binding was answered, and only then is the Lease handed over (handOver), so that a
// standby takes over at once without racing this one's binds.
func runAsLeader(ctx context.Context, o *options, lock resourcelock.Interface, lead func(context.Context), stop func() (bindsAnswered bool)) error {
	le := o.leaderElection
	// The election outlives ctx until the scheduling loop has stopped; led closes when the
	// loop has returned (at once if this replica never led).
	electionCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	lost, led, leading := make(chan struct{}), make(chan struct{}), make(chan struct{})
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		leaderelection.RunOrDie(electionCtx, leaderelection.LeaderElectionConfig{
			Lock:          lock,
			LeaseDuration: le.LeaseDuration.Duration,
			RenewDeadline: le.RenewDeadline.Duration,
			RetryPeriod:   le.RetryPeriod.Duration,
			// handOver releases the Lease, or holds it on as the Bindings cut off require.
			ReleaseOnCancel: false,
			Name:            le.ResourceName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leaderCtx context.Context) {
					defer close(led)
					close(leading)
					klog.InfoS("Became leader; scheduling", "lease", klog.KRef(le.ResourceNamespace, le.ResourceName))
					leaderCtx, cancel := context.WithCancel(leaderCtx)
					defer cancel()
					go func() {
						select {
						case <-ctx.Done():
							cancel()
						case <-leaderCtx.Done():
						}
					}()
					lead(leaderCtx)
				},
				OnStoppedLeading: func() { close(lost) },
			},
		})
	}()
	select {
	case <-ctx.Done():
		// A replica that came to lead only as ctx ended has scheduled nothing: its loop
		// ended at once (lead's CatchUp returns on its context).
		bindsAnswered := true
		select {
		case <-leading:
			<-led
			bindsAnswered = stop()
		default:
		}
		stopElection()
		<-elected
		select {
		case <-leading:
			handOver(lock, le, bindsAnswered)
		default:
		}
		return nil
	case <-lost:
		if ctx.Err() != nil {
			return nil
		}
		return errLeadershipLost
	}
}

// newLeaseLock is this replica's hold on the leader Lease, under an identity of its own.
func newLeaseLock(o *options, kube kubernetes.Interface) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	return leaseLockAs(o, kube, host+"_"+string(uuid.NewUUID()))
}

// leaseLockAs is a hold on the leader Lease under identity. A lock keeps the Lease it last
// read or wrote, so each user needs one of its own.
func leaseLockAs(o *options, kube kubernetes.Interface, identity string) (resourcelock.Interface, error) {
	le := o.leaderElection
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return nil, fmt.Errorf("leader election lock %s/%s: %w", le.ResourceNamespace, le.ResourceName, err)
	}
	return lock, nil
}

// handOverDeadline bounds the Lease's hand-over, so that SIGTERM is answered within 2 s on a
// slow API server too: a hand-over that does not make it leaves the Lease to lapse, which is
// safe, only slower for the standby.
const handOverDeadline = time.Second

// handOver ends this replica's term on the Lease, once it has stopped scheduling, in one
// write. When every Binding it sent was answered it empties the holder, as client-go's
// ReleaseOnCancel does, and a standby leads at its next try. When some were cut off in
// flight the API server may still apply them, and the next leader must read the cluster only
// after (cache.CatchUp): the Lease stays held, renewed now for lease duration - renew
// deadline, and a standby takes a held Lease only once it has seen it unrenewed for as long
// (client-go's rule). That is the time leader election already leaves a leader that cannot
// renew to cut its requests off before another may lead: it stops leading a renew deadline
// after its last renewal, and another takes the Lease a lease duration after it.
func handOver(lock resourcelock.Interface, le componentbaseconfig.LeaderElectionConfiguration, bindsAnswered bool) {
	ctx, cancel := context.WithTimeout(context.Background(), min(le.RenewDeadline.Duration, handOverDeadline))
	defer cancel()
	record, _, err := lock.Get(ctx)
	if err != nil {
		klog.ErrorS(err, "Reading the Lease to hand it over; a standby takes it once it lapses", "lease", lock.Describe())
		return
	}
	if record.HolderIdentity != lock.Identity() {
		return
	}
	now := metav1.NewTime(time.Now())
	next := resourcelock.LeaderElectionRecord{LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1,
		RenewTime: now, AcquireTime: now}
	if !bindsAnswered {
		held := le.LeaseDuration.Duration - le.RenewDeadline.Duration
		next = *record
		next.RenewTime = now
		next.LeaseDurationSeconds = max(1, int(math.Ceil(held.Seconds())))
	}
	if err := lock.Update(ctx, next); err != nil {
		klog.ErrorS(err, "Handing the Lease over; a standby takes it once it lapses", "lease", lock.Describe())
		return
	}
	if !bindsAnswered {
		klog.InfoS("Holding the Lease past exit: Bindings cut off in flight may still be applied by the API server, and the next leader starts after",
			"lease", lock.Describe(), "for", time.Duration(next.LeaseDurationSeconds)*time.Second)
	}
}

// serveHTTP starts /metrics (served's, with the process-wide legacy registry's) and pprof
// on --listen-address and /healthz with /status on --healthz-address, when enabled. /healthz
// fails until the cache has synced; /status says which scheduler configuration is in force
// and what of it is not applied.
func serveHTTP(ctx context.Context, o *options, served prometheus.Gatherer, sc *cache.SchedulerCache, status http.Handler) {
	if o.enableMetrics || o.enablePprof {
		mux := http.NewServeMux()
		if o.enableMetrics {
			mux.Handle("/metrics", metrics.Handler(served))
		}
		if o.enablePprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		go listen(ctx, o.listenAddress, mux)
	}
	if o.enableHealthz {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			if !sc.Synced() {
				http.Error(w, "cache not synced", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
		mux.Handle("/status", status)
		go listen(ctx, o.healthzAddress, mux)
	}
}

func listen(ctx context.Context, addr string, h http.Handler) {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.ErrorS(err, "HTTP server stopped", "address", addr)
	}
}

// configEvents reports configuration problems where an operator looks: on the scheduler's
// own pod when it knows it (POD_NAMESPACE/POD_NAME from the downward API), else on its Lease.
type configEvents struct {
	recorder record.EventRecorder
	target   *corev1.ObjectReference
}

func newConfigEvents(recorder record.EventRecorder, o *options) *configEvents {
	target := &corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease",
		Namespace: o.leaderElection.ResourceNamespace, Name: o.leaderElection.ResourceName}
	if ns, name := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"); ns != "" && name != "" {
		target = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}
	}
	return &configEvents{
		recorder: recorder,
		target:   target,
	}
}

func (e *configEvents) warn(reason, msg string) {
	e.recorder.Event(e.target, corev1.EventTypeWarning, reason, msg)
}
