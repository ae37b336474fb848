package nvml

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Usage is one GPU's current use by every process of the node, as NVML
// reports it: what the host-level metrics serve next to HAMi-core's
// per-container figures.
type Usage struct {
	// Index is the NVML device index.
	Index int
	UUID  string
	// MemoryUsedBytes is nvmlDeviceGetMemoryInfo's Used.
	MemoryUsedBytes uint64
	// UtilizationPercent is the share of the last sample period in which a
	// kernel ran (nvmlDeviceGetUtilizationRates().Gpu).
	UtilizationPercent uint32
}

// Usage reads every GPU's current usage, in NVML index order. GPUs that
// cannot be read are left out and named in the returned error; the others
// are still returned, so one broken GPU does not blank a node's metrics.
func (l *Library) Usage() ([]Usage, error) {
	return readEach(l, "usage of GPU %d", l.readUsage)
}

func (l *Library) readUsage(i int) (Usage, error) {
	dev, ret := l.lib.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		return Usage{}, fmt.Errorf("get handle: %w", ret)
	}
	u := Usage{Index: i}
	if u.UUID, ret = dev.GetUUID(); ret != gonvml.SUCCESS {
		return Usage{}, fmt.Errorf("get UUID: %w", ret)
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != gonvml.SUCCESS {
		return Usage{}, fmt.Errorf("%s: get memory info: %w", u.UUID, ret)
	}
	u.MemoryUsedBytes = mem.Used
	rates, ret := dev.GetUtilizationRates()
	if ret != gonvml.SUCCESS {
		return Usage{}, fmt.Errorf("%s: get utilization: %w", u.UUID, ret)
	}
	u.UtilizationPercent = rates.Gpu
	return u, nil
}
