package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
	"golang.org/x/sync/errgroup"
)

// Addresses of the vc-scheduler under test: out of the way of the e2e suites' and the chart's.
const (
	schedulerListen  = "127.0.0.1:18190"
	schedulerHealthz = "127.0.0.1:18191"
)

// schedulerRun is one of the two programs a run is measured under.
type schedulerRun struct {
	name          string // in the results: "binder" or "vc-scheduler"
	schedulerName string // the pods' spec.schedulerName
	args          []string
	ready         func(ctx context.Context, log *lockedBuffer) error
	profile       bool
	// volcano: the program is a Volcano scheduler, whose queue must be Open (Volcano's
	// controller opens it; the local cluster has none) and whose pods carry an assignment.
	volcano bool
}

func binderRun(o options) schedulerRun {
	self, err := os.Executable()
	exitOn(err)
	return schedulerRun{name: "binder", schedulerName: "bench-binder",
		args: []string{self, "binder", "--kubeconfig", o.kubeconfig, "--scheduler-name", "bench-binder"},
		ready: func(ctx context.Context, log *lockedBuffer) error {
			return poll(ctx, time.Minute, func() bool { return strings.Contains(log.String(), binderReady) })
		}}
}

func schedulerBinaryRun(o options, profile bool) schedulerRun {
	return schedulerRun{name: "vc-scheduler", schedulerName: "volcano-bench", profile: profile, volcano: true,
		args: []string{o.schedulerBin, "--kubeconfig", o.kubeconfig, "--scheduler-conf", o.schedulerCfg,
			"--scheduler-name", "volcano-bench", "--node-selector", benchNodeLabel + ":true", "--leader-elect=false",
			"--listen-address", schedulerListen, "--healthz-address", schedulerHealthz, "--enable-healthz", "--enable-metrics",
			"--enable-pprof=" + fmt.Sprint(profile), "-v=1"},
		ready: func(ctx context.Context, _ *lockedBuffer) error {
			// /healthz answers 200 once the cache has synced.
			return poll(ctx, time.Minute, func() bool {
				resp, err := http.Get("http://" + schedulerHealthz + "/healthz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			})
		}}
}

// runPhase runs the workload once under s on a fresh namespace and measures it.
func runPhase(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface, o options, w *workload.Workload, s schedulerRun, nodes, pods int) (*result, error) {
	ns := fmt.Sprintf("bench-%d-%s", nodes, s.name)
	if err := createNamespace(ctx, cs, ns); err != nil {
		return nil, err
	}
	jobs := w.Jobs(ns, s.schedulerName, pods)

	child, err := startScheduler(ctx, vc, s)
	if err != nil {
		return nil, err
	}
	defer child.stop()
	watcher, err := watchBinds(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	defer watcher.stop()

	audit := markAudit(o.auditLog)
	// A process that cannot be read would report 0 CPU seconds: the run fails instead.
	apiBefore, err := readPIDFile(o.apiserverPID)
	if err != nil {
		return nil, fmt.Errorf("the API server's CPU: %w", err)
	}
	childBefore, err := readProc(child.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("%s's CPU: %w", s.name, err)
	}
	var profiles sync.WaitGroup
	profiling, stopProfiling := context.WithCancel(ctx)
	defer stopProfiling()
	if s.profile {
		profiles.Go(func() { profileCPU(profiling, filepath.Join(o.out, "e2e-cpu")) })
	}
	start := time.Now()
	if err := createJobs(ctx, cs, vc, w, jobs, watcher); err != nil {
		return nil, err
	}
	lastBind := watcher.waitAll(ctx, pods, o.stall)
	childAfter, err := readProc(child.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("%s's CPU: %w", s.name, err)
	}
	apiAfter, err := readPIDFile(o.apiserverPID)
	if err != nil {
		return nil, fmt.Errorf("the API server's CPU: %w", err)
	}
	if s.profile {
		stopProfiling()
		profiles.Wait()
		// Profiles are extras: one that cannot be had is logged, not fatal.
		if err := fetch(ctx, "http://"+schedulerListen+"/debug/pprof/heap", filepath.Join(o.out, "e2e-heap.pprof")); err != nil {
			klog.ErrorS(err, "Heap profile not saved")
		}
		// Its own metrics (cycle and action latencies, the bind queue's waits) tell where a
		// pod's time went.
		if err := fetch(ctx, "http://"+schedulerListen+"/metrics", filepath.Join(o.out, "e2e-metrics.txt")); err != nil {
			klog.ErrorS(err, "Metrics not saved")
		}
	}
	if s.volcano {
		// vc-scheduler writes a PodGroup's status some seconds after its binds (to write
		// Running and the running count at once) and drops writes still waiting when it stops:
		// it runs on until every PodGroup shows Running, so that those writes count.
		if err := waitPodGroupsRunning(ctx, vc, ns, podGroupSettle); err != nil {
			klog.ErrorS(err, "PodGroup statuses not all written; their writes are not counted", "namespace", ns)
		}
	}
	// Stopping drains what the program had queued (its events): those writes count too.
	child.stop()
	writes, err := countWrites(audit, s.userAgent(), "")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(o.out, fmt.Sprintf("e2e-%d-%s.log", nodes, s.name))
	if err := os.WriteFile(logPath, []byte(child.log.String()), 0o644); err != nil {
		return nil, err
	}

	r := &result{Scheduler: s.name, Nodes: nodes, Pods: pods}
	r.fill(watcher, start, lastBind)
	r.Writes, r.WritesPerPod = writes, perPod(writes, r.Bound)
	if s.volcano {
		// The last Events, written as the program stopped, reach the watch a moment later.
		var lags []time.Duration
		var missing int
		_ = poll(ctx, 10*time.Second, func() bool { lags, missing = watcher.eventLags(); return missing == 0 })
		r.EventLagP50Seconds, r.EventLagP99Seconds, r.EventLagMaxSeconds = quantiles(lags)
		r.NoEvent = missing
	}
	r.APIServerCPUSeconds = (apiAfter.cpu - apiBefore.cpu).Seconds()
	r.SchedulerCPUSeconds = (childAfter.cpu - childBefore.cpu).Seconds()
	r.SchedulerPeakRSSMiB = float64(childAfter.peakRSS) / (1 << 20)
	r.OptimumGPUs, r.OptimumNodes = w.OptimumGPUs(pods)
	if err := r.checkPlacement(ctx, cs, watcher.boundPods(), s.volcano); err != nil {
		return nil, err
	}
	if r.Bound < pods {
		r.Unbound = unboundReasons(ctx, cs, ns, 5)
	}
	// Logged before the namespace is cleaned, which takes minutes at 50,000 pods: a run
	// stopped then still shows what it measured.
	klog.InfoS("Result", "scheduler", s.name, "nodes", nodes, "podsPerSecond", r.PodsPerSecond, "p50", r.P50Seconds,
		"p99", r.P99Seconds, "writesPerPod", r.WritesPerPod, "bound", r.Bound, "schedulerCPUSeconds", r.SchedulerCPUSeconds,
		"schedulerPeakRSSMiB", r.SchedulerPeakRSSMiB, "apiServerCPUSeconds", r.APIServerCPUSeconds, "nodesUsed", r.NodesUsed,
		"eventLagP99", r.EventLagP99Seconds, "eventLagMax", r.EventLagMaxSeconds, "noEvent", r.NoEvent)
	return r, cleanNamespace(ctx, cs, vc, ns)
}

func createNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// startScheduler starts the program and waits until it is ready and, for a Volcano scheduler,
// its queue is open; the caller stops it.
func startScheduler(ctx context.Context, vc vcclient.Interface, s schedulerRun) (*child, error) {
	c, err := startChild(s.args)
	if err != nil {
		return nil, err
	}
	if err := s.ready(ctx, c.log); err != nil {
		c.stop()
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", s.name, err, c.log.tail(20))
	}
	if s.volcano {
		if err := openQueue(ctx, vc, "default"); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// podGroupSettle bounds the wait for vc-scheduler's last PodGroup status writes.
const podGroupSettle = 2 * time.Minute

// waitPodGroupsRunning polls until every PodGroup in ns is Running, or timeout passes.
func waitPodGroupsRunning(ctx context.Context, vc vcclient.Interface, ns string, timeout time.Duration) error {
	var notRunning int
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		groups, err := vc.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		notRunning = 0
		for _, pg := range groups.Items {
			if pg.Status.Phase != schedulingv1beta1.PodGroupRunning {
				notRunning++
			}
		}
		return notRunning == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d PodGroups not Running after %s: %w", notRunning, timeout, err)
	}
	return nil
}

// userAgent is what the audit log names the program's writes by: client-go's default agent
// starts with the binary's name, and the binder sets its own.
func (s schedulerRun) userAgent() string {
	if s.name == "binder" {
		return "bench-binder"
	}
	return filepath.Base(s.args[0]) + "/"
}

// openQueue sets the queue's status.state to Open, as Volcano's controller does for a new
// queue (the scheduler creates "default" at start, with no state).
func openQueue(ctx context.Context, vc vcclient.Interface, name string) error {
	return poll(ctx, time.Minute, func() bool {
		q, err := vc.SchedulingV1beta1().Queues().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if q.Status.State == schedulingv1beta1.QueueStateOpen {
			return true
		}
		q.Status.State = schedulingv1beta1.QueueStateOpen
		_, err = vc.SchedulingV1beta1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{})
		return err == nil
	})
}

// createJobs creates the PodGroups and pods in order, with the arrival's number of clients.
func createJobs(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface, w *workload.Workload, jobs []workload.Job, watcher *bindWatcher) error {
	next := make(chan workload.Job)
	errs := make(chan error, w.Arrival.Creators)
	var creators sync.WaitGroup
	for range w.Arrival.Creators {
		creators.Go(func() {
			for job := range next {
				if _, err := vc.SchedulingV1beta1().PodGroups(job.PodGroup.Namespace).Create(ctx, job.PodGroup, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create PodGroup %s: %w", job.PodGroup.Name, err)
					return
				}
				if err := createPods(ctx, cs, job.PodGroup.Name, job.Pods, w.Arrival.GangAtOnce, watcher); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var failed error
feed:
	for _, job := range jobs {
		select {
		case next <- job:
		case failed = <-errs:
			break feed
		}
	}
	close(next)
	creators.Wait()
	if failed == nil {
		select {
		case failed = <-errs:
		default:
		}
	}
	return failed
}

// createPods creates the pods of job, all at once or one after another; it returns the first
// error.
func createPods(ctx context.Context, cs kubernetes.Interface, job string, pods []*corev1.Pod, atOnce bool, watcher *bindWatcher) error {
	create := func(pod *corev1.Pod) error {
		watcher.created(pod.Name, job)
		if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		watcher.stored(job)
		return nil
	}
	if !atOnce {
		for _, pod := range pods {
			if err := create(pod); err != nil {
				return err
			}
		}
		return nil
	}
	var g errgroup.Group
	for _, pod := range pods {
		g.Go(func() error { return create(pod) })
	}
	return g.Wait()
}

// cleanNamespace deletes the run's pods and PodGroups at once (grace 0) and waits until the
// pods are gone, so that the next run does not share the API server with the deletion.
func cleanNamespace(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface, ns string) error {
	zero := int64(0)
	// A collection of thousands can outlast the API server's request timeout; the deletion
	// goes on, and the next call takes what is left. With the local cluster's eight
	// delete-collection workers the API server deletes about 190 bound pods a second on 2
	// cores (65 with one; 2026-12-07), so the restart benchmark's full 50,000 take some 4
	// minutes.
	err := poll(ctx, 30*time.Minute, func() bool {
		if err := vc.SchedulingV1beta1().PodGroups(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			klog.ErrorS(err, "Deleting PodGroups; trying again", "namespace", ns)
		}
		if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			klog.ErrorS(err, "Deleting pods; trying again", "namespace", ns)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(pods.Items) > 0 {
			return false
		}
		groups, err := vc.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(groups.Items) == 0
	})
	if err != nil {
		return fmt.Errorf("the pods and PodGroups of %s were not deleted: %w", ns, err)
	}
	return cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

// cleanLeftovers empties and deletes the namespaces an earlier, interrupted run left, and
// waits until they are gone: their PodGroups would be in the next run's scheduler's cluster.
func cleanLeftovers(ctx context.Context, cs kubernetes.Interface, vc vcclient.Interface) error {
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, ns := range list.Items {
		if !strings.HasPrefix(ns.Name, "bench-") {
			continue
		}
		klog.InfoS("Removing a namespace an earlier run left", "namespace", ns.Name)
		if err := cleanNamespace(ctx, cs, vc, ns.Name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		err := poll(ctx, 5*time.Minute, func() bool {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if err != nil {
			return fmt.Errorf("namespace %s was not deleted: %w", ns.Name, err)
		}
	}
	return nil
}

// ensureNodes makes the bench's kwok nodes number n (creating the missing ones) and waits
// until kwok keeps them Ready.
func ensureNodes(ctx context.Context, cs kubernetes.Interface, w *workload.Workload, n int) error {
	errs := make(chan error, n)
	var creators sync.WaitGroup
	names := make(chan string)
	for range 8 {
		creators.Go(func() {
			for name := range names {
				node := w.NodeObject(name)
				node.Labels[benchNodeLabel] = "true"
				node.Annotations["kwok.x-k8s.io/node"] = "fake"
				if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create node %s: %w", name, err)
				}
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("bench-node-%05d", i)
	}
	close(names)
	creators.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return poll(ctx, 2*time.Minute, func() bool {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true"})
		if err != nil || len(list.Items) < n {
			return false
		}
		for _, node := range list.Items {
			if !ready(&node) {
				return false
			}
		}
		return true
	})
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deleteNodes(ctx context.Context, cs kubernetes.Interface) error {
	return cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true"})
}

// unboundReasons is a few pending pods with their PodScheduled message, for the report.
func unboundReasons(ctx context.Context, cs kubernetes.Interface, ns string, n int) []string {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range list.Items {
		msg := "no PodScheduled condition"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				msg = c.Reason + ": " + c.Message
			}
		}
		out = append(out, p.Name+": "+msg)
	}
	sort.Strings(out)
	if len(out) > n {
		out = append(out[:n], fmt.Sprintf("... and %d more", len(out)-n))
	}
	return out
}

// child is the program under test, as its own process so that its CPU and memory are its own.
type child struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
	once sync.Once
}

func startChild(args []string) (*child, error) {
	c := &child{cmd: exec.Command(args[0], args[1:]...), log: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// terminate is stop, returning the seconds from SIGTERM to the program's exit.
func (c *child) terminate() float64 {
	start := time.Now()
	c.stop()
	return time.Since(start).Seconds()
}

// stop ends the program with SIGTERM, then SIGKILL after 30 s.
func (c *child) stop() {
	c.once.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			klog.InfoS("Did not stop in 30s; killing it", "program", c.cmd.Path)
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// poll checks cond every 100 ms until it holds or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
}

// profileCPU takes vc-scheduler's CPU profile for the whole run, as consecutive profiles of
// cpuProfileSeconds (prefix-1.pprof, prefix-2.pprof, ...; go tool pprof merges them when given
// all), until ctx ends. The last one, cut short, is not kept: a cancelled request has no
// profile. Earlier ones from another run are removed first.
func profileCPU(ctx context.Context, prefix string) {
	old, _ := filepath.Glob(prefix + "-*.pprof")
	for _, f := range old {
		os.Remove(f)
	}
	for i := 1; ctx.Err() == nil; i++ {
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", schedulerListen, cpuProfileSeconds)
		if err := fetch(ctx, url, fmt.Sprintf("%s-%d.pprof", prefix, i)); err != nil {
			if ctx.Err() == nil {
				klog.ErrorS(err, "CPU profile not saved", "url", url)
			}
			return
		}
	}
}

// cpuProfileSeconds is the length of each CPU profile of a run: short, so that little of the
// run's end goes unprofiled.
const cpuProfileSeconds = 10

// fetch saves url's body to path, and nothing when ctx ends first.
func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}
