// Package workload reads the benchmarks' workloads (node shapes, request mixes, arrival) from
// data files and turns them into the API objects both benchmarks use: the in-process cycle
// benchmark (cmd/vc-scheduler) puts them in a snapshot, the end-to-end one (test/benche2e)
// creates them on the local cluster.
package workload

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Workload is one data file (test/workload/*.yaml).
type Workload struct {
	// Name appears in the benchmarks' results.
	Name string `json:"name"`
	// Node is the shape of every node.
	Node NodeShape `json:"node"`
	// PodsPerNode sets the pod count of a run: nodes x PodsPerNode.
	PodsPerNode int `json:"podsPerNode"`
	// Mix is the requests: each entry's share of the pods, in gangs of its size.
	Mix []PodShape `json:"mix"`
	// Arrival is how the end-to-end benchmark creates the pods.
	Arrival Arrival `json:"arrival"`
}

// NodeShape is a GPU node as the device plugin registers it.
type NodeShape struct {
	CPU          string `json:"cpu"`
	Memory       string `json:"memory"`
	Pods         int    `json:"pods"`
	GPUs         int    `json:"gpus"`
	GPUModel     string `json:"gpuModel"`
	GPUMemoryMiB int32  `json:"gpuMemoryMiB"`
	// Split is the device plugin's --device-split-count: vGPU slots per GPU.
	Split int32 `json:"split"`
}

// PodShape is one kind of pod in the mix.
type PodShape struct {
	// Share of the run's pods, 0 to 1; the shares add up to 1.
	Share float64 `json:"share"`
	// Gang is the PodGroup's size and minMember; 1 is a single pod.
	Gang      int    `json:"gang"`
	CPU       string `json:"cpu"`
	Memory    string `json:"memory"`
	VGPUs     int    `json:"vgpus"`
	MemoryMiB int64  `json:"vgpuMemoryMiB"`
	Cores     int64  `json:"vgpuCores"`
}

// Arrival is the order and pace of creation.
type Arrival struct {
	// Creators is how many clients create pods at once.
	Creators int `json:"creators"`
	// Interleave creates the mix's kinds in turn rather than one kind after another.
	Interleave bool `json:"interleave"`
	// GangAtOnce sends a gang's pod creates together, one request each, as Volcano's job
	// controller creates a job's pods; otherwise a creator sends them one after another.
	GangAtOnce bool `json:"gangAtOnce"`
}

// Load reads and checks a workload file.
func Load(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	w := &Workload{}
	if err := yaml.UnmarshalStrict(data, w); err != nil {
		return nil, fmt.Errorf("workload %s: %w", path, err)
	}
	if err := w.validate(); err != nil {
		return nil, fmt.Errorf("workload %s: %w", path, err)
	}
	return w, nil
}

func (w *Workload) validate() error {
	n := w.Node
	if n.GPUs < 1 || n.GPUMemoryMiB < 1 || n.Split < 1 || n.Pods < 1 || n.CPU == "" || n.Memory == "" {
		return fmt.Errorf("node: gpus, gpuMemoryMiB, split, pods, cpu and memory are all required")
	}
	if w.PodsPerNode < 1 || w.Arrival.Creators < 1 || len(w.Mix) == 0 {
		return fmt.Errorf("podsPerNode, arrival.creators and mix are required")
	}
	total := 0.0
	for i, p := range w.Mix {
		if p.Gang < 1 || p.VGPUs < 1 || p.MemoryMiB < 1 || p.MemoryMiB > int64(n.GPUMemoryMiB) || p.Cores < 0 || p.Cores > 100 {
			return fmt.Errorf("mix[%d]: want gang >= 1, vgpus >= 1, 1 <= vgpuMemoryMiB <= the GPU's and 0 <= vgpuCores <= 100", i)
		}
		total += p.Share
	}
	if total < 0.999 || total > 1.001 {
		return fmt.Errorf("mix: shares add up to %g, want 1", total)
	}
	return nil
}

// PodCount is the number of pods of a run on nodes nodes.
func (w *Workload) PodCount(nodes int) int { return nodes * w.PodsPerNode }

// podsPerGPU is how many pods of kind p one GPU takes: its slots, its memory
// and its cores each bound it.
func (w *Workload) podsPerGPU(p PodShape) int {
	fit := int(w.Node.Split)
	if m := int(int64(w.Node.GPUMemoryMiB) / p.MemoryMiB); m < fit {
		fit = m
	}
	if p.Cores > 0 && int(100/p.Cores) < fit {
		fit = int(100 / p.Cores)
	}
	return fit
}

// OptimumGPUs is the fewest GPUs that hold every pod of the run (each kind packed alone, so a
// bound for mixes, exact for one kind), and OptimumNodes the fewest nodes that hold those GPUs.
func (w *Workload) OptimumGPUs(pods int) (gpus, nodes int) {
	for _, k := range w.kinds(pods) {
		per := w.podsPerGPU(w.Mix[k.shape])
		gpus += (k.pods*w.Mix[k.shape].VGPUs + per - 1) / per
	}
	return gpus, (gpus + w.Node.GPUs - 1) / w.Node.GPUs
}

// kind is how many pods of one mix entry a run has.
type kind struct{ shape, pods int }

// kinds splits pods over the mix by share, in whole gangs; the last entry takes the rest.
func (w *Workload) kinds(pods int) []kind {
	out := make([]kind, len(w.Mix))
	left := pods
	for i, p := range w.Mix {
		n := int(float64(pods)*p.Share) / p.Gang * p.Gang
		if i == len(w.Mix)-1 {
			n = left / p.Gang * p.Gang
		}
		out[i] = kind{shape: i, pods: n}
		left -= n
	}
	return out
}
