package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// The restart benchmark (benche2e restart): vc-scheduler with the chart's configuration fills
// kwok GPU nodes with the workload's vGPU gangs (set-up, timed), is killed (SIGKILL, as a
// crash or an OOM kill), and is started again while a new gang waits. It measures, from the
// second start: the time to ready (/healthz), to its first cycle, and to the new gang's first
// bind; its peak RSS then; and the API requests it made until then by method (client-go's
// rest_client_requests_total: a start that lists and watches makes a handful of GETs, one that
// reads objects one by one makes thousands). Then SIGTERM, twice, under load (measureStops).
// One watch of every pod judges the GPUs' ledger across the restarts: no GPU may ever hold
// more than it has.

// Namespaces of the fill and of the gang that waits for the restart.
const (
	restartNamespaces = "bench-restart-"
	restartFill       = restartNamespaces + "fill"
	restartProbe      = restartNamespaces + "probe"
	restartLoad       = restartNamespaces + "load"
)

// restartReport is one run of the restart benchmark.
type restartReport struct {
	Workload string `json:"workload"`
	Date     string `json:"date"`
	Host     string `json:"host"`
	Nodes    int    `json:"nodes"`
	GPUs     int    `json:"gpus"`
	// The fill, before the kill.
	FillPods int   `json:"fillPods"`
	Fill     binds `json:"fill"`
	// From the second start.
	ReadySeconds      float64 `json:"readySeconds"`
	FirstCycleSeconds float64 `json:"firstCycleSeconds"`
	FirstBindSeconds  float64 `json:"firstBindSeconds"`
	ProbePods         int     `json:"probePods"`
	// FirstCycleTookSeconds is the first cycle's own length, as the scheduler logs it.
	FirstCycleTookSeconds float64 `json:"firstCycleTookSeconds"`
	// CatchUpSeconds is the new leader's catch-up before its first cycle, as it logs it;
	// CatchUpSkipped that it had none to do, its cache having started after the Lease was
	// free.
	CatchUpSeconds float64 `json:"catchUpSeconds"`
	CatchUpSkipped bool    `json:"catchUpSkipped"`
	// ListAllSeconds is how long one client takes to list every pod and then every node, as
	// protobuf, while no scheduler runs: the API server's part of any start, a floor under
	// the time to ready on the same machine.
	ListAllSeconds float64 `json:"listAllSeconds"`
	PeakRSSMiB     float64 `json:"peakRSSMiB"`
	// StartRequests is the API requests made from the second start to the first bind, by HTTP
	// method.
	StartRequests map[string]float64 `json:"startRequests"`
	// GPUsEverOver must be 0; Unassigned (bound pods without an assignment) too.
	GPUsEverOver int      `json:"gpusEverOver"`
	OverExamples []string `json:"overExamples,omitempty"`
	Unassigned   int      `json:"unassigned"`
	// SIGTERM, from the signal to the process's exit, while a wave of new jobs is created
	// and bound (measureStops): StopSeconds for the restarted leader, binding; and
	// FirstCycleStopSeconds for a third start signalled as its catch-up ends, that is as its
	// first cycle's snapshot begins (the heaviest cycle there is), FirstCycleCutShort whether
	// that cycle was cut short. LeaseHandedOver: both left the Lease free, or held it past
	// exit for Bindings they cut off.
	StopSeconds           float64 `json:"stopSeconds"`
	FirstCycleStopSeconds float64 `json:"firstCycleStopSeconds"`
	FirstCycleCutShort    bool    `json:"firstCycleCutShort"`
	LeaseHandedOver       bool    `json:"leaseHandedOver"`
}

// runRestart runs the restart benchmark once on nodes nodes and removes what it created.
func runRestart(ctx context.Context, o options, nodes int) (err error) {
	w, cs, vc, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	if err := deleteNodes(ctx, cs); err != nil {
		return err
	}
	if err := waitNoNodes(ctx, cs); err != nil {
		return err
	}
	defer func() {
		// An interrupt ends ctx.
		if e := cleanRun(context.Background(), cs, vc, o, restartFill, restartProbe, restartLoad); e != nil && err == nil {
			err = e
		}
	}()
	if err := ensureNodes(ctx, cs, w, nodes); err != nil {
		return err
	}
	s := schedulerBinaryRun(o, o.profile)
	first, ledger, err := startWatched(ctx, cs, vc, s)
	if err != nil {
		return err
	}
	defer first.stop()
	defer ledger.stop()

	rep := &restartReport{Workload: w.Name, Date: time.Now().UTC().Format(time.RFC3339), Host: hostDescription(),
		Nodes: nodes, GPUs: nodes * w.Node.GPUs, FillPods: w.PodCount(nodes)}
	klog.InfoS("Fill", "nodes", nodes, "pods", rep.FillPods)
	if rep.Fill, err = runWave(ctx, cs, vc, o, w, s.schedulerName, restartFill, rep.FillPods); err != nil {
		return err
	}
	if rep.Fill.Bound < rep.FillPods {
		return fmt.Errorf("the fill: %d of %d pods bound; unbound: %s", rep.Fill.Bound, rep.FillPods,
			strings.Join(unboundReasons(ctx, cs, restartFill, 5), "; "))
	}
	if err := waitPodGroupsRunning(ctx, vc, restartFill, podGroupSettle); err != nil {
		klog.ErrorS(err, "The fill's PodGroup statuses not all written before the kill", "namespace", restartFill)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		return err
	}
	<-first.done
	if rep.ListAllSeconds, err = listAll(ctx, o.kubeconfig); err != nil {
		return err
	}

	// The first job of the workload's mix waits for the restarted scheduler.
	if err := createNamespace(ctx, cs, restartProbe); err != nil {
		return err
	}
	watcher, err := watchBinds(ctx, cs, restartProbe)
	if err != nil {
		return err
	}
	defer watcher.stop()
	probe := w.Jobs(restartProbe, s.schedulerName, w.PodCount(1))[:1]
	for _, job := range probe {
		rep.ProbePods += len(job.Pods)
	}
	if err := createJobs(ctx, cs, vc, w, probe, watcher); err != nil {
		return err
	}

	// The Lease's namespace, without a Lease an earlier run may have left held.
	if err := createNamespace(ctx, cs, restartLeaseNamespace); err != nil {
		return err
	}
	if err := cs.CoordinationV1().Leases(restartLeaseNamespace).Delete(ctx, restartLease, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the Lease %s/%s of an earlier run: %w", restartLeaseNamespace, restartLease, err)
	}

	klog.InfoS("Restart", "nodes", nodes, "boundPods", rep.FillPods)
	start := time.Now()
	// The restarted scheduler runs with leader election, as the chart runs it, so its start
	// includes taking the Lease and the new leader's catch-up (cache.CatchUp). The fill's
	// scheduler ran without, so there is no dead holder's Lease to wait out.
	second, err := startChild(withLeaderElection(s.args))
	if err != nil {
		return err
	}
	defer second.stop()
	if o.profile {
		profiled := profileStart(ctx, o.out)
		defer profiled.Wait()
	}
	since := func() float64 { return time.Since(start).Seconds() }
	if err := waitHTTP(ctx, "http://"+schedulerHealthz+"/healthz", func(string) bool { return true }); err != nil {
		return fmt.Errorf("not ready after the restart: %w\n%s", err, second.log.tail(20))
	}
	rep.ReadySeconds = since()
	// The scheduler logs its first cycle's end: scraping /metrics every few milliseconds for it
	// would load the scheduler it measures (the page lists every job).
	var firstCycle []string
	if err := poll(ctx, 5*time.Minute, func() bool {
		firstCycle = firstCycleLine.FindStringSubmatch(second.log.String())
		return firstCycle != nil
	}); err != nil {
		return fmt.Errorf("no cycle after the restart: %w\n%s", err, second.log.tail(20))
	}
	rep.FirstCycleSeconds = since()
	if d, err := time.ParseDuration(firstCycle[1]); err == nil {
		rep.FirstCycleTookSeconds = d.Seconds()
	}
	if m := catchUpLine.FindStringSubmatch(second.log.String()); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			rep.CatchUpSeconds = d.Seconds()
		}
	}
	rep.CatchUpSkipped = noCatchUpLine.MatchString(second.log.String())
	if err := poll(ctx, time.Minute, func() bool { return !watcher.firstBind().IsZero() }); err != nil {
		return fmt.Errorf("the waiting gang was not bound after the restart: %w\n%s", err, second.log.tail(20))
	}
	rep.FirstBindSeconds = watcher.firstBind().Sub(start).Seconds()
	sample, err := readProc(second.cmd.Process.Pid)
	if err != nil {
		return err
	}
	rep.PeakRSSMiB = float64(sample.peakRSS) / (1 << 20)
	page, err := get(ctx, "http://"+schedulerListen+"/metrics")
	if err != nil {
		return err
	}
	rep.StartRequests = map[string]float64{}
	for _, m := range families(page)["rest_client_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" {
				rep.StartRequests[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	watcher.waitAll(ctx, rep.ProbePods, o.stall)
	if err := os.WriteFile(filepath.Join(o.out, "restart-vc-scheduler.log"), []byte(second.log.String()), 0o644); err != nil {
		return err
	}
	if err := measureStops(ctx, stopRun{cs: cs, vc: vc, o: o, w: w, s: s}, second, rep); err != nil {
		return err
	}
	seen := ledger.summary()
	rep.GPUsEverOver, rep.Unassigned = len(seen.over), seen.unassigned
	rep.OverExamples = seen.over[:min(5, len(seen.over))]
	if err := rep.write(o.out); err != nil {
		return err
	}
	fmt.Print(rep.markdown())
	if o.check {
		return rep.check()
	}
	return nil
}

// stopRun is what measureStops needs of the run.
type stopRun struct {
	cs kubernetes.Interface
	vc vcclient.Interface
	o  options
	w  *workload.Workload
	s  schedulerRun
}

// measureStops times SIGTERM twice, under load: a new wave of the workload's jobs (a tenth of
// the fill) is being created and bound. First the leader, once it has bound some of the
// wave's pods (binds in flight); then a new leader inside its first cycle (started again,
// signalled the moment it logs its catch-up done or skipped). Each must hand the Lease over
// as it exits, or hold it past exit for Bindings it cut off.
func measureStops(ctx context.Context, r stopRun, leader *child, rep *restartReport) error {
	if err := createNamespace(ctx, r.cs, restartLoad); err != nil {
		return err
	}
	watcher, err := watchBinds(ctx, r.cs, restartLoad)
	if err != nil {
		return err
	}
	defer watcher.stop()
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan error, 1)
	go func() {
		loaded <- createJobs(loadCtx, r.cs, r.vc, r.w, r.w.Jobs(restartLoad, r.s.schedulerName, rep.FillPods/10), watcher)
	}()
	defer func() {
		stopLoad()
		<-loaded
	}()
	if err := poll(ctx, time.Minute, func() bool { return len(watcher.boundPods()) >= rep.FillPods/100 }); err != nil {
		return fmt.Errorf("the load's pods were not being bound: %w\n%s", err, leader.log.tail(20))
	}
	rep.StopSeconds = leader.terminate()
	// Its log again, now with how it stopped.
	if err := os.WriteFile(filepath.Join(r.o.out, "restart-vc-scheduler.log"), []byte(leader.log.String()), 0o644); err != nil {
		klog.ErrorS(err, "Restarted scheduler's log not saved")
	}
	first, err := leaseLeft(ctx, r.cs, leader)
	if err != nil {
		return err
	}
	next, err := startChild(withLeaderElection(r.s.args))
	if err != nil {
		return err
	}
	defer next.stop()
	// Every 5 ms: the signal must reach the cycle that follows the line, not the next one.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		log := next.log.String()
		return catchUpLine.MatchString(log) || noCatchUpLine.MatchString(log), nil
	}); err != nil {
		return fmt.Errorf("no catch-up after the third start: %w\n%s", err, next.log.tail(20))
	}
	rep.FirstCycleStopSeconds = next.terminate()
	rep.FirstCycleCutShort = cutShortLine.MatchString(next.log.String())
	second, err := leaseLeft(ctx, r.cs, next)
	if err != nil {
		return err
	}
	rep.LeaseHandedOver = first && second
	if err := os.WriteFile(filepath.Join(r.o.out, "restart-stop-vc-scheduler.log"), []byte(next.log.String()), 0o644); err != nil {
		klog.ErrorS(err, "Third start's log not saved")
	}
	klog.InfoS("SIGTERM", "betweenCycles", rep.StopSeconds, "inFirstCycle", rep.FirstCycleStopSeconds,
		"cutShort", rep.FirstCycleCutShort, "leaseHandedOver", rep.LeaseHandedOver, "loadBound", len(watcher.boundPods()))
	return nil
}

// cutShortLine is vc-scheduler's log line when a cycle stops early for SIGTERM (the first
// cycle's line, firstCycleLine, follows it all the same).
var cutShortLine = regexp.MustCompile(`"Scheduling cycle cut short: stopping"`)

// leaseLeft reports whether the exited scheduler left the restart's Lease as it should: free,
// or held past its exit for Bindings it cut off (it logs so).
func leaseLeft(ctx context.Context, cs kubernetes.Interface, exited *child) (bool, error) {
	lease, err := cs.CoordinationV1().Leases(restartLeaseNamespace).Get(ctx, restartLease, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the Lease %s/%s: %w", restartLeaseNamespace, restartLease, err)
	}
	free := lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == ""
	return free || heldLine.MatchString(exited.log.String()), nil
}

// heldLine is vc-scheduler's log line when it holds the Lease past its exit.
var heldLine = regexp.MustCompile(`"Holding the Lease past exit`)

// listAll times one list of every pod and then of every node, as protobuf (as vc-scheduler
// lists them).
func listAll(ctx context.Context, kubeconfig string) (float64, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, err
	}
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list every pod: %w", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list every node: %w", err)
	}
	took := time.Since(start).Seconds()
	klog.InfoS("Listed every pod and node", "pods", len(pods.Items), "nodes", len(nodes.Items), "seconds", took)
	return took, nil
}

// profileStart takes the restarted scheduler's CPU profile and execution trace of its first
// restartProfileSeconds (restart-cpu.pprof, restart-trace.out under dir): the trace shows
// what the first cycle waits on, which a CPU profile cannot.
func profileStart(ctx context.Context, dir string) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, p := range []struct{ url, file string }{
		{"profile", "restart-cpu.pprof"}, {"trace", "restart-trace.out"},
	} {
		wg.Go(func() {
			url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", schedulerListen, p.url, restartProfileSeconds)
			err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return fetch(ctx, url, filepath.Join(dir, p.file)) == nil, nil
			})
			if err != nil {
				klog.ErrorS(err, "Restart profile not saved", "url", url)
			}
		})
	}
	return &wg
}

// catchUpLine is vc-scheduler's log line when its catch-up as a new leader is done.
var catchUpLine = regexp.MustCompile(`"Cache caught up with the pods' binds".* took="([^"]+)"`)

// noCatchUpLine is its log line when the new leader's cache needs no catch-up.
var noCatchUpLine = regexp.MustCompile(`"Cache started after the previous leader handed the Lease over`)

// withLeaderElection is the scheduler's arguments with leader election on its own Lease.
func withLeaderElection(args []string) []string {
	out := make([]string, 0, len(args)+2)
	for _, a := range args {
		if a != "--leader-elect=false" {
			out = append(out, a)
		}
	}
	return append(out, "--leader-elect=true", "--leader-elect-resource-name="+restartLease)
}

// restartLease is the restart benchmark's Lease, in vc-scheduler's default Lease namespace.
const (
	restartLease          = "volcano-bench-restart"
	restartLeaseNamespace = "volcano-system"
)

// firstCycleLine is vc-scheduler's log line at the end of its first cycle.
var firstCycleLine = regexp.MustCompile(`"First scheduling cycle done" duration="([^"]+)"`)

// restartProfileSeconds covers the start, the first cycle and the first bind at the default
// size.
const restartProfileSeconds = 20

// waitHTTP polls url until it answers 200 with a body ok accepts.
func waitHTTP(ctx context.Context, url string, ok func(body string) bool) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := get(ctx, url)
		last = err
		return err == nil && ok(body), nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return err
}

// get reads url's body; an answer other than 200 is an error.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(body), nil
}

// families parses a Prometheus text page; nil where it cannot.
func families(page string) map[string]*dto.MetricFamily {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	f, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		return nil
	}
	return f
}

// write saves restart.json and restart.md under dir.
func (rep *restartReport) write(dir string) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "restart.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "restart.md"), []byte(rep.markdown()), 0o644)
}

func (rep *restartReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Restart, workload %s, on %s (%s): vc-scheduler with the chart's configuration, killed and started again with leader election.\n\n", rep.Workload, rep.Host, rep.Date)
	b.WriteString("| nodes / GPUs | bound pods (fill s) | start → ready / first cycle ended (its length; the leader's catch-up) / first bind s | one client's list of every pod and node s | peak RSS MiB | API requests until the first bind | SIGTERM → exit s: between cycles / in the first cycle (cut short; Lease handed over) | GPUs ever over capacity, unassigned |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	var requests []string
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if n := rep.StartRequests[method]; n > 0 {
			requests = append(requests, fmt.Sprintf("%s %.0f", method, n))
		}
	}
	fmt.Fprintf(&b, "| %d / %d | %d (%.0f) | %.2f / %.2f (%.2f; %s) / %.2f | %.2f | %.0f | %s | %.2f / %.2f (%s; %s) | %d, %d |\n",
		rep.Nodes, rep.GPUs, rep.Fill.Bound, rep.Fill.Seconds, rep.ReadySeconds, rep.FirstCycleSeconds, rep.FirstCycleTookSeconds, catchUp(rep), rep.FirstBindSeconds,
		rep.ListAllSeconds, rep.PeakRSSMiB, strings.Join(requests, ", "), rep.StopSeconds, rep.FirstCycleStopSeconds,
		yesNo(rep.FirstCycleCutShort), yesNo(rep.LeaseHandedOver), rep.GPUsEverOver, rep.Unassigned)
	for _, o := range rep.OverExamples {
		fmt.Fprintf(&b, "- over capacity: %s\n", o)
	}
	return b.String()
}

// check fails a run whose ledger was ever wrong, whose first bind after the restart took
// more than restartFirstBindTarget, or whose SIGTERM took more than restartStopTarget or did
// not hand the Lease over.
func (rep *restartReport) check() error {
	if rep.GPUsEverOver > 0 || rep.Unassigned > 0 || rep.FirstBindSeconds > restartFirstBindTarget.Seconds() {
		return fmt.Errorf("restart on %d nodes: first bind %.2f s after the start (target %s), %d GPUs over capacity (%s), %d pods without an assignment",
			rep.Nodes, rep.FirstBindSeconds, restartFirstBindTarget, rep.GPUsEverOver, strings.Join(rep.OverExamples, "; "), rep.Unassigned)
	}
	if max(rep.StopSeconds, rep.FirstCycleStopSeconds) > restartStopTarget.Seconds() || !rep.LeaseHandedOver {
		return fmt.Errorf("restart on %d nodes: SIGTERM to exit %.2f s between cycles and %.2f s in the first cycle (target %s), Lease handed over: %s",
			rep.Nodes, rep.StopSeconds, rep.FirstCycleStopSeconds, restartStopTarget, yesNo(rep.LeaseHandedOver))
	}
	return nil
}

// restartFirstBindTarget is the target at 5,000 nodes and 50,000 pods; restartStopTarget
// SIGTERM's, in any cycle (the chart gives the pod 5 s).
const (
	restartFirstBindTarget = 10 * time.Second
	restartStopTarget      = 2 * time.Second
)

// catchUp is the catch-up's cell: its seconds, or that there was none to do.
func catchUp(rep *restartReport) string {
	if rep.CatchUpSkipped {
		return "none needed"
	}
	return fmt.Sprintf("%.2f", rep.CatchUpSeconds)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
