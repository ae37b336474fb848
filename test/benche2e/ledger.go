package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// gpuCores is a GPU's compute in the assignment's unit, percent: a GPU has 100 whatever its
// node registers.
const gpuCores = 100

// gpuUse is what the pods held on one GPU.
type gpuUse struct{ slots, memory, cores int64 }

// gpuLedger is what pods hold on each GPU, summed from their assignment annotations (the
// protocol of pkg/vgpu, read as the scheduler rebuilds its own ledger on a restart), against
// what each GPU has by its node's register annotation. The placement check builds one at the
// end of a run; the preemption benchmark keeps one from a watch, to catch a GPU over
// capacity at any moment of a hand-over from victims to preemptors.
type gpuLedger struct {
	capacity map[string]vgpu.NodeDevice // by UUID
	use      map[string]*gpuUse
	held     map[types.UID]vgpu.PodDevices
	// over is each GPU ever over its slots, memory or cores (or named by no node), with what
	// it held the first time.
	over map[string]string
	// unassigned is each bound pod seen without a readable assignment.
	unassigned map[types.UID]bool
}

func newGPULedger() *gpuLedger {
	return &gpuLedger{capacity: map[string]vgpu.NodeDevice{}, use: map[string]*gpuUse{}, held: map[types.UID]vgpu.PodDevices{},
		over: map[string]string{}, unassigned: map[types.UID]bool{}}
}

// addNode takes the node's GPUs as capacity.
func (l *gpuLedger) addNode(node *corev1.Node) error {
	gpus, err := vgpu.DecodeNodeDevices(node.Annotations[vgpu.NodeDevicesAnnotation])
	if err != nil {
		return fmt.Errorf("node %s: %w", node.Name, err)
	}
	for _, g := range gpus {
		l.capacity[g.UUID] = g
	}
	return nil
}

// hold books a bound pod's assignment once, checks the GPUs it names and returns them; a pod
// not bound, or seen bound already, changes nothing (an assignment arrives with the bind, in
// the Binding, and never changes).
func (l *gpuLedger) hold(pod *corev1.Pod) []string {
	if pod.Spec.NodeName == "" || l.held[pod.UID] != nil || l.unassigned[pod.UID] {
		return nil
	}
	devices, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.AssignedDevicesAnnotation])
	if err != nil || len(devices) == 0 {
		l.unassigned[pod.UID] = true
		return nil
	}
	l.held[pod.UID] = devices
	for _, container := range devices {
		for _, d := range container {
			u := l.use[d.UUID]
			if u == nil {
				u = &gpuUse{}
				l.use[d.UUID] = u
			}
			u.slots++
			u.memory += int64(d.UsedMemory)
			u.cores += int64(d.UsedCores)
		}
	}
	var gpus []string
	for _, container := range devices {
		for _, d := range container {
			l.check(d.UUID)
			gpus = append(gpus, d.UUID)
		}
	}
	return gpus
}

// release gives back what the pod held, if anything; it returns the GPUs it held.
func (l *gpuLedger) release(uid types.UID) []string {
	devices := l.held[uid]
	delete(l.held, uid)
	var gpus []string
	for _, container := range devices {
		for _, d := range container {
			u := l.use[d.UUID]
			u.slots--
			u.memory -= int64(d.UsedMemory)
			u.cores -= int64(d.UsedCores)
			gpus = append(gpus, d.UUID)
		}
	}
	return gpus
}

// check notes the GPU if it holds more than it has now.
func (l *gpuLedger) check(uuid string) {
	if _, seen := l.over[uuid]; seen {
		return
	}
	u, c := l.use[uuid], l.capacity[uuid]
	if c.UUID == "" {
		l.over[uuid] = fmt.Sprintf("GPU %s: %d pods on a GPU no node registers", uuid, u.slots)
		return
	}
	if u.slots > int64(c.Count) || u.memory > int64(c.Memory) || u.cores > gpuCores {
		l.over[uuid] = fmt.Sprintf("GPU %s: %d pods, memory %d, cores %d %% (has %d slots, memory %d)",
			uuid, u.slots, u.memory, u.cores, c.Count, c.Memory)
	}
}

// gpusUsed is the GPUs some pod holds now.
func (l *gpuLedger) gpusUsed() int {
	n := 0
	for _, u := range l.use {
		if u.slots > 0 {
			n++
		}
	}
	return n
}
