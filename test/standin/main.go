// Command standin stands in for the parts of Volcano's vc-controller-manager that the
// scheduler depends on, in the local test-bed and the demo. It exists only because the
// upstream controllers (module volcano.sh/volcano) cannot be built here; it is not shipped,
// and a real installation runs upstream's vc-controller-manager and admission webhooks.
//
// It does what upstream's controllers do for the scheduler, and nothing more:
//   - standalone pods whose schedulerName is one of --scheduler-name get a PodGroup
//     podgroup-<owner-or-pod-uid> and the scheduling.k8s.io/group-name annotation;
//   - VolcanoJobs get upstream's admission defaults, a PodGroup <job>-<job-uid>, pods
//     <job>-<task>-<index> once the scheduler admits the PodGroup, and a minimal status;
//   - Queues get the webhook's spec defaults (weight 1, reclaimable) and status.state Open.
//
// With --place-pods it also stands in for kube-scheduler in one namespace (placer.go), so the
// chart's own pods run on the local cluster's node.
//
// Deleting a Job, ReplicaSet or pod leaves its PodGroup and pods to the garbage collector
// of kube-controller-manager, through the owner references set here.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"volcano.sh/apis/pkg/client/clientset/versioned"
	vcinformers "volcano.sh/apis/pkg/client/informers/externalversions"
)

type options struct {
	kubeconfig     string
	schedulerNames []string
	workers        int
	kubeAPIQPS     float32
	kubeAPIBurst   int
	placePods      string
}

func main() {
	var opts options
	fs := pflag.NewFlagSet("standin", pflag.ExitOnError)
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	fs.StringArrayVar(&opts.schedulerNames, "scheduler-name", []string{"volcano"},
		"scheduler whose standalone pods get a PodGroup (repeatable); the first is VolcanoJobs' default")
	fs.IntVar(&opts.workers, "workers", 3, "concurrent syncs per controller")
	fs.Float32Var(&opts.kubeAPIQPS, "kube-api-qps", 50, "API requests per second")
	fs.IntVar(&opts.kubeAPIBurst, "kube-api-burst", 100, "API request burst")
	fs.StringVar(&opts.placePods, "place-pods", "", "NAMESPACE=NODE: bind that namespace's default-scheduler pods to the node")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])
	if len(opts.schedulerNames) == 0 || opts.workers < 1 {
		fmt.Fprintln(os.Stderr, "standin: need at least one --scheduler-name and --workers >= 1")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts); err != nil {
		klog.ErrorS(err, "standin stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(ctx context.Context, opts options) error {
	restCfg, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %q: %w", opts.kubeconfig, err)
	}
	restCfg.QPS, restCfg.Burst = opts.kubeAPIQPS, opts.kubeAPIBurst
	restCfg.UserAgent = rest.DefaultKubernetesUserAgent() + "/standin"
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	vc, err := versioned.NewForConfig(restCfg)
	if err != nil {
		return err
	}

	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	vcInformers := vcinformers.NewSharedInformerFactory(vc, 0)
	pods := kubeInformers.Core().V1().Pods()
	podGroups := vcInformers.Scheduling().V1beta1().PodGroups()
	jobs := vcInformers.Batch().V1alpha1().Jobs()
	queues := vcInformers.Scheduling().V1beta1().Queues()

	pgc := newPodGroupController(kube, vc, pods.Lister(), podGroups.Lister(), opts.schedulerNames)
	jc := newJobController(kube, vc, jobs.Lister(), podGroups.Lister(), pods.Lister(), opts.schedulerNames[0])
	qc := newQueueController(vc, queues.Lister())
	loops := []*loop{pgc.loop, jc.loop, qc.loop}
	watches := []error{
		pgc.watch(pods.Informer()),
		jc.watch(jobs.Informer(), podGroups.Informer(), pods.Informer()),
		qc.watch(queues.Informer()),
	}
	if opts.placePods != "" {
		ns, node, err := parsePlacement(opts.placePods)
		if err != nil {
			return err
		}
		pl := newPlacer(kube, pods.Lister(), ns, node)
		loops = append(loops, pl.loop)
		watches = append(watches, pl.watch(pods.Informer()))
	}
	for _, err := range watches {
		if err != nil {
			return fmt.Errorf("register event handlers: %w", err)
		}
	}

	kubeInformers.Start(ctx.Done())
	vcInformers.Start(ctx.Done())
	defer kubeInformers.Shutdown()
	defer vcInformers.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, podGroups.Informer().HasSynced,
		jobs.Informer().HasSynced, queues.Informer().HasSynced) {
		return fmt.Errorf("informer caches did not sync: %w", ctx.Err())
	}
	klog.InfoS("standin controllers running", "schedulerNames", opts.schedulerNames, "workers", opts.workers)

	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(func() { l.run(ctx, opts.workers) })
	}
	wg.Wait()
	return nil
}
