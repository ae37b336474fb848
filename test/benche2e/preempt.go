package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// The preemption benchmark (benche2e preempt): vc-scheduler with the chart's configuration and
// preempt, on kwok GPU nodes that a first wave of low-priority pods fills (set-up, timed), then
// a second wave of high-priority pods that fit only where low pods are evicted
// (test/workload/preempt.yaml). It measures the preemptors' create -> bound, the evictions per
// preemptor against the least that lets each fit (workload.MinEvictions), the scheduler's API
// writes per eviction from the audit log, and, from one watch of every pod, whether any GPU
// ever held more than it has (gpuLedger).

// Namespaces of the two waves: bench- so that cleanLeftovers removes them after a run that
// was stopped, and both under preemptNamespaces, which the write count keeps to.
const (
	preemptNamespaces  = "bench-preempt-"
	fillNamespace      = preemptNamespaces + "low"
	preemptorNamespace = preemptNamespaces + "high"
)

// evictMessage is the message of the Warning Evict event the scheduler gives a victim of
// preempt (pkg/scheduler/cache/evictor.go).
const evictMessage = "Pod is evicted, because of preempt"

// preemptReport is one run of the preemption benchmark.
type preemptReport struct {
	Workload string `json:"workload"`
	Date     string `json:"date"`
	Host     string `json:"host"`
	Nodes    int    `json:"nodes"`
	GPUs     int    `json:"gpus"`
	// The first wave: set-up, its time reported.
	FillPods                int     `json:"fillPods"`
	Fill                    binds   `json:"fill"`
	FillSchedulerCPUSeconds float64 `json:"fillSchedulerCPUSeconds"`
	// The second wave.
	PreemptorPods int   `json:"preemptorPods"`
	Preemptors    binds `json:"preemptors"`
	// From the last pod leaving a preemptor's GPU to the preemptor's bind.
	HandoverP50Seconds float64 `json:"handoverP50Seconds"`
	HandoverP99Seconds float64 `json:"handoverP99Seconds"`
	HandoverMaxSeconds float64 `json:"handoverMaxSeconds"`
	// Evicted is the first wave's pods deleted while the second was scheduled; EvictEvents the
	// Warning Evict events for preempt on them.
	Evicted                  int     `json:"evicted"`
	EvictEvents              int     `json:"evictEvents"`
	EvictionsPerPreemptor    float64 `json:"evictionsPerPreemptor"`
	MinEvictionsPerPreemptor int     `json:"minEvictionsPerPreemptor"`
	// GPUsEverOver is the GPUs seen holding more slots, memory or cores than they have after
	// any pod event of the run; it must be 0. OverExamples says what a few held.
	GPUsEverOver int      `json:"gpusEverOver"`
	OverExamples []string `json:"overExamples,omitempty"`
	// Unassigned is bound pods without a readable assignment; it must be 0.
	Unassigned int `json:"unassigned"`
	// Writes are vc-scheduler's API writes on the waves' objects while the second wave was
	// scheduled, by "verb resource", from the audit log (cluster-scoped writes, such as the
	// queue's status, left out): the evictions' own and the preemptors' binds, statuses and
	// events, all divided by the evictions in WritesPerEviction.
	Writes            map[string]int `json:"writes"`
	WritesPerEviction float64        `json:"writesPerEviction"`
	// The scheduler's CPU while the second wave was scheduled, and its peak RSS.
	SchedulerCPUSeconds float64  `json:"schedulerCPUSeconds"`
	SchedulerPeakRSSMiB float64  `json:"schedulerPeakRSSMiB"`
	Unbound             []string `json:"unbound,omitempty"`
}

// runPreempt runs the preemption benchmark once on nodes nodes and removes what it created.
func runPreempt(ctx context.Context, o options, nodes int) (err error) {
	w, cs, vc, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	preemptors := w.PreemptorWave()
	if preemptors == nil {
		return fmt.Errorf("workload %s has no preemptors", o.workloadPath)
	}
	// Nodes an earlier run left may have another workload's shape.
	if err := deleteNodes(ctx, cs); err != nil {
		return err
	}
	if err := waitNoNodes(ctx, cs); err != nil {
		return err
	}
	// Clean-up runs on failure too, on a context of its own: an interrupt ends ctx.
	defer func() {
		cleanup := context.Background()
		for name := range w.PriorityClasses {
			if e := cs.SchedulingV1().PriorityClasses().Delete(cleanup, name, metav1.DeleteOptions{}); e != nil && !apierrors.IsNotFound(e) && err == nil {
				err = e
			}
		}
		if e := cleanRun(cleanup, cs, vc, o, fillNamespace, preemptorNamespace); e != nil && err == nil {
			err = e
		}
	}()
	if err := ensureNodes(ctx, cs, w, nodes); err != nil {
		return err
	}
	if err := createPriorityClasses(ctx, cs, w.PriorityClasses); err != nil {
		return err
	}
	if o.schedulerCfg, err = writePreemptConf(o.schedulerCfg, o.out); err != nil {
		return err
	}
	s := schedulerBinaryRun(o, false)
	child, ledger, err := startWatched(ctx, cs, vc, s)
	if err != nil {
		return err
	}
	defer child.stop()
	defer ledger.stop()

	rep := &preemptReport{Workload: w.Name, Date: time.Now().UTC().Format(time.RFC3339), Host: hostDescription(),
		Nodes: nodes, GPUs: nodes * w.Node.GPUs, FillPods: w.PodCount(nodes), PreemptorPods: preemptors.PodCount(nodes),
		MinEvictionsPerPreemptor: w.MinEvictions()}
	klog.InfoS("Fill", "nodes", nodes, "pods", rep.FillPods)
	fillBefore, err := readProc(child.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("%s's CPU: %w", s.name, err)
	}
	rep.Fill, err = runWave(ctx, cs, vc, o, w, s.schedulerName, fillNamespace, rep.FillPods)
	if err != nil {
		return err
	}
	if rep.Fill.Bound < rep.FillPods {
		return fmt.Errorf("the first wave: %d of %d pods bound; unbound: %s", rep.Fill.Bound, rep.FillPods,
			strings.Join(unboundReasons(ctx, cs, fillNamespace, 5), "; "))
	}
	// The first wave's PodGroup statuses and events are written before the second wave's
	// count starts.
	if err := waitPodGroupsRunning(ctx, vc, fillNamespace, podGroupSettle); err != nil {
		klog.ErrorS(err, "The first wave's PodGroup statuses not all written; the rest may count as the second's", "namespace", fillNamespace)
	}
	if err := waitQuiet(ctx, o.auditLog, s.userAgent(), preemptNamespaces, 2*time.Second, podGroupSettle); err != nil {
		klog.ErrorS(err, "The first wave's writes may count as the second's")
	}

	audit := markAudit(o.auditLog)
	cpuBefore, err := readProc(child.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("%s's CPU: %w", s.name, err)
	}
	rep.FillSchedulerCPUSeconds = (cpuBefore.cpu - fillBefore.cpu).Seconds()
	klog.InfoS("Preemptors", "nodes", nodes, "pods", rep.PreemptorPods)
	rep.Preemptors, err = runWave(ctx, cs, vc, o, preemptors, s.schedulerName, preemptorNamespace, rep.PreemptorPods)
	if err != nil {
		return err
	}
	if rep.Preemptors.Bound == rep.PreemptorPods {
		if err := waitPodGroupsRunning(ctx, vc, preemptorNamespace, podGroupSettle); err != nil {
			klog.ErrorS(err, "PodGroup statuses not all written; their writes are not counted", "namespace", preemptorNamespace)
		}
	}
	cpuAfter, err := readProc(child.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("%s's CPU: %w", s.name, err)
	}
	// Its own metrics (cycle and action latencies) tell where a preemptor's time went.
	if err := fetch(ctx, "http://"+schedulerListen+"/metrics", filepath.Join(o.out, "preempt-metrics.txt")); err != nil {
		klog.ErrorS(err, "Metrics not saved")
	}
	// Stopping drains the evictions and events the scheduler had queued: they count too.
	child.stop()
	if err := waitFillSettled(ctx, cs, ledger, rep.FillPods); err != nil {
		klog.ErrorS(err, "Evictions may be counted short")
	}
	if rep.Writes, err = countWrites(audit, s.userAgent(), preemptNamespaces); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "preempt-vc-scheduler.log"), []byte(child.log.String()), 0o644); err != nil {
		return err
	}
	seen := ledger.summary()
	rep.Evicted = seen.released[fillNamespace]
	if rep.EvictEvents, err = countEvictEvents(ctx, cs, fillNamespace); err != nil {
		return err
	}
	rep.EvictionsPerPreemptor = ratioOf(rep.Evicted, rep.Preemptors.Bound)
	rep.WritesPerEviction = perPod(rep.Writes, rep.Evicted)
	rep.HandoverP50Seconds, rep.HandoverP99Seconds, rep.HandoverMaxSeconds = quantiles(seen.handover[preemptorNamespace])
	rep.GPUsEverOver, rep.Unassigned = len(seen.over), seen.unassigned
	rep.OverExamples = seen.over[:min(5, len(seen.over))]
	rep.SchedulerCPUSeconds = (cpuAfter.cpu - cpuBefore.cpu).Seconds()
	rep.SchedulerPeakRSSMiB = float64(cpuAfter.peakRSS) / (1 << 20)
	if rep.Preemptors.Bound < rep.PreemptorPods {
		rep.Unbound = unboundReasons(ctx, cs, preemptorNamespace, 5)
	}
	if err := rep.write(o.out); err != nil {
		return err
	}
	fmt.Print(rep.markdown())
	klog.InfoS("Wrote the preemption benchmark's results", "json", filepath.Join(o.out, "preempt.json"), "markdown", filepath.Join(o.out, "preempt.md"))
	if o.check {
		return rep.check()
	}
	return nil
}

// runWave creates pods pods of w in ns, as the end-to-end run creates its workload, and waits
// until they are bound or none was for o.stall.
func runWave(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface, o options, w *workload.Workload, schedulerName, ns string, pods int) (binds, error) {
	if err := createNamespace(ctx, cs, ns); err != nil {
		return binds{}, err
	}
	watcher, err := watchBinds(ctx, cs, ns)
	if err != nil {
		return binds{}, err
	}
	defer watcher.stop()
	start := time.Now()
	if err := createJobs(ctx, cs, vc, w, w.Jobs(ns, schedulerName, pods), watcher); err != nil {
		return binds{}, err
	}
	return watcher.measure(start, watcher.waitAll(ctx, pods, o.stall)), nil
}

// writePreemptConf writes the configuration at path with preempt after allocate into dir, and
// returns the file written.
func writePreemptConf(path, dir string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	const actions, withPreempt = `"enqueue, allocate, backfill"`, `"enqueue, allocate, preempt, backfill"`
	if !strings.Contains(string(data), actions) {
		return "", fmt.Errorf("%s: no actions %s to add preempt to", path, actions)
	}
	out := filepath.Join(dir, "preempt-scheduler.conf")
	return out, os.WriteFile(out, []byte(strings.Replace(string(data), actions, withPreempt, 1)), 0o644)
}

// createPriorityClasses creates the classes, or sets the value of one that exists.
func createPriorityClasses(ctx context.Context, cs kubernetes.Interface, classes map[string]int32) error {
	for name, value := range classes {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		_, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// A class's value cannot be changed: one an earlier run left with another goes.
			old, getErr := cs.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
			if getErr == nil && old.Value == value {
				continue
			}
			if err := cs.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("priority class %s: %w", name, err)
			}
			_, err = cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("create priority class %s: %w", name, err)
		}
	}
	return nil
}

// startWatched starts s with one watch of every pod of its scheduler name judging the GPUs
// of the bench nodes (watchLedger).
func startWatched(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface, s schedulerRun) (*child, *ledgerWatcher, error) {
	c, err := startScheduler(ctx, vc, s)
	if err != nil {
		return nil, nil, err
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true"})
	if err == nil {
		var ledger *ledgerWatcher
		if ledger, err = watchLedger(ctx, cs, s.schedulerName, list.Items); err == nil {
			return c, ledger, nil
		}
	}
	c.stop()
	return nil, nil, err
}

// cleanRun removes a run's namespaces and, unless o.keepNodes, its nodes; the first error
// is returned, the rest still tried.
func cleanRun(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface, o options, namespaces ...string) error {
	var first error
	for _, ns := range namespaces {
		if e := cleanNamespace(ctx, cs, vc, ns); e != nil && !apierrors.IsNotFound(e) && first == nil {
			first = e
		}
	}
	if !o.keepNodes {
		if e := deleteNodes(ctx, cs); e != nil && first == nil {
			first = e
		}
	}
	return first
}

// waitNoNodes waits until no node has the bench label.
func waitNoNodes(ctx context.Context, cs kubernetes.Interface) error {
	return poll(ctx, 2*time.Minute, func() bool {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true", Limit: 1})
		return err == nil && len(list.Items) == 0
	})
}

// waitFillSettled waits until the watch has seen every deletion of a first-wave pod: the
// first wave's pods left in the API server, none of them terminating, and those seen deleted
// add up to all of them.
func waitFillSettled(ctx context.Context, cs kubernetes.Interface, ledger *ledgerWatcher, pods int) error {
	var left, gone int
	err := poll(ctx, 30*time.Second, func() bool {
		list, err := cs.CoreV1().Pods(fillNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				return false
			}
		}
		left, gone = len(list.Items), ledger.summary().released[fillNamespace]
		return left+gone == pods
	})
	if err != nil {
		return fmt.Errorf("first wave: %d pods left and %d seen deleted, of %d: %w", left, gone, pods, err)
	}
	return nil
}

// countEvictEvents counts the pods of ns with a Warning Evict event for preempt.
func countEvictEvents(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
	events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evict"})
	if err != nil {
		return 0, err
	}
	pods := map[string]bool{}
	for _, ev := range events.Items {
		if ev.Type == corev1.EventTypeWarning && ev.Message == evictMessage {
			pods[ev.InvolvedObject.Name] = true
		}
	}
	return len(pods), nil
}

func ratioOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// write saves preempt.json and preempt.md under dir.
func (rep *preemptReport) write(dir string) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "preempt.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "preempt.md"), []byte(rep.markdown()), 0o644)
}

func (rep *preemptReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Preemption, workload %s, on %s (%s): vc-scheduler with the chart's configuration and preempt.\n\n", rep.Workload, rep.Host, rep.Date)
	b.WriteString("| nodes / GPUs | fill: low pods bound, s (pods/s), scheduler CPU s | preemptors bound | create → bound p50 / p99 / max s | last victim gone → bound p50 / p99 s | evictions / preemptor (minimum) | Evict events | GPUs ever over capacity | API writes / eviction | scheduler CPU s, peak RSS MiB |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %d / %d | %d of %d, %.1f (%.0f), %.1f | %d of %d | %.2f / %.2f / %.2f | %.2f / %.2f | %.2f (%d) | %d | %d | %.2f | %.1f, %.0f |\n",
		rep.Nodes, rep.GPUs, rep.Fill.Bound, rep.FillPods, rep.Fill.Seconds, rep.Fill.PodsPerSecond, rep.FillSchedulerCPUSeconds, rep.Preemptors.Bound, rep.PreemptorPods,
		rep.Preemptors.P50Seconds, rep.Preemptors.P99Seconds, rep.Preemptors.MaxSeconds, rep.HandoverP50Seconds, rep.HandoverP99Seconds,
		rep.EvictionsPerPreemptor, rep.MinEvictionsPerPreemptor, rep.EvictEvents, rep.GPUsEverOver, rep.WritesPerEviction,
		rep.SchedulerCPUSeconds, rep.SchedulerPeakRSSMiB)
	fmt.Fprintf(&b, "\nvc-scheduler's API writes on the waves' objects while the preemptors were scheduled, for %d evictions: %s\n", rep.Evicted, writesList(rep.Writes))
	for _, o := range rep.OverExamples {
		fmt.Fprintf(&b, "- over capacity: %s\n", o)
	}
	for _, u := range rep.Unbound {
		fmt.Fprintf(&b, "- unbound: %s\n", u)
	}
	return b.String()
}

// check fails a run that left a preemptor unbound, bound a pod without its assignment, let a
// GPU hold more than it has at any moment, or evicted more pods than the least that lets its
// preemptors fit (workload.MinEvictions each).
func (rep *preemptReport) check() error {
	if rep.Preemptors.Bound < rep.PreemptorPods || rep.Unassigned > 0 || rep.GPUsEverOver > 0 ||
		rep.Evicted > rep.MinEvictionsPerPreemptor*rep.Preemptors.Bound {
		return fmt.Errorf("preempt on %d nodes: %d of %d preemptors bound, %d evictions (the minimum %d each), %d pods without an assignment, %d GPUs over capacity (%s); unbound: %s",
			rep.Nodes, rep.Preemptors.Bound, rep.PreemptorPods, rep.Evicted, rep.MinEvictionsPerPreemptor, rep.Unassigned,
			rep.GPUsEverOver, strings.Join(rep.OverExamples, "; "), strings.Join(rep.Unbound, "; "))
	}
	return nil
}
