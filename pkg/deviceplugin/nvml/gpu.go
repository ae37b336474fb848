// Package nvml discovers the node's NVIDIA GPUs and watches their health
// through NVML (github.com/NVIDIA/go-nvml).
//
// One implementation, Library, runs over any go-nvml Interface: the real
// libnvidia-ml.so (NewReal) or a mock built from go-nvml's mock package
// (NewFake). Tests and the local test-bed therefore exercise the same
// discovery and health code that runs on a GPU node.
package nvml

import (
	"context"
	"sort"
)

// GPU is one physical GPU as the device plugin sees it.
type GPU struct {
	// Index is the NVML device index (the order NVML enumerates devices in).
	Index int
	// UUID is NVML's identity, "GPU-" + 8-4-4-4-12 hex; every annotation and
	// every container environment refers to a GPU by it.
	UUID string
	// Name is the NVML product name, e.g. "NVIDIA H200".
	Name string
	// MemoryMiB is NVML's (v1) total memory in bytes, floored to MiB. This is
	// the figure upstream registers; it is not reduced by any reservation.
	MemoryMiB uint64
	// Minor is the device node's minor number: /dev/nvidia<Minor>.
	Minor int
	// BusID is the PCI bus id as NVML reports it, e.g. "00000000:00:06.0".
	BusID string
	// NUMANode is the NUMA node of the GPU's PCI device, -1 when unknown
	// (no sysfs entry, a single-node machine, or the fake backend).
	NUMANode int
	// MIGEnabled is true when MIG mode is currently on; HAMi-core sharing
	// cannot be used on such a GPU.
	MIGEnabled bool
	// Healthy is false once a critical event has been seen for the GPU. There
	// is no way back: NVML gives no signal that a GPU has recovered, so only a
	// restart of the plugin (after the GPU is fixed) clears it.
	Healthy bool
	// UnhealthyReason says why Healthy is false; empty when healthy.
	UnhealthyReason string
}

// HealthEvent reports that a GPU's health changed.
type HealthEvent struct {
	UUID    string
	Healthy bool
	// Reason names the event that caused the change, e.g. "XID 79".
	Reason string
}

// DriverInfo describes the NVIDIA driver behind the backend.
type DriverInfo struct {
	DriverVersion string
	NVMLVersion   string
	// CUDADriverVersion is NVML's encoding: 1000*major + 10*minor (13000 = 13.0).
	CUDADriverVersion int
}

// Backend is what the rest of the device plugin needs from NVML.
// Library (real or fake) implements it.
type Backend interface {
	// Init loads and initialises NVML; call it once before anything else.
	Init() error
	// Shutdown releases NVML; the backend cannot be used afterwards.
	Shutdown() error
	// Driver describes the driver NVML talks to.
	Driver() (DriverInfo, error)
	// Devices lists the GPUs ordered by minor number, then index. When some
	// GPUs cannot be read it returns the others together with an error that
	// names each GPU it left out.
	Devices() ([]GPU, error)
	// WatchHealth watches NVML events until ctx is done and calls report each
	// time a GPU turns unhealthy. It returns at once (nil) when health checks
	// are disabled. Devices reflects the same state, so a caller may also
	// just re-read Devices after each report.
	WatchHealth(ctx context.Context, report func(HealthEvent)) error
	// Usage reads each GPU's current memory use and utilisation by all
	// processes of the node.
	Usage() ([]Usage, error)
}

// SortGPUs puts GPUs in the order the plugin publishes them: by device
// minor number (the /dev/nvidiaN a container sees), then by NVML index, so
// the order is stable even if NVML enumerates differently after a reboot.
func SortGPUs(gpus []GPU) {
	sort.SliceStable(gpus, func(i, j int) bool {
		if gpus[i].Minor != gpus[j].Minor {
			return gpus[i].Minor < gpus[j].Minor
		}
		return gpus[i].Index < gpus[j].Index
	})
}
