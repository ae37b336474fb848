package main

import (
	"fmt"
	"sort"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// maxClosestGPUs is how many GPUs "why" lists for a request: the few a user would free or
// resize for, not the whole cluster.
const maxClosestGPUs = 5

// gpuFit is how one GPU of the ledger measures up to one vGPU of a request.
type gpuFit struct {
	gpu     gpuBooking
	freeMiB int64
	// askedMiB is the request's memory on this GPU: its vgpu-memory in the node's units, or
	// its share of the GPU's memory.
	askedMiB int64
	// lacks says what the GPU lacks, the checks of the scheduler's hami-core sharing in its
	// order; empty when the vGPU fits.
	lacks []string
}

// closestGPUs measures every GPU against one vGPU of r and returns the closest few: healthy
// GPUs first, then those with the most free memory.
func closestGPUs(gpus []gpuBooking, r vgpu.ContainerRequest) []gpuFit {
	fits := make([]gpuFit, len(gpus))
	for i, g := range gpus {
		fits[i] = fitOf(g, r)
	}
	sort.SliceStable(fits, func(i, j int) bool {
		if fits[i].gpu.Healthy != fits[j].gpu.Healthy {
			return fits[i].gpu.Healthy
		}
		return fits[i].freeMiB > fits[j].freeMiB
	})
	return fits[:min(len(fits), maxClosestGPUs)]
}

// fitOf measures g against one vGPU of r. The scheduler also adds the CUDA context reserve
// the device ConfigMap may set per GPU model; that ConfigMap is the scheduler's to read, so a
// GPU short by less than the reserve shows as fitting here, and its FailedScheduling Event
// has the last word.
func fitOf(g gpuBooking, r vgpu.ContainerRequest) gpuFit {
	f := gpuFit{gpu: g, freeMiB: g.MemoryTotalMiB - g.MemoryBookedMiB,
		askedMiB: int64(r.MemoryOn(int32(g.MemoryTotalMiB/g.mibPerUnit))) * g.mibPerUnit}
	if !g.Healthy {
		f.lacks = []string{"unhealthy"}
		return f
	}
	if g.SlicesUsed >= int(g.SlicesSplit) {
		f.lacks = append(f.lacks, fmt.Sprintf("no free slice (%d/%d)", g.SlicesUsed, g.SlicesSplit))
	}
	if f.askedMiB > f.freeMiB {
		f.lacks = append(f.lacks, fmt.Sprintf("%d MiB free, %d MiB asked", f.freeMiB, f.askedMiB))
	}
	coresFree := g.CoresTotal - g.CoresBooked
	switch {
	case r.Cores == wholeGPUCores && g.SlicesUsed > 0:
		f.lacks = append(f.lacks, fmt.Sprintf("%d cores asked, which needs a GPU no other vGPU uses", r.Cores))
	case r.Cores == 0 && coresFree <= 0:
		// HAMi-core would not throttle it on a GPU whose compute is promised to others.
		f.lacks = append(f.lacks, "all cores booked, and a vGPU without a cores limit needs some")
	case int64(r.Cores) > coresFree:
		f.lacks = append(f.lacks, fmt.Sprintf("%d cores free, %d asked", coresFree, r.Cores))
	}
	return f
}
