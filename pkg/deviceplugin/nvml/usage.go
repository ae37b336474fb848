package nvml

import (
	"errors"
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
	if err := l.ready(); err != nil {
		return nil, err
	}
	count, ret := l.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("%s: count GPUs: %w", l.source, ret)
	}
	usage := make([]Usage, 0, count)
	var errs []error
	for i := 0; i < count; i++ {
		u, err := l.readUsage(i)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: usage of GPU %d: %w", l.source, i, err))
			continue
		}
		usage = append(usage, u)
	}
	return usage, errors.Join(errs...)
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
