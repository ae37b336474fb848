package main

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// result is one run: one size under one program.
type result struct {
	Scheduler string `json:"scheduler"`
	Nodes     int    `json:"nodes"`
	Pods      int    `json:"pods"`
	binds
	// From the job's last create (its gang complete) to bound: what a gang scheduler can
	// shorten, the wait for siblings left out.
	CompleteP50Seconds float64 `json:"completeP50Seconds"`
	CompleteP99Seconds float64 `json:"completeP99Seconds"`
	// From a pod seen bound to its Scheduled Event seen (vc-scheduler's; measured after it
	// stopped and flushed), and the bound pods whose Event never came.
	EventLagP50Seconds float64 `json:"eventLagP50Seconds,omitempty"`
	EventLagP99Seconds float64 `json:"eventLagP99Seconds,omitempty"`
	EventLagMaxSeconds float64 `json:"eventLagMaxSeconds,omitempty"`
	NoEvent            int     `json:"noEvent,omitempty"`
	// Writes are the program's API writes by "verb resource", from the audit log.
	Writes              map[string]int `json:"writes"`
	WritesPerPod        float64        `json:"writesPerPod"`
	APIServerCPUSeconds float64        `json:"apiServerCPUSeconds"`
	SchedulerCPUSeconds float64        `json:"schedulerCPUSeconds"`
	SchedulerPeakRSSMiB float64        `json:"schedulerPeakRSSMiB"`
	NodesUsed           int            `json:"nodesUsed"`
	GPUsUsed            int            `json:"gpusUsed,omitempty"`
	OptimumNodes        int            `json:"optimumNodes"`
	OptimumGPUs         int            `json:"optimumGPUs"`
	// Overbooked is GPUs holding more vGPUs, memory or cores than they have; Unassigned is
	// bound pods without a readable assignment. Both must be 0 for vc-scheduler.
	Overbooked int      `json:"overbooked"`
	Unassigned int      `json:"unassigned"`
	Unbound    []string `json:"unbound,omitempty"`
}

// binds is what a bind watcher saw of one set of creates.
type binds struct {
	Bound int `json:"bound"`
	// Seconds from the first create request to the last bind seen.
	Seconds       float64 `json:"seconds"`
	PodsPerSecond float64 `json:"podsPerSecond"`
	// Create -> bound.
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
}

// measure is what w saw, from its first create (start when it saw none) to lastBind.
func (w *bindWatcher) measure(start, lastBind time.Time) binds {
	first, fromCreate, _ := w.latencies()
	if first.IsZero() {
		first = start
	}
	b := binds{Bound: len(fromCreate)}
	if d := lastBind.Sub(first).Seconds(); d > 0 {
		b.Seconds, b.PodsPerSecond = d, float64(b.Bound)/d
	}
	b.P50Seconds, b.P99Seconds, b.MaxSeconds = quantiles(fromCreate)
	return b
}

func (r *result) fill(w *bindWatcher, start, lastBind time.Time) {
	r.binds = w.measure(start, lastBind)
	_, _, fromComplete := w.latencies()
	r.CompleteP50Seconds, r.CompleteP99Seconds, _ = quantiles(fromComplete)
}

// quantiles is the p50, p99 and maximum of lat, in seconds; it sorts lat.
func quantiles(lat []time.Duration) (p50, p99, most float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(f float64) float64 { return lat[int(f*float64(len(lat)-1))].Seconds() }
	return q(0.50), q(0.99), lat[len(lat)-1].Seconds()
}

// checkPlacement counts the nodes (and, for a vGPU scheduler, the GPUs) the bound pods use, and
// checks every GPU against what its node registers: slots, memory and cores.
func (r *result) checkPlacement(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod, vgpuAware bool) error {
	nodes := map[string]bool{}
	for _, pod := range pods {
		nodes[pod.Spec.NodeName] = true
	}
	r.NodesUsed = len(nodes)
	if !vgpuAware {
		return nil
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true"})
	if err != nil {
		return err
	}
	l := newGPULedger()
	for i := range list.Items {
		if err := l.addNode(&list.Items[i]); err != nil {
			return err
		}
	}
	for _, pod := range pods {
		l.hold(pod)
	}
	r.GPUsUsed, r.Overbooked, r.Unassigned = l.gpusUsed(), len(l.over), len(l.unassigned)
	return nil
}
