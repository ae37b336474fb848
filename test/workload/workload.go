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
	// PriorityClasses are the priority classes the mixes name, with their values; the
	// benchmark creates them.
	PriorityClasses map[string]int32 `json:"priorityClasses,omitempty"`
	// Preemptors, when set, is a second wave the preemption benchmark (test/benche2e
	// preempt) creates once the first is bound, on the same nodes and with the same arrival.
	Preemptors *Wave `json:"preemptors,omitempty"`
}

// Wave is a set of pods created after the first: how many per node, of which mix.
type Wave struct {
	PodsPerNode int        `json:"podsPerNode"`
	Mix         []PodShape `json:"mix"`
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
	// PriorityClass, when set, is the PodGroup's and the pods' priority class: one of the
	// workload's PriorityClasses.
	PriorityClass string `json:"priorityClass,omitempty"`
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
	if err := w.validateMix(); err != nil {
		return err
	}
	if w.Preemptors == nil {
		return nil
	}
	// MinEvictions reasons about one kind on each side.
	if len(w.Mix) != 1 || len(w.Preemptors.Mix) != 1 {
		return fmt.Errorf("preemptors: want one kind of pod in mix and one in preemptors.mix")
	}
	if err := w.PreemptorWave().validateMix(); err != nil {
		return fmt.Errorf("preemptors: %w", err)
	}
	return nil
}

func (w *Workload) validateMix() error {
	n := w.Node
	total := 0.0
	for i, p := range w.Mix {
		if p.Gang < 1 || p.VGPUs < 1 || p.MemoryMiB < 1 || p.MemoryMiB > int64(n.GPUMemoryMiB) || p.Cores < 0 || p.Cores > 100 {
			return fmt.Errorf("mix[%d]: want gang >= 1, vgpus >= 1, 1 <= vgpuMemoryMiB <= the GPU's and 0 <= vgpuCores <= 100", i)
		}
		if _, ok := w.PriorityClasses[p.PriorityClass]; p.PriorityClass != "" && !ok {
			return fmt.Errorf("mix[%d]: priorityClass %q is not one of priorityClasses", i, p.PriorityClass)
		}
		total += p.Share
	}
	if total < 0.999 || total > 1.001 {
		return fmt.Errorf("mix: shares add up to %g, want 1", total)
	}
	return nil
}

// PreemptorWave is the workload of the preemptors: w with the second wave's pods per node and
// mix in place of the first's; nil when w has none.
func (w *Workload) PreemptorWave() *Workload {
	if w.Preemptors == nil {
		return nil
	}
	wave := *w
	wave.PodsPerNode, wave.Mix, wave.Preemptors = w.Preemptors.PodsPerNode, w.Preemptors.Mix, nil
	return &wave
}

// MinEvictions is the fewest first-wave pods a preemptor must evict from a GPU that holds as
// many of them as fit: enough to free its slot, its memory and its cores (0 when it fits
// beside them). It is the floor the preemption benchmark holds the evictions per preemptor
// to; 0 for a workload without preemptors.
func (w *Workload) MinEvictions() int {
	if w.Preemptors == nil {
		return 0
	}
	low, high := w.Mix[0], w.Preemptors.Mix[0]
	held := int64(w.podsPerGPU(low))
	// need is the victims that make room for want of a resource the GPU has capacity of,
	// each victim freeing per.
	need := func(capacity, per, want int64) int {
		if want == 0 || per == 0 {
			return 0
		}
		short := want - (capacity - held*per)
		if short <= 0 {
			return 0
		}
		return int((short + per - 1) / per)
	}
	return max(need(int64(w.Node.Split), 1, 1), need(int64(w.Node.GPUMemoryMiB), low.MemoryMiB, high.MemoryMiB),
		need(100, low.Cores, high.Cores))
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
