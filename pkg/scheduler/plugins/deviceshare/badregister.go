package deviceshare

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// EventReasonInvalidRegister is the reason of the Warning Event on a node whose register
// annotation the scheduler cannot read: the node then takes no vGPU pod, and the pods' own
// message says only "1 node not initialized ...", so the node itself must say which one and why.
const EventReasonInvalidRegister = "InvalidVGPURegister"

// badRegisters reports each unreadable register annotation once per value: the cache derives
// a node's ledger after every change to the node or its pods.
type badRegisters struct {
	recorder record.EventRecorder
	mu       sync.Mutex
	// reported holds, per node, the annotation value last reported.
	reported map[string]string
}

func newBadRegisters(recorder record.EventRecorder) *badRegisters {
	return &badRegisters{recorder: recorder, reported: map[string]string{}}
}

// report logs why node's register annotation value cannot be used and records it on the node,
// unless this value was reported already.
func (b *badRegisters) report(node *corev1.Node, value, why string) {
	b.mu.Lock()
	if last, ok := b.reported[node.Name]; ok && last == value {
		b.mu.Unlock()
		return
	}
	if len(b.reported) >= maxRefusals {
		clear(b.reported)
	}
	b.reported[node.Name] = value
	b.mu.Unlock()
	klog.ErrorS(nil, "Node's vGPU register annotation is unreadable; the node takes no vGPU pod", "node", klog.KObj(node), "why", why)
	if b.recorder != nil {
		b.recorder.Event(node, corev1.EventTypeWarning, EventReasonInvalidRegister, why)
	}
}

// forget drops node's record once its annotation reads again, so that the same bad value
// coming back is reported again.
func (b *badRegisters) forget(node string) {
	b.mu.Lock()
	delete(b.reported, node)
	b.mu.Unlock()
}
