package deviceshare

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// EventReasonAssignmentCut is the reason of the Warning Event on a pod whose device assignment
// the ledger does not book in full.
const EventReasonAssignmentCut = "VGPUAssignmentNotBooked"

// maxRefusals bounds the memory of refusals already reported; past it, the record starts over
// (at worst a pod is reported once more).
const maxRefusals = 10000

// refusals reports each cut assignment once: the cache derives a node's ledger after every
// change on the node, and one Event per derivation would flood the pod's Events.
type refusals struct {
	recorder record.EventRecorder
	mu       sync.Mutex
	reported map[types.UID]string
}

func newRefusals(recorder record.EventRecorder) *refusals {
	return &refusals{recorder: recorder, reported: map[types.UID]string{}}
}

// report logs and records what was cut of the task's assignment, unless it said so already.
func (r *refusals) report(t *api.TaskInfo, node, cut string) {
	r.mu.Lock()
	if r.reported[types.UID(t.UID)] == cut {
		r.mu.Unlock()
		return
	}
	if len(r.reported) >= maxRefusals {
		clear(r.reported)
	}
	r.reported[types.UID(t.UID)] = cut
	r.mu.Unlock()
	klog.InfoS("Device assignment not booked in full", "pod", klog.KRef(t.Namespace, t.Name), "node", node, "why", cut)
	if r.recorder != nil && t.Pod != nil {
		r.recorder.Event(t.Pod, corev1.EventTypeWarning, EventReasonAssignmentCut, cut)
	}
}
