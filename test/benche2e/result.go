package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// result is one run: one size under one program.
type result struct {
	Scheduler string `json:"scheduler"`
	Nodes     int    `json:"nodes"`
	Pods      int    `json:"pods"`
	Bound     int    `json:"bound"`
	// Seconds from the first create request to the last bind seen.
	Seconds       float64 `json:"seconds"`
	PodsPerSecond float64 `json:"podsPerSecond"`
	P50Seconds    float64 `json:"p50Seconds"`
	P99Seconds    float64 `json:"p99Seconds"`
	// From the job's last create (its gang complete) to bound: what a gang scheduler can
	// shorten, the wait for siblings left out.
	CompleteP50Seconds float64 `json:"completeP50Seconds"`
	CompleteP99Seconds float64 `json:"completeP99Seconds"`
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

func (r *result) fill(w *bindWatcher, start, lastBind time.Time) {
	first, fromCreate, fromComplete := w.latencies()
	if first.IsZero() {
		first = start
	}
	r.Bound = len(fromCreate)
	if d := lastBind.Sub(first).Seconds(); d > 0 {
		r.Seconds, r.PodsPerSecond = d, float64(r.Bound)/d
	}
	r.P50Seconds, r.P99Seconds = quantiles(fromCreate)
	r.CompleteP50Seconds, r.CompleteP99Seconds = quantiles(fromComplete)
}

// quantiles is the p50 and p99 of lat, in seconds; it sorts lat.
func quantiles(lat []time.Duration) (p50, p99 float64) {
	if len(lat) == 0 {
		return 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(f float64) float64 { return lat[int(f*float64(len(lat)-1))].Seconds() }
	return q(0.50), q(0.99)
}

// gpuUse is what the bound pods hold on one GPU.
type gpuUse struct{ slots, memory, cores int64 }

// checkPlacement counts the nodes (and, for a vGPU scheduler, the GPUs) the bound pods use, and
// checks every GPU against what its node registers: slots, memory and cores.
func (r *result) checkPlacement(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod, vgpuAware bool) error {
	nodes := map[string]bool{}
	use := map[string]*gpuUse{}
	for _, pod := range pods {
		nodes[pod.Spec.NodeName] = true
		if !vgpuAware {
			continue
		}
		devices, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil || len(devices) == 0 {
			r.Unassigned++
			continue
		}
		for _, container := range devices {
			for _, d := range container {
				u := use[d.UUID]
				if u == nil {
					u = &gpuUse{}
					use[d.UUID] = u
				}
				u.slots++
				u.memory += int64(d.UsedMemory)
				u.cores += int64(d.UsedCores)
			}
		}
	}
	r.NodesUsed, r.GPUsUsed = len(nodes), len(use)
	if !vgpuAware {
		return nil
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=true"})
	if err != nil {
		return err
	}
	for _, node := range list.Items {
		gpus, err := vgpu.DecodeNodeDevices(node.Annotations[vgpu.NodeDevicesAnnotation])
		if err != nil {
			return fmt.Errorf("node %s: %w", node.Name, err)
		}
		for _, g := range gpus {
			if u := use[g.UUID]; u != nil && (u.slots > int64(g.Count) || u.memory > int64(g.Memory) || u.cores > 100) {
				r.Overbooked++
			}
		}
	}
	return nil
}
