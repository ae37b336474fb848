package kubelet

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// kubeletMessageLimit is the largest ListAndWatch response kubelet reads: it
// keeps gRPC's default receive limit. A larger response is dropped, and
// the resource's allocatable stays at 0 or at a stale value (the upstream
// plugin's "vgpu-memory allocatable 0 on big GPUs").
const kubeletMessageLimit = 4 << 20

// memoryListBudget is what an automatically chosen factor lets the memory
// list take: half of kubelet's limit, so that the response stays far from
// it even if the device list grows a little (a GPU added by a config
// change) and leaves room for whatever kubelet's gRPC layer adds.
const memoryListBudget = kubeletMessageLimit / 2

// ChooseMemoryFactor returns the factor (MiB per vGPU memory unit) to
// advertise gpus with. configured 0 means automatic: the smallest factor
// whose memory device list stays within memoryListBudget. A configured
// factor is kept when the list fits kubelet's message limit at all, and
// refused with the smallest factor that would fit otherwise: silently
// advertising no memory is what upstream does.
//
// The sizes are the exact protobuf sizes of the response, measured with
// every device Unhealthy (the longer health value), so a GPU turning
// unhealthy can never push the list over.
func ChooseMemoryFactor(configured int32, gpus []nvml.GPU, units MemoryUnits) (int32, error) {
	switch {
	case configured < 0:
		return 0, fmt.Errorf("memory factor %d: want 0 (automatic) or a number of MiB", configured)
	case configured > 0:
		size := memoryListSize(gpus, configured, units)
		if size > kubeletMessageLimit {
			fit := smallestFactor(gpus, units, kubeletMessageLimit)
			return 0, fmt.Errorf("memory factor %d MiB: %w; use a factor of at least %d, or 0 to choose one automatically",
				configured, &ListTooLargeError{List: ListMemory, GPUs: len(gpus), Bytes: size, Fit: int64(fit)}, fit)
		}
		return configured, nil
	}
	factor := smallestFactor(gpus, units, memoryListBudget)
	klog.InfoS("Chose the vGPU memory factor automatically", "factorMiB", factor, "gpus", len(gpus),
		"listBytes", memoryListSize(gpus, factor, units), "budgetBytes", memoryListBudget)
	return factor, nil
}

// smallestFactor is the smallest factor whose memory list takes at most
// budget bytes, found by bisection: the size only falls as the factor
// grows. The first guess for a factor that fits is size(1)/budget, since
// the list at factor f is about the first 1/f of the list at factor 1 and
// those are its shortest entries; it is doubled until it really fits.
func smallestFactor(gpus []nvml.GPU, units MemoryUnits, budget int) int32 {
	fits := func(factor int32) bool { return memoryListSize(gpus, factor, units) <= budget }
	high := int32(min(max(memoryListSize(gpus, 1, units)/budget, 1), math.MaxInt32))
	low := int32(1)
	for !fits(high) && high < math.MaxInt32 {
		low = high + 1
		high = int32(min(2*int64(high), math.MaxInt32))
	}
	for low < high {
		mid := low + (high-low)/2
		if fits(mid) {
			high = mid
		} else {
			low = mid + 1
		}
	}
	return high
}

// memoryListSize is the protobuf size of the ListAndWatch response that
// advertises gpus' memory at factor, every device Unhealthy. A repeated
// field's size is the sum of its entries' sizes, and the IDs of one GPU
// differ only in the width of their number, so one entry is measured per
// width instead of building a list of tens of thousands of devices.
func memoryListSize(gpus []nvml.GPU, factor int32, units MemoryUnits) int {
	return memoryResource("", factor, units, nil).listSize(gpus)
}

// listSize is the protobuf size of the ListAndWatch response that
// advertises r on gpus, every device Unhealthy (see memoryListSize).
func (r resource) listSize(gpus []nvml.GPU) int {
	size := 0
	for _, gpu := range gpus {
		n := r.perGPU(gpu)
		for low, high := 0, 10; low < n; low, high = high, high*10 {
			size += (min(n, high) - low) * listEntrySize(r.deviceID(gpu.UUID, low))
		}
	}
	return size
}

func listEntrySize(id string) int {
	return proto.Size(&pluginapi.ListAndWatchResponse{
		Devices: []*pluginapi.Device{{ID: id, Health: pluginapi.Unhealthy}},
	})
}
