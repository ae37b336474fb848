package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// preemptNode is a node of test/workload/preempt.yaml's shape (8 GPUs of 24576 MiB, split 4)
// and its GPUs' UUIDs.
func preemptNode(t *testing.T, name string) (*corev1.Node, []string) {
	t.Helper()
	w, err := workload.Load("../workload/preempt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	node := w.NodeObject(name)
	gpus, err := vgpu.DecodeNodeDevices(node.Annotations[vgpu.NodeDevicesAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, g := range gpus {
		uuids = append(uuids, g.UUID)
	}
	return node, uuids
}

// boundPod is a pod bound to node whose assignment books memMiB and cores on the GPU.
func boundPod(t *testing.T, uid, node, gpu string, memMiB, cores int32) *corev1.Pod {
	t.Helper()
	assigned, err := vgpu.PodDevices{{{UUID: gpu, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: memMiB, UsedCores: cores}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), Annotations: map[string]string{vgpu.AssignedDevicesAnnotation: assigned}},
		Spec: corev1.PodSpec{NodeName: node}}
}

// A hand-over as the preemption benchmark watches it: four quarter pods fill a GPU; a half pod
// bound before two of them are gone puts the GPU over (and it stays counted once the pods
// leave); bound after they are gone, it does not.
func TestGPULedgerCatchesAGPUOverDuringAHandOver(t *testing.T) {
	node, gpus := preemptNode(t, "n")
	for _, early := range []bool{false, true} {
		l := newGPULedger()
		if err := l.addNode(node); err != nil {
			t.Fatal(err)
		}
		for _, uid := range []string{"low-0", "low-1", "low-2", "low-3"} {
			l.hold(boundPod(t, uid, "n", gpus[0], 6144, 25))
		}
		if len(l.over) != 0 {
			t.Fatalf("a GPU exactly full: over %v", l.over)
		}
		high := boundPod(t, "high-0", "n", gpus[0], 12288, 50)
		if early {
			l.hold(high)
		}
		for _, uid := range []string{"low-0", "low-1"} {
			if got := l.release(types.UID(uid)); len(got) != 1 || got[0] != gpus[0] {
				t.Errorf("release %s: GPUs %v, want [%s]", uid, got, gpus[0])
			}
		}
		if !early {
			l.hold(high)
		}
		if got := len(l.over); early != (got == 1) || got > 1 {
			t.Errorf("preemptor bound before its victims were gone %v: %d GPUs over (%v)", early, got, l.over)
		}
		if early && !strings.Contains(l.over[gpus[0]], "5 pods, memory 36864, cores 150 %") {
			t.Errorf("over: %q, want what the GPU held at its fullest", l.over[gpus[0]])
		}
		if u := l.use[gpus[0]]; *u != (gpuUse{slots: 3, memory: 24576, cores: 100}) {
			t.Errorf("GPU use %+v, want 3 pods, 24576 MiB, 100 cores", *u)
		}
		if l.gpusUsed() != 1 {
			t.Errorf("GPUs used %d, want 1", l.gpusUsed())
		}
	}
}

// Each dimension alone puts a GPU over: its slots, its memory, its cores. A pod on a GPU no
// node registers is over too.
func TestGPULedgerChecksSlotsMemoryAndCores(t *testing.T) {
	node, gpus := preemptNode(t, "n")
	for name, c := range map[string]struct {
		pods        int
		memMiB      int32
		cores       int32
		gpu         string
		wantOver    bool
		wantMessage string
	}{
		"four quarters fit":  {pods: 4, memMiB: 6144, cores: 25, gpu: gpus[1]},
		"a fifth slot":       {pods: 5, memMiB: 1000, gpu: gpus[1], wantOver: true, wantMessage: "5 pods"},
		"memory":             {pods: 2, memMiB: 12289, gpu: gpus[1], wantOver: true, wantMessage: "memory 24578"},
		"cores":              {pods: 3, memMiB: 1000, cores: 34, gpu: gpus[1], wantOver: true, wantMessage: "cores 102 %"},
		"a GPU of no node":   {pods: 1, memMiB: 1000, gpu: "GPU-00000000-0000-0000-0000-000000000000", wantOver: true, wantMessage: "no node registers"},
		"no cores booked ok": {pods: 4, memMiB: 6144, gpu: gpus[1]},
	} {
		t.Run(name, func(t *testing.T) {
			l := newGPULedger()
			if err := l.addNode(node); err != nil {
				t.Fatal(err)
			}
			for i := range c.pods {
				l.hold(boundPod(t, name+string(rune('a'+i)), "n", c.gpu, c.memMiB, c.cores))
			}
			if got := len(l.over) == 1; got != c.wantOver || len(l.over) > 1 {
				t.Fatalf("over %v, want over %v", l.over, c.wantOver)
			}
			if c.wantOver && !strings.Contains(l.over[c.gpu], c.wantMessage) {
				t.Errorf("over: %q, want it to say %q", l.over[c.gpu], c.wantMessage)
			}
		})
	}
}

// Pods seen again (every status update of a bound pod is an event) are booked once; a pod
// not bound books nothing; a bound pod without a readable assignment is counted once and
// books nothing; releasing a pod the ledger never booked changes nothing.
func TestGPULedgerBooksEachPodOnce(t *testing.T) {
	node, gpus := preemptNode(t, "n")
	l := newGPULedger()
	if err := l.addNode(node); err != nil {
		t.Fatal(err)
	}
	p := boundPod(t, "a", "n", gpus[2], 6144, 25)
	for range 5 {
		l.hold(p)
	}
	pending := boundPod(t, "b", "", gpus[2], 6144, 25)
	l.hold(pending)
	unassigned := boundPod(t, "c", "n", gpus[2], 6144, 25)
	unassigned.Annotations = nil
	l.hold(unassigned)
	l.hold(unassigned)
	bad := boundPod(t, "d", "n", gpus[2], 6144, 25)
	bad.Annotations[vgpu.AssignedDevicesAnnotation] = "not an assignment"
	l.hold(bad)
	if got := l.release("never-held"); got != nil {
		t.Errorf("release of a pod never held: %v", got)
	}
	if u := l.use[gpus[2]]; *u != (gpuUse{slots: 1, memory: 6144, cores: 25}) {
		t.Errorf("GPU use %+v, want the one pod", *u)
	}
	if len(l.unassigned) != 2 || len(l.over) != 0 {
		t.Errorf("unassigned %d, over %v: want 2 and none", len(l.unassigned), l.over)
	}
	l.release("a")
	if l.gpusUsed() != 0 {
		t.Errorf("GPUs used after the only pod left: %d", l.gpusUsed())
	}
}
