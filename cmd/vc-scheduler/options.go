package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
)

// options are upstream vc-scheduler's flags with upstream's defaults, so a
// Deployment written for the stock image runs this one unchanged.
type options struct {
	kubeconfig, master string

	schedulerConf   string
	schedulerNames  []string
	schedulePeriod  time.Duration
	defaultQueue    string
	listenAddress   string
	healthzAddress  string
	enableHealthz   bool
	enableMetrics   bool
	enablePprof     bool
	kubeAPIQPS      float32
	kubeAPIBurst    int
	nodeSelector    []string
	printVersion    bool
	leaderElection  componentbaseconfig.LeaderElectionConfiguration
	minNodesToFind  int32
	minPctNodesFind int32
	pctNodesToFind  int32
	// logFlushFrequency is component-base's --log-flush-frequency: how often klog flushes.
	logFlushFrequency time.Duration

	// Upstream's flags kept so existing manifests keep working. resyncPeriod, priorityClass,
	// resourceSyncTimeout, disableDefaultConfig and shardingMode are honoured; the others tune
	// upstream machinery this scheduler does not have (storage plugins, .so plugins, cache
	// dumps, TLS, sharding, gate removal) and are accepted and ignored.
	compat compatFlags
}

type compatFlags struct {
	resyncPeriod         time.Duration
	priorityClass        bool
	pluginsDir           string
	csiStorage           bool
	cacheDumper          bool
	cacheDumpDir         string
	nodeWorkerThreads    uint32
	ignoredProvisioners  []string
	caCertFile           string
	tlsCertFile          string
	tlsPrivateKeyFile    string
	featureGates         string
	resourceSyncTimeout  time.Duration
	disableDefaultConfig bool
	// Upstream v1.14's node sharding between schedulers: only "none" is implemented here.
	shardingMode, shardingName string
	gateRemovalWorkers         int
}

func newOptions() *options {
	return &options{
		schedulerNames: []string{"volcano"},
		schedulePeriod: time.Second,
		defaultQueue:   "default",
		listenAddress:  ":8080",
		healthzAddress: ":11251",
		kubeAPIQPS:     2000,
		kubeAPIBurst:   2000,
		leaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     durationOf(15 * time.Second),
			RenewDeadline:     durationOf(10 * time.Second),
			RetryPeriod:       durationOf(2 * time.Second),
			ResourceLock:      "leases",
			ResourceNamespace: "volcano-system",
		},
		minNodesToFind:  100,
		minPctNodesFind: 5,
	}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Path to kubeconfig file with authorization and master location information")
	fs.StringVar(&o.master, "master", o.master, "The address of the Kubernetes API server (overrides any value in kubeconfig)")
	fs.StringVar(&o.schedulerConf, "scheduler-conf", o.schedulerConf, "The absolute path of scheduler configuration file")
	fs.StringArrayVar(&o.schedulerNames, "scheduler-name", o.schedulerNames, "vc-scheduler will handle pods whose .spec.SchedulerName is same as scheduler-name (repeatable)")
	fs.DurationVar(&o.schedulePeriod, "schedule-period", o.schedulePeriod, "The period between each scheduling cycle")
	fs.StringVar(&o.defaultQueue, "default-queue", o.defaultQueue, "The default queue name of the job")
	fs.StringVar(&o.listenAddress, "listen-address", o.listenAddress, "The address to listen on for HTTP requests (metrics, pprof)")
	fs.StringVar(&o.healthzAddress, "healthz-address", o.healthzAddress, "The address to listen on for the health check server")
	fs.BoolVar(&o.enableHealthz, "enable-healthz", o.enableHealthz, "Enable the health check")
	fs.BoolVar(&o.enableMetrics, "enable-metrics", o.enableMetrics, "Enable the metrics function")
	fs.BoolVar(&o.enablePprof, "enable-pprof", o.enablePprof, "Enable the pprof endpoint")
	fs.Float32Var(&o.kubeAPIQPS, "kube-api-qps", o.kubeAPIQPS, "QPS to use while talking with the Kubernetes API server")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", o.kubeAPIBurst, "Burst to use while talking with the Kubernetes API server")
	fs.StringArrayVar(&o.nodeSelector, "node-selector", o.nodeSelector, "Only nodes with this label (key:value) are scheduled onto (repeatable)")
	fs.BoolVar(&o.printVersion, "version", o.printVersion, "Show version and quit")
	fs.Int32Var(&o.minNodesToFind, "minimum-feasible-nodes", o.minNodesToFind, "The minimum number of feasible nodes to find and score")
	fs.Int32Var(&o.minPctNodesFind, "minimum-percentage-nodes-to-find", o.minPctNodesFind, "The minimum percentage of nodes to find and score")
	fs.Int32Var(&o.pctNodesToFind, "percentage-nodes-to-find", o.pctNodesToFind, "The percentage of nodes to find and score; 0 adapts to the cluster size")
	componentbaseoptions.BindLeaderElectionFlags(&o.leaderElection, fs)
	fs.String("lock-object-namespace", "", "Deprecated and ignored: use --leader-elect-resource-namespace")

	c := &o.compat
	fs.DurationVar(&c.resyncPeriod, "resync-period", 0, "Resync period of the scheduler's informers; 0 never resyncs")
	fs.BoolVar(&c.priorityClass, "priority-class", true, "Watch PriorityClasses, which give PodGroups their priority (priorityClassName); false leaves them unread")
	fs.StringVar(&c.pluginsDir, "plugins-dir", "", "Accepted for compatibility; Go .so plugins are not loaded")
	fs.BoolVar(&c.csiStorage, "csi-storage", false, "Accepted for compatibility; no effect")
	fs.BoolVar(&c.cacheDumper, "cache-dumper", true, "Accepted for compatibility; no effect")
	fs.StringVar(&c.cacheDumpDir, "cache-dump-dir", "/tmp", "Accepted for compatibility; no effect")
	fs.Uint32Var(&c.nodeWorkerThreads, "node-worker-threads", 20, "Accepted for compatibility; node events are handled inline")
	fs.StringSliceVar(&c.ignoredProvisioners, "ignored-provisioners", nil, "Accepted for compatibility; no effect")
	fs.StringVar(&c.caCertFile, "ca-cert-file", "", "Accepted for compatibility; the health server has no TLS")
	fs.StringVar(&c.tlsCertFile, "tls-cert-file", "", "Accepted for compatibility; the health server has no TLS")
	fs.StringVar(&c.tlsPrivateKeyFile, "tls-private-key-file", "", "Accepted for compatibility; the health server has no TLS")
	fs.StringVar(&c.featureGates, "feature-gates", "", "Accepted for compatibility; no effect")
	fs.DurationVar(&c.resourceSyncTimeout, "resource-sync-timeout", time.Minute, "How long to wait for the informers to sync")
	fs.BoolVar(&c.disableDefaultConfig, "disable-default-scheduler-config", false, "Exit instead of using the built-in configuration when the file is missing or invalid")
	fs.StringVar(&c.shardingMode, "scheduler-sharding-mode", shardingNone, `How nodes are shared between schedulers: only "none" is implemented (split nodes with --node-selector)`)
	fs.StringVar(&c.shardingName, "scheduler-sharding-name", "", "Accepted for compatibility; used only by a sharding mode other than none")
	fs.IntVar(&c.gateRemovalWorkers, "gate-removal-worker-num", 5, "Accepted for compatibility; no effect")
	fs.DurationVar(&o.logFlushFrequency, "log-flush-frequency", 5*time.Second, "Maximum time between log flushes")
}

// shardingNone is the one --scheduler-sharding-mode this scheduler has: every scheduler sees
// every node its --node-selector lets it see.
const shardingNone = "none"

// validate checks the flag values and fills in derived defaults.
func (o *options) validate() error {
	if len(o.schedulerNames) == 0 {
		return fmt.Errorf("--scheduler-name: at least one name is required")
	}
	if o.schedulePeriod <= 0 {
		return fmt.Errorf("--schedule-period %s: must be positive", o.schedulePeriod)
	}
	for _, s := range o.nodeSelector {
		if k, _, ok := strings.Cut(s, ":"); !ok || k == "" {
			return fmt.Errorf("--node-selector %q: want key:value", s)
		}
	}
	if o.pctNodesToFind < 0 || o.pctNodesToFind > 100 {
		return fmt.Errorf("--percentage-nodes-to-find %d: want 0..100", o.pctNodesToFind)
	}
	if m := o.compat.shardingMode; m != shardingNone {
		return fmt.Errorf("--scheduler-sharding-mode %q: not implemented by this scheduler; the mode it has is %q (split nodes between schedulers with --node-selector)", m, shardingNone)
	}
	if o.logFlushFrequency <= 0 {
		return fmt.Errorf("--log-flush-frequency %s: must be positive", o.logFlushFrequency)
	}
	if o.leaderElection.ResourceName == "" {
		// Upstream: the scheduler's name when it has exactly one, else "volcano".
		o.leaderElection.ResourceName = "volcano"
		if len(o.schedulerNames) == 1 {
			o.leaderElection.ResourceName = o.schedulerNames[0]
		}
	}
	return nil
}

func durationOf(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
