//go:build e2e

package e2e

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// handOver follows a namespace's pods from a watch and judges the GPUs' ledger after every
// event, so an instant in which a GPU holds more than it has cannot slip between two samples.
// It also notes when each pod was first seen bound, and when seen stopped: its phase
// Succeeded or Failed, or the pod gone.
type handOver struct {
	mu       sync.Mutex
	pods     map[string]corev1.Pod
	problems []string
	bound    map[string]time.Time
	stopped  map[string]time.Time
}

// watchHandOver starts following the env's pods; it stops when the test ends.
func (e *schedulerEnv) watchHandOver(nodes map[string][]vgpu.NodeDevice) *handOver {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	list, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	h := &handOver{pods: map[string]corev1.Pod{}, bound: map[string]time.Time{}, stopped: map[string]time.Time{}}
	for _, p := range list.Items {
		h.pods[p.Name] = p
	}
	w, err := e.cs.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			h.mu.Lock()
			now := time.Now()
			if ev.Type == watch.Deleted {
				delete(h.pods, p.Name)
			} else {
				h.pods[p.Name] = *p
				if _, seen := h.bound[p.Name]; !seen && p.Spec.NodeName != "" {
					h.bound[p.Name] = now
				}
			}
			if _, seen := h.stopped[p.Name]; !seen && (ev.Type == watch.Deleted ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
				h.stopped[p.Name] = now
			}
			pods := make([]corev1.Pod, 0, len(h.pods))
			for _, p := range h.pods {
				pods = append(pods, p)
			}
			if _, problems := ledgerProblems(pods, nodes); len(problems) > 0 {
				h.problems = append(h.problems, problems...)
			}
			h.mu.Unlock()
		}
	}()
	return h
}

// report is what the watch saw: ledger problems, and the times pods were bound and stopped.
func (h *handOver) report() (problems []string, bound, stopped map[string]time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.problems...), maps.Clone(h.bound), maps.Clone(h.stopped)
}

// On the real kubelet node, with vgpu-device-plugin serving one 8 GiB GPU and vc-scheduler
// with preempt: two low-priority pods of 3000 MiB run on it; a high-priority pod asking 5000
// MiB evicts exactly one of them (Warning Evict), whose container stops (the kubelet says so
// in its phase) before the preemptor is bound, and whose pod is then gone; the device plugin
// gives the preemptor that GPU with its own 5000 MiB limit, the other low pod keeps running,
// and a watch over the whole hand-over never sees the GPU hold more than 8192 MiB.
func TestVGPUPreemptHandsTheGPUOverOnTheRealNode(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	plugin := devicePlugin(t, e.cs, 1, e.name)
	gpu := plugin.gpus[0]
	nodes := map[string][]vgpu.NodeDevice{realNode: {{UUID: gpu, Count: 10, Memory: 8192}}}
	waitNodeFreeOfOtherVGPUPods(t, e.ns)
	e.claimRealNode()
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	e.scheduler(chartConfWithPreempt(t))
	printenv := func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"printenv"} }
	// A grace period keeps a victim's pod in the API server until the kubelet has stopped its
	// container (at 0, tinyPod's, the pod would go at once).
	grace := func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = new(int64(30)) }

	e.vgpuGangOfClass("low", "", low, 1, 2, 3000, 0, printenv, grace)
	for _, name := range []string{"low-0", "low-1"} {
		podPhase(t, e.cs, e.ns, name, corev1.PodRunning, 90*time.Second)
	}
	watched := e.watchHandOver(nodes)

	e.vgpuGangOfClass("high", "", high, 1, 1, 5000, 0, printenv)
	podPhase(t, e.cs, e.ns, "high-0", corev1.PodRunning, 120*time.Second)

	evicted, err := e.evictedPods(ctx)
	if err != nil || len(evicted) != 1 {
		t.Fatalf("evicted %v (%v), want exactly one low pod", evicted, err)
	}
	victim, kept := evicted[0], map[string]string{"low-0": "low-1", "low-1": "low-0"}[evicted[0]]
	if kept == "" {
		t.Fatalf("evicted %s, want a low pod", victim)
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, victim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("victim %s still exists (%v), want it gone once its container stopped", victim, err)
	}
	if p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, kept, metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("the other low pod %s: %v, want it still running", kept, err)
	}
	problems, bound, stopped := watched.report()
	for _, p := range problems {
		t.Error(p)
	}
	switch {
	case stopped[victim].IsZero() || bound["high-0"].IsZero():
		t.Errorf("the watch never saw victim %s stop (%v) or the preemptor bound (%v)", victim, stopped[victim], bound["high-0"])
	case bound["high-0"].Before(stopped[victim]):
		t.Errorf("the preemptor was bound %s before its victim %s had stopped", stopped[victim].Sub(bound["high-0"]), victim)
	default:
		t.Logf("the preemptor was bound %s after its victim had stopped", bound["high-0"].Sub(stopped[victim]).Round(10*time.Millisecond))
	}
	if got := e.gpuOf(ctx, "high-")["high-0"]; got != gpu {
		t.Errorf("the preemptor's assignment names GPU %q, want the freed %s", got, gpu)
	}
	wantLines(t, "high-0", containerLog(t, e.cs, e.ns, "high-0", "main"), "NVIDIA_VISIBLE_DEVICES="+gpu,
		"CUDA_DEVICE_MEMORY_LIMIT_0=5000m")
	t.Logf("the kubelet now: %s", kubeletDevices(t))
}
