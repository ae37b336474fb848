// benche2e is make bench-e2e: the scheduler end to end against the local cluster's API server.
// For each size it creates that many kwok GPU nodes and runs the same workload (a data file of
// test/workload) twice, in one run on the same API server: first under a trivial binder (one
// Binding per pod, nothing else: the API server's bind ceiling), then under the vc-scheduler
// binary with the chart's configuration. It measures each run from the outside (pods/s,
// create -> bound latency, API writes per pod from the API server's audit log, CPU of the API
// server and of the scheduler, the scheduler's peak RSS, the placement), and writes JSON, a
// markdown table and a PNG plot.
//
// The preempt subcommand is the preemption benchmark on the same pieces (preempt.go), and
// the restart subcommand the restart benchmark (restart.go).
//
//	go run ./test/benche2e --sizes 100,500,1000
//	go run ./test/benche2e preempt --nodes 100
//	go run ./test/benche2e restart --nodes 2000
//	go run ./test/benche2e binder --kubeconfig K --scheduler-name S   (the baseline, as a child)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// benchNodeLabel marks the benchmark's nodes; both schedulers see only those.
const benchNodeLabel = "volcano-vgpu.bench/node"

// binderReady is the line the binder logs once it watches pods.
const binderReady = "Binder ready"

type options struct {
	kubeconfig   string
	workloadPath string
	sizes        []int
	out          string
	schedulerBin string
	schedulerCfg string
	auditLog     string
	apiserverPID string
	profile      bool
	stall        time.Duration
	keepNodes    bool
	only         string
	check        bool
}

func main() {
	klog.InitFlags(nil)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "binder" {
		fs := flag.NewFlagSet("binder", flag.ExitOnError)
		kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
		name := fs.String("scheduler-name", "", "pods' spec.schedulerName")
		_ = fs.Parse(os.Args[2:])
		cs, _, err := newClients(*kubeconfig, "bench-binder")
		if err == nil {
			err = runBinder(ctx, cs, *name)
		}
		exitOn(err)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "preempt" {
		exitOn(runOnNodes(ctx, "preempt.yaml", 100, nil, runPreempt))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "restart" {
		exitOn(runOnNodes(ctx, "gpu-mix.yaml", 2000, func(fs *flag.FlagSet, o *options) {
			fs.BoolVar(&o.profile, "profile", false, "take the restarted vc-scheduler's CPU profile and execution trace of its first seconds")
		}, runRestart))
		return
	}
	o := options{}
	o.register(flag.CommandLine, "gpu-mix.yaml")
	sizes := flag.String("sizes", "100,500,1000", "node counts, comma-separated; each run has podsPerNode x nodes pods")
	flag.BoolVar(&o.profile, "profile", false, "take CPU and heap profiles of vc-scheduler during the largest run")
	flag.StringVar(&o.only, "only", "", "run only this program: binder or vc-scheduler")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			exitOn(fmt.Errorf("--sizes %q: want positive node counts", *sizes))
		}
		o.sizes = append(o.sizes, n)
	}
	exitOn(run(ctx, o))
}

// runOnNodes parses a subcommand's flags (the shared ones, with workloadFile as the default
// workload, --nodes, and those extra adds when not nil) and runs it.
func runOnNodes(ctx context.Context, workloadFile string, defaultNodes int, extra func(*flag.FlagSet, *options), run func(context.Context, options, int) error) error {
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	o := options{}
	o.register(fs, workloadFile)
	if extra != nil {
		extra(fs, &o)
	}
	nodes := fs.Int("nodes", defaultNodes, "kwok GPU nodes; the workload's pods per node scale with it")
	_ = fs.Parse(os.Args[2:])
	if *nodes < 1 {
		return fmt.Errorf("--nodes %d: want at least 1", *nodes)
	}
	return run(ctx, o, *nodes)
}

// register adds the flags the end-to-end run and the preemption run share to fs, with the
// workload file of test/workload named workloadFile as the default.
func (o *options) register(fs *flag.FlagSet, workloadFile string) {
	root := repoRoot()
	fs.StringVar(&o.kubeconfig, "kubeconfig", filepath.Join(root, ".cache/testbed/pki/admin.kubeconfig"), "admin kubeconfig of the local cluster")
	fs.StringVar(&o.workloadPath, "workload", filepath.Join(root, "test/workload", workloadFile), "workload data file")
	fs.StringVar(&o.out, "out", filepath.Join(root, ".cache/bench"), "where the results (JSON, markdown, plot, logs) go")
	fs.StringVar(&o.schedulerBin, "scheduler", filepath.Join(root, "bin/vc-scheduler"), "the vc-scheduler binary")
	fs.StringVar(&o.schedulerCfg, "scheduler-conf", filepath.Join(root, "config/volcano-scheduler.conf"), "its configuration (the chart's default)")
	fs.StringVar(&o.auditLog, "audit-log", filepath.Join(root, ".cache/testbed/logs/audit.log"), "the API server's audit log")
	fs.StringVar(&o.apiserverPID, "apiserver-pid", filepath.Join(root, ".cache/testbed/run/kube-apiserver.pid"), "the API server's PID file")
	fs.DurationVar(&o.stall, "stall", time.Minute, "give up on a run when no pod was bound for this long")
	fs.BoolVar(&o.keepNodes, "keep-nodes", false, "leave the kwok nodes in place at the end")
	fs.BoolVar(&o.check, "check", false, "fail unless vc-scheduler bound every pod, each vGPU pod with its assignment, and no GPU was overbooked")
}

// prepare reads the workload, makes the clients and the output folder, and removes what an
// interrupted run left.
func prepare(ctx context.Context, o options) (*workload.Workload, kubernetes.Interface, vcclient.Interface, error) {
	w, err := workload.Load(o.workloadPath)
	if err != nil {
		return nil, nil, nil, err
	}
	cs, vc, err := newClients(o.kubeconfig, "bench-e2e")
	if err != nil {
		return nil, nil, nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, nil, nil, err
	}
	return w, cs, vc, cleanLeftovers(ctx, cs, vc)
}

func run(ctx context.Context, o options) error {
	w, cs, vc, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	report := &report{Workload: w.Name, Date: time.Now().UTC().Format(time.RFC3339), Host: hostDescription()}
	for i, nodes := range o.sizes {
		if err := ensureNodes(ctx, cs, w, nodes); err != nil {
			return err
		}
		pods := w.PodCount(nodes)
		for _, s := range []schedulerRun{binderRun(o), schedulerBinaryRun(o, o.profile && i == len(o.sizes)-1)} {
			if o.only != "" && o.only != s.name {
				continue
			}
			klog.InfoS("Run", "scheduler", s.name, "nodes", nodes, "pods", pods)
			r, err := runPhase(ctx, cs, vc, o, w, s, nodes, pods)
			if err != nil {
				return fmt.Errorf("%s, %d nodes: %w", s.name, nodes, err)
			}
			report.Runs = append(report.Runs, r)
			// Written after every run, so that an interrupted benchmark keeps what it measured.
			if err := report.write(o.out); err != nil {
				return err
			}
		}
	}
	if !o.keepNodes {
		if err := deleteNodes(ctx, cs); err != nil {
			return err
		}
	}
	fmt.Print(report.markdown())
	if o.check {
		return report.check()
	}
	return nil
}

func newClients(kubeconfig, agent string) (kubernetes.Interface, vcclient.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w (is the cluster up? make cluster-up)", kubeconfig, err)
	}
	// The same client limits as vc-scheduler's defaults, for the binder and the load alike.
	cfg.QPS, cfg.Burst, cfg.UserAgent = 2000, 2000, agent
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	vc, err := vcclient.NewForConfig(cfg)
	return cs, vc, err
}

func repoRoot() string {
	dir, err := os.Getwd()
	exitOn(err)
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(1)
	}
}
