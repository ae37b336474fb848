package kubelet

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// MessageLimit is the largest device list, in bytes, the kubelet accepts for
// one resource (kubeletMessageLimit); a longer one leaves the resource's
// allocatable at 0.
const MessageLimit = kubeletMessageLimit

// The resources, as ListTooLargeError names them.
const (
	ListCount      = "count"
	ListMemory     = "memory"
	ListCores      = "cores"
	ListPercentage = "memory percentage"
)

// ListTooLargeError is a device list the kubelet would drop. Fit is the
// value nearest the one configured whose list fits: the largest split count
// or cores per GPU, the smallest memory factor.
type ListTooLargeError struct {
	// List is ListCount, ListMemory or ListCores.
	List string
	// GPUs is how many GPUs the list advertises.
	GPUs int
	// Bytes is the list's size with every device Unhealthy.
	Bytes int
	// Fit is the largest split count (ListCount) or cores per GPU
	// (ListCores), or the smallest memory factor (ListMemory), that fits;
	// 0 for ListPercentage, whose length only the number of GPUs sets.
	Fit int64
}

func (e *ListTooLargeError) Error() string {
	return fmt.Sprintf("the %s device list of %d GPUs would take %d bytes, more than the %d bytes kubelet accepts in one message, "+
		"so the node would advertise none of it", e.List, e.GPUs, e.Bytes, MessageLimit)
}

// CountListSize is the size in bytes of the vgpu-number device list of gpus
// at split count split, every device Unhealthy.
func CountListSize(split int32, gpus []nvml.GPU) int {
	return countResource("", split, nil).listSize(gpus)
}

// CoresListSize is the size in bytes of the vgpu-cores device list of gpus
// at core scaling scaling, every device Unhealthy.
func CoresListSize(scaling float64, gpus []nvml.GPU) int {
	return coresResource("", coresPerGPU(scaling), nil).listSize(gpus)
}

// PercentageListSize is the size in bytes of the memory percentage device
// list of gpus (PercentPerGPU each), every device Unhealthy.
func PercentageListSize(gpus []nvml.GPU) int {
	return percentageResource("", nil).listSize(gpus)
}

// CheckPercentageList refuses GPUs whose memory percentage device list the
// kubelet would drop. Nothing configurable shortens it, so the error's Fit
// is 0: only fewer GPUs help.
func CheckPercentageList(gpus []nvml.GPU) error {
	if size := PercentageListSize(gpus); size > MessageLimit {
		return &ListTooLargeError{List: ListPercentage, GPUs: len(gpus), Bytes: size}
	}
	return nil
}

// CheckCountList refuses a split count whose device list the kubelet would
// drop, with the largest split count that fits in the error.
func CheckCountList(split int32, gpus []nvml.GPU) error {
	size := CountListSize(split, gpus)
	if size <= MessageLimit {
		return nil
	}
	largest := largestFitting(func(n int) bool { return CountListSize(int32(n), gpus) <= MessageLimit })
	return &ListTooLargeError{List: ListCount, GPUs: len(gpus), Bytes: size, Fit: int64(largest)}
}

// CheckCoresList refuses a core scaling whose device list the kubelet would
// drop, with the most cores per GPU that fit in the error (Fit/100 is the
// largest scaling).
func CheckCoresList(scaling float64, gpus []nvml.GPU) error {
	size := CoresListSize(scaling, gpus)
	if size <= MessageLimit {
		return nil
	}
	largest := largestFitting(func(n int) bool { return coresResource("", n, nil).listSize(gpus) <= MessageLimit })
	return &ListTooLargeError{List: ListCores, GPUs: len(gpus), Bytes: size, Fit: int64(largest)}
}

// checkListSizes refuses resources whose lists for gpus the kubelet would
// drop: the last guard before a server registers, however the caller chose
// the values.
func (r Resources) checkListSizes(gpus []nvml.GPU) error {
	var errs []error
	if err := CheckCountList(r.SplitCount, gpus); err != nil {
		errs = append(errs, fmt.Errorf("split count %d: %w", r.SplitCount, err))
	}
	if size := memoryListSize(gpus, r.MemoryFactor, r.MemoryUnits); size > MessageLimit {
		errs = append(errs, fmt.Errorf("memory factor %d MiB: %w", r.MemoryFactor, &ListTooLargeError{List: ListMemory, GPUs: len(gpus),
			Bytes: size, Fit: int64(smallestFactor(gpus, r.MemoryUnits, MessageLimit))}))
	}
	if err := CheckCoresList(r.CoreScaling, gpus); err != nil {
		errs = append(errs, fmt.Errorf("core scaling %g: %w", r.CoreScaling, err))
	}
	if r.Names.MemoryPercentage != "" {
		if err := CheckPercentageList(gpus); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Names.MemoryPercentage, err))
		}
	}
	return errors.Join(errs...)
}

// largestFitting is the largest n in [0, math.MaxInt32] for which fits
// holds, fits being true up to some n and false after it.
func largestFitting(fits func(n int) bool) int {
	// sort.Search finds the first n that does not fit.
	return sort.Search(math.MaxInt32, func(n int) bool { return !fits(n + 1) })
}
