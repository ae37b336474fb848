package upstreamtest

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// SchedulerRelease is an upstream vc-scheduler release whose node and pod reading is
// modelled.
type SchedulerRelease struct {
	Name string
	// Handshake: the release uses a node's GPUs only while the device plugin answers its
	// handshake. The later releases instead want non-zero allocatable of the three vGPU
	// resources.
	Handshake bool
	// ReleaseKeepsServed: when a placement is undone the release deletes the six assignment
	// annotations unless bind-phase is "success" (v1.16 line); earlier releases patch the
	// pod before binding and never delete them.
	ReleaseKeepsServed bool
}

// The releases modelled. The two references disagree on v1.14.3 (the device plugin's lists
// it among those without the handshake, the scheduler's first names v1.14.4), so it is left
// out; a device plugin that answers the handshake works with either reading.
var (
	SchedulerV1_13   = SchedulerRelease{Name: "v1.13", Handshake: true}
	SchedulerV1_14_2 = SchedulerRelease{Name: "v1.14.0-v1.14.2", Handshake: true}
	SchedulerV1_14_4 = SchedulerRelease{Name: "v1.14.4"}
	SchedulerV1_15_0 = SchedulerRelease{Name: "v1.15.0", Handshake: true}
	SchedulerV1_15_1 = SchedulerRelease{Name: "v1.15.1"}
	SchedulerV1_16   = SchedulerRelease{Name: "v1.16", ReleaseKeepsServed: true}

	SchedulerReleases = []SchedulerRelease{SchedulerV1_13, SchedulerV1_14_2, SchedulerV1_14_4,
		SchedulerV1_15_0, SchedulerV1_15_1, SchedulerV1_16}
)

// Handshake values of the upstream schedulers: the time is written with Go's
// time.Now().Format in the scheduler's own time zone and read back as UTC.
const (
	HandshakeLayout  = "2006.01.02 15:04:05"
	HandshakeTimeout = 60 * time.Second
)

// NodeView is what a release makes of a node when it builds the node's device pool.
type NodeView struct {
	// GPUs is the pool; nil when the node's GPUs are not used.
	GPUs []NodeGPU
	// Why the GPUs are not used; "" when they are.
	Why string
	// HandshakeWrite is the handshake value the release PATCHes onto the node; "" for none.
	HandshakeWrite string
}

// ReadNode builds the node's device pool at now, as the release does on every node event and
// (handshake releases) every session; zone is the scheduler process's time zone.
func (s SchedulerRelease) ReadNode(node *corev1.Node, now time.Time, zone *time.Location) NodeView {
	register, ok := node.Annotations[RegisterKey]
	if !ok {
		return NodeView{Why: "no " + RegisterKey}
	}
	var view NodeView
	if s.Handshake {
		handshake, ok := node.Annotations[HandshakeKey]
		switch {
		case !ok:
			return NodeView{Why: "no " + HandshakeKey}
		case strings.Contains(handshake, "Requesting"):
			_, stamp, _ := strings.Cut(handshake, "_")
			asked, err := time.Parse(HandshakeLayout, stamp)
			if err != nil {
				return NodeView{Why: fmt.Sprintf("handshake %q: %v", handshake, err)}
			}
			if now.Sub(asked) > HandshakeTimeout {
				return NodeView{Why: "handshake request unanswered", HandshakeWrite: "Deleted_" + now.In(zone).Format(HandshakeLayout)}
			}
		case strings.Contains(handshake, "Deleted"):
			return NodeView{Why: "handshake deleted"}
		default:
			view.HandshakeWrite = "Requesting_" + now.In(zone).Format(HandshakeLayout)
		}
	} else {
		for _, name := range []corev1.ResourceName{CountResource, MemoryResource, CoresResource} {
			q, ok := node.Status.Allocatable[name]
			if !ok || q.Cmp(resource.Quantity{}) <= 0 {
				return NodeView{Why: fmt.Sprintf("allocatable %s missing or 0", name)}
			}
		}
	}
	gpus, err := DecodeNodeDevices(register)
	if err != nil {
		view.Why = err.Error()
		return view
	}
	view.GPUs = gpus
	return view
}

// ApplyHandshake writes the view's handshake value onto the node, as the release's PATCH
// would; it reports whether there was one.
func ApplyHandshake(node *corev1.Node, view NodeView) bool {
	if view.HandshakeWrite == "" {
		return false
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[HandshakeKey] = view.HandshakeWrite
	return true
}

// Booked is what a release books for a pod: per GPU id (the UUID, or for a MIG instance the
// id as written), the summed memory and cores, read from vgpu-ids-new of every pod that is
// not terminated.
func Booked(pods []*corev1.Pod) (map[string][2]int64, error) {
	booked := map[string][2]int64{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		value, ok := p.Annotations[AssignedDevicesKey]
		if !ok {
			continue
		}
		pd, err := DecodePodDevices(value)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		for _, devices := range pd {
			for _, d := range devices {
				b := booked[d.ID]
				b[0] += int64(d.UsedMem)
				b[1] += int64(d.UsedCores)
				booked[d.ID] = b
			}
		}
	}
	return booked, nil
}

// KeepsOnRelease says whether the release leaves the pod's assignment annotations in place
// when it undoes the pod's placement.
func (s SchedulerRelease) KeepsOnRelease(pod *corev1.Pod) bool {
	if !s.ReleaseKeepsServed {
		return true
	}
	return pod.Annotations[BindPhaseKey] == "success"
}
