package nvml

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

const bytesPerMiB = 1 << 20

// Devices lists the GPUs ordered by minor number, then index, each with its
// current health. GPUs that cannot be read are left out and named in the
// returned error; the others are still returned.
func (l *Library) Devices() ([]GPU, error) {
	gpus, err := readEach(l, "GPU %d left out", l.readGPU)
	SortGPUs(gpus)
	return gpus, err
}

// readEach reads every GPU NVML counts, in index order. A GPU read fails
// for is left out, its error wrapped with leftOut (a format taking the
// index); the others are still returned, so that one broken GPU does not
// hide the rest.
func readEach[T any](l *Library, leftOut string, read func(index int) (T, error)) ([]T, error) {
	if err := l.ready(); err != nil {
		return nil, err
	}
	count, ret := l.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("%s: count GPUs: %w", l.source, ret)
	}
	out := make([]T, 0, count)
	var errs []error
	for i := 0; i < count; i++ {
		v, err := read(i)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", l.source, fmt.Sprintf(leftOut, i), err))
			continue
		}
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}

// readGPU reads what the plugin needs about the GPU at NVML index i.
func (l *Library) readGPU(i int) (GPU, error) {
	dev, ret := l.lib.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		return GPU{}, fmt.Errorf("get handle: %w", ret)
	}
	gpu := GPU{Index: i, NUMANode: -1, Healthy: true}
	if gpu.UUID, ret = dev.GetUUID(); ret != gonvml.SUCCESS {
		return GPU{}, fmt.Errorf("get UUID: %w", ret)
	}
	if gpu.Name, ret = dev.GetName(); ret != gonvml.SUCCESS {
		return GPU{}, fmt.Errorf("%s: get name: %w", gpu.UUID, ret)
	}
	if gpu.Minor, ret = dev.GetMinorNumber(); ret != gonvml.SUCCESS {
		return GPU{}, fmt.Errorf("%s: get minor number: %w", gpu.UUID, ret)
	}
	// The v1 memory struct on purpose: its Total is what upstream registers,
	// and the scheduler's numbers must agree with upstream's.
	mem, ret := dev.GetMemoryInfo()
	if ret != gonvml.SUCCESS {
		return GPU{}, fmt.Errorf("%s: get memory info: %w", gpu.UUID, ret)
	}
	gpu.MemoryMiB = mem.Total / bytesPerMiB
	if pci, ret := dev.GetPciInfo(); ret == gonvml.SUCCESS {
		gpu.BusID = cString(pci.BusId[:])
		gpu.NUMANode = numaNode(l.sysfsRoot, gpu.BusID)
	}
	gpu.MIGEnabled = l.migEnabled(dev)
	if reason, bad := l.unhealthyReason(gpu.UUID); bad {
		gpu.Healthy, gpu.UnhealthyReason = false, reason
	}
	return gpu, nil
}

// migEnabled reports the GPU's current MIG mode. Drivers older than R450
// have no nvmlDeviceGetMigMode; calling a missing symbol would crash the
// process, so the symbol is looked up first.
func (l *Library) migEnabled(dev gonvml.Device) bool {
	if err := l.lib.Extensions().LookupSymbol("nvmlDeviceGetMigMode"); err != nil {
		return false
	}
	current, _, ret := dev.GetMigMode()
	return ret == gonvml.SUCCESS && current == gonvml.DEVICE_MIG_ENABLE
}

// cString converts a NUL-terminated C char array to a Go string.
func cString(chars []int8) string {
	var b strings.Builder
	for _, c := range chars {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// numaNode reads the NUMA node of a PCI device from sysfs, -1 when unknown.
// NVML writes a 32-bit domain ("00000000:00:06.0") where sysfs uses 16 bits
// ("0000:00:06.0"), and sysfs names are lower case.
func numaNode(sysfsRoot, busID string) int {
	if sysfsRoot == "" || busID == "" {
		return -1
	}
	id := strings.ToLower(busID)
	if domain, rest, ok := strings.Cut(id, ":"); ok && len(domain) == 8 {
		id = domain[4:] + ":" + rest
	}
	raw, err := os.ReadFile(filepath.Join(sysfsRoot, "bus", "pci", "devices", id, "numa_node"))
	if err != nil {
		return -1
	}
	node, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || node < 0 {
		return -1
	}
	return node
}
