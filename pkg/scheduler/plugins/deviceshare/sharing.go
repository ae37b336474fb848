package deviceshare

import "github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"

// wholeGPUCores is a whole GPU's compute, in the percent vgpu-cores counts.
const wholeGPUCores = 100

// sharing is how the GPUs of one operating mode are divided between containers: whether a
// GPU can take one more vGPU, and what that vGPU is. Filters, GPU order, scores and the
// ledger's bookkeeping are the same for every mode, so a mode adds one implementation in its
// own file and a case in sharingFor. A mode whose vGPUs book something other than plain
// counters (MIG instances) also brings that state into gpu.
type sharing interface {
	// fit checks whether g, with u booked on it (the pod's earlier vGPUs included), can take
	// a vGPU of memory (units of gpuMemoryFactor MiB) with reserve more on top (its context
	// reserve, vgpu.ContainerRequest.ReserveOn) and cores (percent). It returns what the vGPU
	// would book on g, or the constraint that fails. It runs for every GPU of every node
	// searched, so it only compares numbers.
	fit(g *gpu, u usage, memory, reserve, cores int32) (usage, constraint)
	// device is the vGPU a container gets on g when fit said it books adds.
	device(g *gpu, adds usage) vgpu.ContainerDevice
}

// sharingFor is the sharing of the GPU the device plugin published as d, under the device
// configuration c; nil for a GPU in mig mode whose type has no MIG geometry in c.
func sharingFor(d vgpu.NodeDevice, c vgpu.NvidiaConfig) sharing {
	if d.Mode == vgpu.ModeMIG {
		return migSharingFor(d, c)
	}
	// hami-core, and mps, which upstream treats as hami-core (the decoder admits no other
	// mode).
	return hamiCore{}
}

// hamiCore shares a GPU through HAMi-core's limits: a vGPU takes a slot, its memory (with its
// context reserve) and its share of the cores, which HAMi-core enforces in the container.
type hamiCore struct{}

func (hamiCore) fit(g *gpu, u usage, memory, reserve, cores int32) (usage, constraint) {
	booked := int64(memory) + int64(reserve)
	switch {
	case memory > g.memory:
		return usage{}, memoryOverGPU
	case booked > int64(g.memory):
		return usage{}, reserveOverGPU
	case u.devices >= g.slots:
		return usage{}, noFreeSlot
	case cores == wholeGPUCores && u.devices > 0:
		return usage{}, exclusiveTaken
	case cores == 0 && u.cores >= wholeGPUCores:
		// A container without a core limit would run unthrottled on a GPU whose compute is
		// promised in full to others.
		return usage{}, coresFull
	case int64(g.memory)-u.memory < booked:
		return usage{}, memoryShort
	case u.cores+cores > wholeGPUCores:
		return usage{}, coresShort
	}
	return usage{devices: 1, memory: booked, cores: cores}, fits
}

func (hamiCore) device(g *gpu, adds usage) vgpu.ContainerDevice {
	return vgpu.ContainerDevice{UUID: g.info.UUID, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: int32(adds.memory), UsedCores: adds.cores}
}
