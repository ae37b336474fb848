package deviceshare

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Deriver builds each node's GPU ledger for the scheduler cache (cache.DeviceDeriver): the
// GPUs from the node's register annotation, and on them the assignments of the pods on the
// node. The cache derives the ledger again after every change to the node or its pods, so a
// restarted scheduler finds the same bookings as the one before it.
//
// A node counts for vGPU only when it has the register annotation and non-zero allocatable
// of the three vGPU resources (upstream HEAD's rule), under the names of the device
// ConfigMap in use when it derives, which also gives the MIG geometries of GPUs in mig mode.
// That is the ConfigMap the loaded scheduler configuration's deviceshare arguments name
// (Shared.Configure), and the default one (devicewatch.DefaultKey) before any
// (devicewatch.Source.InUse). The Source's OnChange tells when that configuration changes;
// the cache must then derive every node again (cache.SchedulerCache.RederiveDevices).
//
// A handshake annotation, which upstream v1.13 to v1.15.0 require, is honoured when present
// but only read: "Deleted_" means no GPUs, and so does a "Requesting_" older than
// vgpu.HandshakeTimeout at the session's time. Nothing here writes it back, so a node that
// keeps an old upstream scheduler's verdict stays without GPUs until the device plugin
// reports again or someone removes the annotation; the reason says so.
//
// A pod books no more than it asks for: only containers that request vGPU, at most their
// count of devices, and on a whole GPU at most the memory and cores their request books
// there (clamp). An assignment written by hand cannot fill a GPU it did not pay for; the
// pod gets one Warning Event saying what was not booked.
type Deriver struct {
	devices *devicewatch.Source
	refused *refusals
	// badRegister reports unreadable register annotations on their nodes.
	badRegister *badRegisters
}

// NewDeriverFor is the deriver for the device ConfigMap in use in devices; recorder (nil:
// none) receives the Events on pods whose assignment is cut.
func NewDeriverFor(devices *devicewatch.Source, recorder record.EventRecorder) *Deriver {
	return &Deriver{devices: devices, refused: newRefusals(recorder), badRegister: newBadRegisters(recorder)}
}

// NewDeriver is the deriver for the shipped device configuration, for a scheduler that reads
// no ConfigMap (benchmarks).
func NewDeriver() *Deriver { return NewDeriverFor(devicewatch.Static(vgpu.DefaultNvidiaConfig()), nil) }

// Name is the key of the ledger in api.NodeInfo.Devices.
func (*Deriver) Name() string { return PluginName }

// Derive builds the node's ledger; nil when the node has no register annotation.
func (d *Deriver) Derive(node *api.NodeInfo) api.Devices {
	value, registered := node.Node.Annotations[vgpu.NodeDevicesAnnotation]
	if !registered {
		return nil
	}
	l := &ledger{source: value}
	config := d.devices.InUse()
	if l.unavailable = unadvertised(node, config.ResourceNames()); l.unavailable != nil {
		return l
	}
	if h, ok := node.Node.Annotations[vgpu.NodeHandshakeAnnotation]; ok {
		hs, err := vgpu.ParseHandshake(h)
		switch {
		case err != nil:
			l.unavailable = notInitialized(fmt.Sprintf("%s: %v", vgpu.NodeHandshakeAnnotation, err))
			return l
		case hs.State == vgpu.HandshakeDeleted:
			l.unavailable = notInitialized(fmt.Sprintf("%s %q: an upstream scheduler found the device plugin silent; "+
				"the device plugin's next report, or removing the annotation, clears it", vgpu.NodeHandshakeAnnotation, h))
			return l
		case hs.State == vgpu.HandshakeRequesting:
			l.handshakeRequested = hs.Time
		}
	}
	gpus, err := decodeGPUs(node, value, config)
	if err != nil {
		why := fmt.Sprintf("%s: %v", vgpu.NodeDevicesAnnotation, err)
		l.unavailable = notInitialized(why)
		d.badRegister.report(node.Node, value, why)
		return l
	}
	if len(gpus) == 0 {
		why := vgpu.NodeDevicesAnnotation + " lists no GPU"
		l.unavailable = notInitialized(why)
		d.badRegister.report(node.Node, value, why)
		return l
	}
	d.badRegister.forget(node.Name)
	l.gpus = gpus
	l.derived = &derivation{}
	names := config.ResourceNames()
	for _, t := range node.Tasks {
		pd, err := assignedDevices(t)
		if err != nil {
			// Its GPUs cannot be known; the pod keeps running and the rest of the node is
			// still scheduled.
			klog.ErrorS(err, "Ignoring an unreadable device assignment", "pod", klog.KRef(t.Namespace, t.Name), "node", node.Name)
			continue
		}
		if pd != nil {
			var cut string
			if pd, cut = l.clamp(t, pd, names); cut != "" {
				d.refused.report(t, node.Name, cut)
			}
		}
		if unknown := l.book(pd, 1); unknown > 0 {
			klog.V(3).InfoS("Device assignment names GPUs, or MIG instances, the node does not list", "pod", klog.KRef(t.Namespace, t.Name),
				"node", node.Name, "devices", unknown)
		}
		for i, d := range l.held(pd) {
			l.derived.bookings = append(l.derived.bookings, booking{task: t.UID, pod: t.Name, gpu: i, memory: d.UsedMemory, cores: d.UsedCores})
		}
	}
	return l
}

// clamp cuts the assignment pd down to what the task's pod requests (see Deriver) and says
// what it cut; "" when nothing.
func (l *ledger) clamp(t *api.TaskInfo, pd vgpu.PodDevices, names vgpu.ResourceNames) (vgpu.PodDevices, string) {
	var requests []vgpu.ContainerRequest
	if t.Pod != nil {
		var err error
		if requests, err = vgpu.PodRequests(t.Pod, names); err != nil {
			return nil, fmt.Sprintf("nothing booked: %v", err)
		}
	}
	if len(requests) == 0 {
		return nil, "nothing booked: no container requests " + string(names.Count)
	}
	var cuts []string
	if len(pd) > len(requests) {
		cuts = append(cuts, fmt.Sprintf("%d container entries for %d vGPU containers", len(pd), len(requests)))
		pd = pd[:len(requests)]
	}
	out := make(vgpu.PodDevices, len(pd))
	for c, devices := range pd {
		req := requests[c]
		if len(devices) > int(req.Count) {
			cuts = append(cuts, fmt.Sprintf("container %q: %d devices for %d requested", req.ContainerName, len(devices), req.Count))
			devices = devices[:req.Count]
		}
		out[c] = make(vgpu.ContainerDevices, len(devices))
		for i, d := range devices {
			// A MIG instance books the instance's memory, whatever the request says.
			if g := l.index(d.UUID); g >= 0 {
				memory := req.MemoryOn(l.gpus[g].memory)
				if d.UsedMemory > memory || d.UsedCores > req.Cores {
					cuts = append(cuts, fmt.Sprintf("container %q on GPU %s: %d memory units and %d cores for %d and %d requested",
						req.ContainerName, d.UUID, d.UsedMemory, d.UsedCores, memory, req.Cores))
					d.UsedMemory, d.UsedCores = min(d.UsedMemory, memory), min(d.UsedCores, req.Cores)
				}
			}
			out[c][i] = d
		}
	}
	if len(cuts) == 0 {
		return out, ""
	}
	return out, "booked only what the pod requests: " + strings.Join(cuts, "; ")
}

// unadvertised says why a node's vGPU resources, under the given names, rule it out: one of
// them is not allocatable, which is how kubelet shows a device plugin that is gone.
func unadvertised(node *api.NodeInfo, names vgpu.ResourceNames) *api.Status {
	for _, name := range [...]corev1.ResourceName{names.Count, names.Memory, names.Cores} {
		if node.Allocatable.Get(name) <= 0 {
			return notInitialized("allocatable " + string(name) + " is 0 (is the vGPU device plugin running?)")
		}
	}
	return nil
}

// decodeGPUs reads the node's GPUs from its register annotation value, shared as config
// says, reusing those of the node's previous ledger when the value has not changed and no
// GPU is in mig mode: a MIG GPU's sharing depends on the device configuration too, which
// may have changed since.
func decodeGPUs(node *api.NodeInfo, value string, config vgpu.NvidiaConfig) ([]gpu, error) {
	if prev, ok := node.Devices[PluginName].(*ledger); ok && len(prev.gpus) > 0 && prev.source == value && !prev.hasMIG() {
		gpus := make([]gpu, len(prev.gpus))
		for i := range prev.gpus {
			gpus[i] = prev.gpus[i]
			gpus[i].used = usage{}
		}
		return gpus, nil
	}
	devices, err := vgpu.DecodeNodeDevices(value)
	if err != nil {
		return nil, err
	}
	gpus := make([]gpu, len(devices))
	for i, dev := range devices {
		gpus[i] = newGPU(dev, config)
	}
	return gpus, nil
}

// assignedDevices is the assignment a task holds: the one it is being bound with, else the
// one its pod carries; nil when it has none.
func assignedDevices(t *api.TaskInfo) (vgpu.PodDevices, error) {
	value, ok := t.BindAnnotations[vgpu.AssignedDevicesAnnotation]
	if !ok && t.Pod != nil {
		value, ok = t.Pod.Annotations[vgpu.AssignedDevicesAnnotation]
	}
	if !ok {
		return nil, nil
	}
	pd, err := vgpu.DecodePodDevices(value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", vgpu.AssignedDevicesAnnotation, err)
	}
	return pd, nil
}
