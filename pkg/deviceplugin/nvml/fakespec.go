package nvml

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits that keep a mistyped fake spec from building something absurd.
const (
	maxFakeGPUs = 128
	// maxFakeMiB keeps MiB*2^20 far from overflowing uint64 (16 PiB).
	maxFakeMiB = 1 << 34
)

// FakeGPU is one GPU of a fake node.
type FakeGPU struct {
	Name      string
	MemoryMiB uint64
}

// ParseFakeSpec expands a fake node description into its GPUs, in order.
//
// The spec is a comma-separated list of groups "<count>x<name>:<MiB>", e.g.
// "2xNVIDIA H200:143771,1xTesla T4:15360". The name runs from the first "x"
// after the count to the last ":", so names may contain "x", "X" and
// spaces (e.g. "RTX 4090") but no comma. Spaces around groups and around
// the parts of a group are ignored. An error names the offending group.
func ParseFakeSpec(spec string) ([]FakeGPU, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("fake GPU spec is empty: want groups like \"2xNVIDIA H200:143771\"")
	}
	var gpus []FakeGPU
	for n, group := range strings.Split(spec, ",") {
		count, gpu, err := parseFakeGroup(strings.TrimSpace(group))
		if err != nil {
			return nil, fmt.Errorf("fake GPU spec %q, group %d %q: %w", spec, n+1, strings.TrimSpace(group), err)
		}
		if len(gpus)+count > maxFakeGPUs {
			return nil, fmt.Errorf("fake GPU spec %q, group %d %q: more than %d GPUs in total",
				spec, n+1, strings.TrimSpace(group), maxFakeGPUs)
		}
		for i := 0; i < count; i++ {
			gpus = append(gpus, gpu)
		}
	}
	return gpus, nil
}

func parseFakeGroup(group string) (int, FakeGPU, error) {
	const want = "want <count>x<name>:<MiB>"
	if group == "" {
		return 0, FakeGPU{}, fmt.Errorf("empty group (%s)", want)
	}
	digits := 0
	for digits < len(group) && group[digits] >= '0' && group[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits == len(group) || (group[digits] != 'x' && group[digits] != 'X') {
		return 0, FakeGPU{}, fmt.Errorf("no GPU count (%s)", want)
	}
	count, err := strconv.Atoi(group[:digits])
	if err != nil || count < 1 {
		return 0, FakeGPU{}, fmt.Errorf("GPU count %q must be a positive number", group[:digits])
	}
	colon := strings.LastIndexByte(group, ':')
	if colon < digits {
		return 0, FakeGPU{}, fmt.Errorf("no memory size (%s)", want)
	}
	name := strings.TrimSpace(group[digits+1 : colon])
	if name == "" {
		return 0, FakeGPU{}, fmt.Errorf("GPU name is empty (%s)", want)
	}
	memText := strings.TrimSpace(group[colon+1:])
	mib, err := strconv.ParseUint(memText, 10, 64)
	if err != nil || mib == 0 || mib > maxFakeMiB {
		return 0, FakeGPU{}, fmt.Errorf("memory %q must be a whole number of MiB between 1 and %d", memText, uint64(maxFakeMiB))
	}
	return count, FakeGPU{Name: name, MemoryMiB: mib}, nil
}
