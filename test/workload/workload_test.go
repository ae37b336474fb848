package workload

import (
	"strings"
	"testing"
)

// The preemption benchmark's file: 32 quarter-GPU low pods fill a node of 8 GPUs, 2 half-GPU
// high pods per node follow, each needing 2 evictions; both kinds carry their class.
func TestPreemptWorkload(t *testing.T) {
	w, err := Load("preempt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := w.PreemptorWave()
	if w.PodCount(100) != 3200 || p.PodCount(100) != 200 {
		t.Errorf("pods at 100 nodes: %d then %d, want 3200 then 200", w.PodCount(100), p.PodCount(100))
	}
	if gpus, _ := w.OptimumGPUs(w.PodCount(100)); gpus != 800 {
		t.Errorf("the first wave needs %d GPUs, want all 800: it must fill them", gpus)
	}
	if got := w.MinEvictions(); got != 2 {
		t.Errorf("MinEvictions %d, want 2", got)
	}
	low, high := w.Jobs("ns", "s", 1)[0], p.Jobs("ns", "s", 1)[0]
	if low.PodGroup.Spec.PriorityClassName != "bench-preempt-low" || low.Pods[0].Spec.PriorityClassName != "bench-preempt-low" ||
		high.PodGroup.Spec.PriorityClassName != "bench-preempt-high" || high.Pods[0].Spec.PriorityClassName != "bench-preempt-high" {
		t.Errorf("priority classes: low %q/%q, high %q/%q", low.PodGroup.Spec.PriorityClassName, low.Pods[0].Spec.PriorityClassName,
			high.PodGroup.Spec.PriorityClassName, high.Pods[0].Spec.PriorityClassName)
	}
	if w.PreemptorWave().Preemptors != nil || w.Preemptors == nil {
		t.Error("PreemptorWave changed w, or kept a third wave")
	}
}

// MinEvictions is set by whichever of slots, memory and cores is shortest on a full GPU.
func TestMinEvictions(t *testing.T) {
	shape := func(mem, cores int64) PodShape {
		return PodShape{Share: 1, Gang: 1, VGPUs: 1, MemoryMiB: mem, Cores: cores}
	}
	for name, c := range map[string]struct {
		split     int32
		low, high PodShape
		want      int
	}{
		"half for quarters":           {split: 4, low: shape(6144, 25), high: shape(12288, 50), want: 2},
		"three quarters":              {split: 4, low: shape(6144, 0), high: shape(18432, 0), want: 3},
		"a slot only":                 {split: 4, low: shape(1000, 0), high: shape(1000, 0), want: 1},
		"fits beside":                 {split: 10, low: shape(6000, 0), high: shape(100, 0), want: 0},
		"cores are the shortest":      {split: 10, low: shape(1000, 20), high: shape(1000, 70), want: 4},
		"memory rounds up":            {split: 10, low: shape(10000, 0), high: shape(10001, 0), want: 1},
		"leftover memory counts":      {split: 10, low: shape(10000, 0), high: shape(14577, 0), want: 2},
		"uncapped victims free cores": {split: 10, low: shape(12288, 0), high: shape(12288, 50), want: 1},
	} {
		w := &Workload{Node: NodeShape{GPUs: 1, GPUMemoryMiB: 24576, Split: c.split}, Mix: []PodShape{c.low},
			Preemptors: &Wave{PodsPerNode: 1, Mix: []PodShape{c.high}}}
		if got := w.MinEvictions(); got != c.want {
			t.Errorf("%s: MinEvictions %d, want %d", name, got, c.want)
		}
	}
}

// A class no entry of priorityClasses names, and a preemptor wave of two kinds, are refused.
func TestPreemptorsValidate(t *testing.T) {
	base := func() *Workload {
		w, err := Load("preempt.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := base()
	w.Preemptors.Mix[0].PriorityClass = "nope"
	if err := w.validate(); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown class: %v", err)
	}
	w = base()
	half := w.Preemptors.Mix[0]
	half.Share = 0.5
	w.Preemptors.Mix = []PodShape{half, half}
	if err := w.validate(); err == nil || !strings.Contains(err.Error(), "one kind") {
		t.Errorf("two kinds of preemptor: %v", err)
	}
}
