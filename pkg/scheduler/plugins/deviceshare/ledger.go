package deviceshare

import (
	"strings"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// ledger is one node's GPUs, in the order the device plugin lists them, and what the pods on
// the node book on each. The cache derives it from the node and its pods (Deriver); a session
// works on its own copy (Clone), which the plugin's event handlers change for tentative
// placements and change back exactly when they are undone.
type ledger struct {
	gpus []gpu
	// unavailable says why the node's GPUs cannot be used; nil when they can.
	unavailable *api.Status
	// handshakeRequested is when an upstream scheduler asked the device plugin for a sign of
	// life that has not come yet; zero when no request is outstanding. Whether the request is
	// overdue depends on the session's time, so the plugin decides that.
	handshakeRequested time.Time
	// source is the register annotation the GPUs were decoded from, so that deriving the
	// ledger again after a pod event reuses them instead of decoding the same text.
	source string
	// lastFit is how the last request shape checked here fitted, so that scoring the node
	// right after, and checking it for the next pod of the same shape, do not fit again. It
	// belongs to the session's copy (shapes are numbered per session): Clone and Reuse drop
	// it, and booking clears it.
	lastFit fitMemo
	// derived is what the deriver found booked by the node's pods. Clones share it and
	// nobody changes it: a session's placements are the plugin's (plugin.placed). Each
	// derivation makes a new one, so the same pointer means the cache has not derived the
	// node again.
	derived *derivation
}

// derivation is the bookings the deriver found on a node, one per device of a pod's
// assignment on one of the node's GPUs: with the session's placements, exactly what the
// GPUs' usage sums.
type derivation struct {
	bookings []booking
	// spans are where each pod's bookings lie in bookings: the deriver appends a pod's
	// together, and a session asks for one pod's for each of the node's pods.
	spans map[api.TaskID]span
}

// span is a range of derivation.bookings.
type span struct{ from, to int32 }

// of is the bookings of the task; none for a task without an assignment on the node.
func (d *derivation) of(task api.TaskID) []booking {
	s, ok := d.spans[task]
	if !ok {
		return nil
	}
	return d.bookings[s.from:s.to]
}

// booking is one device of a pod's assignment.
type booking struct {
	task api.TaskID
	// pod is the pod's name.
	pod string
	// gpu is the GPU's index in the ledger (an int32 keeps a booking at 48 bytes).
	gpu           int32
	memory, cores int32
	// reserve is the part of memory that is the GPU's context reserve (gpu.reserve): what
	// the device books beyond its container's request.
	reserve int32
}

// appendBookings appends to bookings those of the devices of task t's assignment pd that are
// on the node's GPUs; requests are the pod's (entry i of pd belongs to request i).
func (l *ledger) appendBookings(bookings []booking, t *api.TaskInfo, pd vgpu.PodDevices, requests []vgpu.ContainerRequest) []booking {
	for c, devices := range pd {
		for _, d := range devices {
			if i := l.index(d.PhysicalUUID()); i >= 0 && c < len(requests) {
				bookings = append(bookings, l.bookingOf(t, i, d, &requests[c]))
			}
		}
	}
	return bookings
}

// bookingOf is the booking of device d, on GPU i, of task t's container asking req: on a
// whole GPU the memory beyond the request is the context reserve; a MIG instance books its own
// memory, which holds no reserve.
func (l *ledger) bookingOf(t *api.TaskInfo, i int, d vgpu.ContainerDevice, req *vgpu.ContainerRequest) booking {
	b := booking{task: t.UID, pod: t.Name, gpu: int32(i), memory: d.UsedMemory, cores: d.UsedCores}
	if g := &l.gpus[i]; d.UUID == g.info.UUID {
		b.reserve = max(d.UsedMemory-req.MemoryOn(g.memory), 0)
	}
	return b
}

// fitMemo is how a request shape fits a node's GPUs: the score, or the constraint that
// failed; shape 0 means none.
type fitMemo struct {
	shape  uint64
	score  float64
	failed constraint
}

// gpu is one physical GPU: what is booked on it and what every node search reads to fit a
// vGPU, kept together (one cache line) because a search reads it for every GPU of hundreds
// of nodes. The rest of the GPU's description is in info.
type gpu struct {
	used usage
	// slots is how many vGPUs the GPU takes (deviceSplitCount); memory is in units of
	// gpuMemoryFactor MiB.
	slots, memory int32
	// reserve is the context reserve a vgpu-memory request books on top on this GPU, in the
	// same units (vgpu.ContextReserve); 0 on a GPU in mig mode, which HAMi-core does not limit.
	reserve int32
	healthy bool
	// sharing is how the GPU is divided in its mode; nil for a GPU in mig mode whose type
	// has no MIG geometry in the device ConfigMap.
	sharing sharing
	// info describes the GPU; ledgers and their clones share it, nobody changes it.
	info *gpuInfo
}

// gpuInfo is a GPU as the device plugin publishes it, read by the filters and the assignment.
type gpuInfo struct {
	vgpu.NodeDevice
	// upperType is Type in upper case, for the case-insensitive type filters.
	upperType string
}

// newGPU is the GPU the device plugin published as d, shared as the device configuration c
// says, with nothing booked.
func newGPU(d vgpu.NodeDevice, c vgpu.NvidiaConfig) gpu {
	return gpu{slots: d.Count, memory: d.Memory, healthy: d.Healthy, sharing: sharingFor(d, c),
		info: &gpuInfo{NodeDevice: d, upperType: strings.ToUpper(d.Type)}}
}

// usage is what vGPUs book on a GPU. It is a value, 24 bytes, so that the fitter sums it
// and a ledger's Clone copies it, the MIG instances included, without allocating.
type usage struct {
	// devices counts the vGPUs; each takes one of the GPU's slots.
	devices int32
	// cores in percent of the GPU; at most 100 per vGPU, so a sum fits.
	cores int32
	// memory in units of gpuMemoryFactor MiB, as the register annotation counts it.
	memory int64
	// mig is the MIG instances the vGPUs hold, on a GPU in mig mode.
	mig migInstances
}

// plus is the sum of two usages.
func (u usage) plus(v usage) usage {
	return usage{devices: u.devices + v.devices, cores: u.cores + v.cores, memory: u.memory + v.memory, mig: u.mig.plus(v.mig)}
}

// Clone copies the bookings, MIG instances included (they are part of usage); the GPUs'
// descriptions and MIG geometries are shared.
func (l *ledger) Clone() api.Devices {
	c := *l
	c.lastFit = fitMemo{}
	if l.gpus != nil {
		c.gpus = make([]gpu, len(l.gpus))
		copy(c.gpus, l.gpus)
	}
	return &c
}

// Reuse drops the memo of the last fit: shapes are numbered per session, so it would
// answer for another request in the next one.
func (l *ledger) Reuse() { l.lastFit = fitMemo{} }

// book adds a pod's assignment to the GPUs (sign 1) or takes it back (sign -1). It returns
// how many devices name a GPU the node does not list, which the ledger cannot count, or a
// MIG instance it cannot hold (see holdMIGInstance), which it counts without the instance.
func (l *ledger) book(pd vgpu.PodDevices, sign int32) (unknown int) {
	l.lastFit = fitMemo{}
	for _, devices := range pd {
		for _, d := range devices {
			i := l.index(d.PhysicalUUID())
			if i < 0 {
				unknown++
				continue
			}
			g := &l.gpus[i]
			u := &g.used
			u.devices += sign
			u.memory += int64(sign) * int64(d.UsedMemory)
			u.cores += sign * d.UsedCores
			// A device id longer than the GPU's UUID names a MIG instance on it.
			if len(d.UUID) > len(g.info.UUID) && !holdMIGInstance(g, d.UUID, sign) {
				unknown++
			}
		}
	}
	return unknown
}

// hasReserve says whether some GPU has a context reserve.
func (l *ledger) hasReserve() bool {
	for i := range l.gpus {
		if l.gpus[i].reserve > 0 {
			return true
		}
	}
	return false
}

// hasMIG says whether some GPU is in mig mode.
func (l *ledger) hasMIG() bool {
	for i := range l.gpus {
		if l.gpus[i].info.Mode == vgpu.ModeMIG {
			return true
		}
	}
	return false
}

// index is the position of the GPU with the given UUID, or -1. A node has a handful of GPUs,
// so a scan beats a map.
func (l *ledger) index(uuid string) int {
	for i := range l.gpus {
		if l.gpus[i].info.UUID == uuid {
			return i
		}
	}
	return -1
}

// ledgerOf is the node's ledger in the session, or nil when the node publishes no GPUs.
func ledgerOf(node *api.NodeInfo) *ledger {
	l, _ := node.Devices[PluginName].(*ledger)
	return l
}
