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

// Deriver builds each node's GPU ledger for the scheduler cache (framework.DeviceDeriver): the
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
// the cache must then derive every node again, as Shared.Start has it do.
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
	devices  *devicewatch.Source
	readings *readings
	refused  *refusals
	// badRegister reports unreadable register annotations on their nodes.
	badRegister *badRegisters
}

// NewDeriverFor is the deriver for the device ConfigMap in use in devices; recorder (nil:
// none) receives the Events on pods whose assignment is cut.
func NewDeriverFor(devices *devicewatch.Source, recorder record.EventRecorder) *Deriver {
	return &Deriver{devices: devices, readings: newReadings(), refused: newRefusals(recorder), badRegister: newBadRegisters(recorder)}
}

// NewDeriver is the deriver for the shipped device configuration, for a scheduler that reads
// no ConfigMap (benchmarks).
func NewDeriver() *Deriver { return NewDeriverFor(devicewatch.Static(vgpu.DefaultNvidiaConfig()), nil) }

// Name is the key of the ledger in api.NodeInfo.Devices.
func (*Deriver) Name() string { return PluginName }

// Claims: a device plugin has registered vGPU on the node (its register annotation).
func (*Deriver) Claims(node *corev1.Node) bool {
	_, registered := node.Annotations[vgpu.NodeDevicesAnnotation]
	return registered
}

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
	if err := setReserves(gpus, node, config); err != nil {
		l.unavailable = notInitialized(err.Error())
		return l
	}
	l.gpus = gpus
	l.derived = &derivation{spans: map[api.TaskID]span{}}
	names := config.ResourceNames()
	for _, t := range node.Tasks {
		rd, ok := d.readings.of(t, names)
		if !ok {
			continue
		}
		if rd.devicesErr != nil {
			// Its GPUs cannot be known; the pod keeps running and the rest of the node is
			// still scheduled.
			klog.ErrorS(rd.devicesErr, "Ignoring an unreadable device assignment", "pod", klog.KRef(t.Namespace, t.Name), "node", node.Name)
			continue
		}
		if rd.devices == nil {
			continue
		}
		pd, requests, cut := l.clamp(t, rd, names)
		if cut != "" {
			d.refused.report(t, node.Name, cut)
		}
		if unknown := l.book(pd, 1); unknown > 0 {
			klog.V(3).InfoS("Device assignment names GPUs, or MIG instances, the node does not list", "pod", klog.KRef(t.Namespace, t.Name),
				"node", node.Name, "devices", unknown)
		}
		from := len(l.derived.bookings)
		l.derived.bookings = l.appendBookings(l.derived.bookings, t, pd, requests)
		if to := len(l.derived.bookings); to > from {
			l.derived.spans[t.UID] = span{int32(from), int32(to)}
		}
	}
	return l
}

// setReserves sets each GPU's context reserve, in the node's memory units, from the device
// configuration: the node's memory factor (vgpu.NodeMemoryFactorAnnotation, which our device
// plugin writes) turns the configured MiB into units; without it the configuration's
// gpuMemoryFactor does, or 1, the factor upstream's device plugin uses unless told otherwise.
// An unreadable factor is an error only where a GPU has a reserve to convert.
func setReserves(gpus []gpu, node *api.NodeInfo, config vgpu.NvidiaConfig) error {
	factor := int32(-1) // read when first needed
	for i := range gpus {
		g := &gpus[i]
		g.reserve = 0
		mib := config.ContextReserves.MiBFor(g.info.Type)
		if mib == 0 || g.info.Mode == vgpu.ModeMIG {
			continue
		}
		if factor < 0 {
			var err error
			if factor, err = memoryFactorOf(node, config); err != nil {
				return err
			}
		}
		g.reserve = vgpu.ReserveUnits(mib, factor)
	}
	return nil
}

// memoryFactorOf is the MiB in one memory unit of the node (see setReserves).
func memoryFactorOf(node *api.NodeInfo, config vgpu.NvidiaConfig) (int32, error) {
	if value, ok := node.Node.Annotations[vgpu.NodeMemoryFactorAnnotation]; ok {
		return vgpu.ParseMemoryFactor(value)
	}
	return max(config.GPUMemoryFactor, 1), nil
}

// clamp cuts the assignment pd down to what the task's pod requests (see Deriver): on a whole
// GPU, a vGPU books at most its request and the GPU's context reserve. It returns what is
// left, the pod's requests, which cover every container entry left, and what it cut; "" when
// nothing.
func (l *ledger) clamp(t *api.TaskInfo, rd *reading, names vgpu.ResourceNames) (vgpu.PodDevices, []vgpu.ContainerRequest, string) {
	pd, requests := rd.devices, rd.requests
	if t.Pod != nil && rd.requestsErr != nil {
		return nil, nil, fmt.Sprintf("nothing booked: %v", rd.requestsErr)
	}
	if len(requests) == 0 {
		return nil, nil, "nothing booked: no container requests " + string(names.Count)
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
				memory := req.BookedOn(l.gpus[g].memory, l.gpus[g].reserve)
				if d.UsedMemory > memory || d.UsedCores > req.Cores {
					with := ""
					if reserve := req.ReserveOn(l.gpus[g].reserve); reserve > 0 {
						with = fmt.Sprintf(" (with the GPU's context reserve of %d)", reserve)
					}
					cuts = append(cuts, fmt.Sprintf("container %q on GPU %s: %d memory units and %d cores for %d%s and %d requested",
						req.ContainerName, d.UUID, d.UsedMemory, d.UsedCores, memory, with, req.Cores))
					d.UsedMemory, d.UsedCores = min(d.UsedMemory, memory), min(d.UsedCores, req.Cores)
				}
			}
			out[c][i] = d
		}
	}
	if len(cuts) == 0 {
		return out, requests, ""
	}
	return out, requests, "booked only what the pod requests: " + strings.Join(cuts, "; ")
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
	value, ok := assignmentText(t)
	if !ok {
		return nil, nil
	}
	return decodeAssignment(value)
}

// assignmentText is the assignment annotation a task holds: the one it is being bound with,
// else the one its pod carries.
func assignmentText(t *api.TaskInfo) (string, bool) {
	value, ok := t.BindAnnotations[vgpu.AssignedDevicesAnnotation]
	if !ok && t.Pod != nil {
		value, ok = t.Pod.Annotations[vgpu.AssignedDevicesAnnotation]
	}
	return value, ok
}

// decodeAssignment reads an assignment annotation's value.
func decodeAssignment(value string) (vgpu.PodDevices, error) {
	pd, err := vgpu.DecodePodDevices(value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", vgpu.AssignedDevicesAnnotation, err)
	}
	return pd, nil
}
