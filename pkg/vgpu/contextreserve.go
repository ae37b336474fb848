package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ContextReserve is the device memory a CUDA context takes, per GPU model, out of a HAMi-core
// memory limit. HAMi-core charges each CUDA process's context to its container's limit
// (518 MiB on an H200 with CUDA 13), so a container limited to exactly the vgpu-memory it asked
// for can allocate that much less. With a reserve, the scheduler books a vgpu-memory request
// plus the reserve on the GPU and writes that sum in the assignment; the device plugin limits
// the container to the assignment's memory, so one CUDA process can allocate what was asked.
// docs/protocol.md says why the sum, not the request, travels in the assignment.
type ContextReserve struct {
	// Models are matched as substrings of a GPU's type ("NVIDIA-<NVML name>"), as
	// knownMigGeometries' models are; the first entry with a match applies.
	Models []string `json:"models"`
	// ContextReserveMiB is added to each vGPU of a vgpu-memory request on such a GPU; 0 adds
	// nothing.
	ContextReserveMiB int32 `json:"contextReserveMiB"`
}

// ContextReserves is the device ConfigMap's contextReserves list.
type ContextReserves []ContextReserve

// maxContextReserveMiB bounds a reserve: a context takes hundreds of MiB, and a figure in the
// tens of GiB is a unit mistake (bytes or KiB for MiB).
const maxContextReserveMiB = 16384

// MiBFor is the reserve of a GPU of the given type (a NodeDevice Type, "NVIDIA-NVIDIA H200"):
// that of the first entry one of whose models is a substring of it (case matters); 0 when none.
func (rs ContextReserves) MiBFor(deviceType string) int32 {
	for _, entry := range rs {
		for _, model := range entry.Models {
			if model != "" && strings.Contains(deviceType, model) {
				return entry.ContextReserveMiB
			}
		}
	}
	return 0
}

// validate returns the first problem with a Field relative to the entry.
func (r ContextReserve) validate() *ConfigError {
	if len(r.Models) == 0 {
		return &ConfigError{Field: "models", Reason: "empty"}
	}
	for i, model := range r.Models {
		if model == "" {
			return &ConfigError{Field: fmt.Sprintf("models[%d]", i), Reason: "empty"}
		}
	}
	if r.ContextReserveMiB < 0 || r.ContextReserveMiB > maxContextReserveMiB {
		return &ConfigError{Field: "contextReserveMiB", Value: itoa(r.ContextReserveMiB),
			Reason: fmt.Sprintf("want 0 to %d MiB", maxContextReserveMiB)}
	}
	return nil
}

// ReserveUnits is a reserve of mib MiB in units of factor MiB (gpuMemoryFactor), rounded up so
// that the limit never falls short of it. A factor below 1 counts as 1.
func ReserveUnits(mib, factor int32) int32 {
	if mib <= 0 {
		return 0
	}
	factor = max(factor, 1)
	return int32((int64(mib) + int64(factor) - 1) / int64(factor))
}

// FormatMemoryFactor renders a factor as NodeMemoryFactorAnnotation carries it.
func FormatMemoryFactor(factor int32) string {
	return strconv.FormatInt(int64(factor), 10)
}

// ParseMemoryFactor reads a NodeMemoryFactorAnnotation value: a whole number of MiB, at
// least 1.
func ParseMemoryFactor(value string) (int32, error) {
	n, err := parseNonNegative32(NodeMemoryFactorAnnotation, value)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, fmt.Errorf("%s %s: want at least 1 MiB", NodeMemoryFactorAnnotation, quote(value))
	}
	return n, nil
}

// saturate32 is n capped to the int32 range, for sums of int32 values.
func saturate32(n int64) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}
