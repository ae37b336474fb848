package kubelet

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// MemoryUnits is how many units of the vGPU memory resource a GPU with
// totalMiB MiB registers when one unit is factor MiB. The rule belongs to
// the node's configuration (memory scaling applies), and the node
// annotation must use the same one; the device plugin's command passes it
// in so that there is only one.
type MemoryUnits func(totalMiB uint64, factor int32) int32

// Resources are what the servers advertise per GPU.
type Resources struct {
	// Names are the resource names. MemoryPercentage is advertised when set,
	// as PercentPerGPU devices per GPU.
	Names vgpu.ResourceNames
	// SplitCount is how many vGPUs share one GPU: the vgpu-number devices
	// per GPU.
	SplitCount int32
	// CoreScaling multiplies the 100 vgpu-cores devices each GPU advertises.
	CoreScaling float64
	// MemoryFactor is how many MiB one vgpu-memory device stands for; pick
	// it with ChooseMemoryFactor.
	MemoryFactor int32
	// MemoryUnits turns a GPU's memory into vgpu-memory devices.
	MemoryUnits MemoryUnits
}

func (r Resources) validate() error {
	var errs []error
	if r.SplitCount < 1 {
		errs = append(errs, fmt.Errorf("split count %d: want at least 1", r.SplitCount))
	}
	if !(r.CoreScaling > 0) || math.IsInf(r.CoreScaling, 0) || coresPerGPU(r.CoreScaling) < 1 {
		errs = append(errs, fmt.Errorf("core scaling %g: want a positive number that leaves at least 1 core device per GPU", r.CoreScaling))
	}
	if r.MemoryFactor < 1 {
		errs = append(errs, fmt.Errorf("memory factor %d: want at least 1 (choose it with ChooseMemoryFactor)", r.MemoryFactor))
	}
	if r.MemoryUnits == nil {
		errs = append(errs, errors.New("no memory unit rule"))
	}
	return errors.Join(errs...)
}

// coresPerGPU is 100 x scaling, rounded rather than truncated: a scaling
// such as 0.29 is 28.999... in floating point and means 29. It is capped at
// math.MaxInt32 (a list that long never fits a kubelet message anyway), so
// that a huge scaling cannot overflow int.
func coresPerGPU(scaling float64) int {
	cores := math.Round(100 * scaling)
	if !(cores < math.MaxInt32) { // NaN included
		return math.MaxInt32
	}
	return int(cores)
}

// PercentPerGPU is how many devices of the memory percentage resource one GPU
// advertises: a pod asking volcano.sh/vgpu-memory-percentage 50 asks for 50
// of them, so kubelet, the scheduler's resource fit and the queue checks all
// find the resource a node has. The scheduler books the percentage of the
// GPU's memory; kubelet counts the literal request node-wide, as it does for
// every vGPU resource.
const PercentPerGPU = 100

// resource is one advertised resource: how many kubelet devices a GPU
// contributes, how they are named, and who answers Allocate for them.
type resource struct {
	name corev1.ResourceName
	// idInfix goes between the GPU UUID and the device's number, so the
	// IDs of the resources never collide: "<uuid>-3", "<uuid>-memory-3",
	// "<uuid>-core-3", "<uuid>-percent-3".
	idInfix   string
	perGPU    func(gpu nvml.GPU) int
	allocator Allocator
}

// The resources in the order they are served and registered: count,
// memory, cores, and the memory percentage when it has a name.
func (r Resources) list(alloc Allocators) []resource {
	list := []resource{
		countResource(r.Names.Count, r.SplitCount, alloc.Count),
		memoryResource(r.Names.Memory, r.MemoryFactor, r.MemoryUnits, alloc.Memory),
		coresResource(r.Names.Cores, coresPerGPU(r.CoreScaling), alloc.Cores),
	}
	if r.Names.MemoryPercentage != "" {
		list = append(list, percentageResource(r.Names.MemoryPercentage, alloc.MemoryPercentage))
	}
	return list
}

func countResource(name corev1.ResourceName, split int32, alloc Allocator) resource {
	return resource{
		name:      name,
		perGPU:    func(nvml.GPU) int { return int(split) },
		allocator: alloc,
	}
}

func coresResource(name corev1.ResourceName, cores int, alloc Allocator) resource {
	return resource{
		name:      name,
		idInfix:   "-core",
		perGPU:    func(nvml.GPU) int { return cores },
		allocator: alloc,
	}
}

func percentageResource(name corev1.ResourceName, alloc Allocator) resource {
	return resource{
		name:      name,
		idInfix:   "-percent",
		perGPU:    func(nvml.GPU) int { return PercentPerGPU },
		allocator: alloc,
	}
}

func memoryResource(name corev1.ResourceName, factor int32, units MemoryUnits, alloc Allocator) resource {
	return resource{
		name:      name,
		idInfix:   "-memory",
		perGPU:    func(gpu nvml.GPU) int { return int(max(units(gpu.MemoryMiB, factor), 0)) },
		allocator: alloc,
	}
}

func (r resource) deviceID(uuid string, i int) string {
	return uuid + r.idInfix + "-" + strconv.Itoa(i)
}

// devices lists the kubelet devices of gpus. A GPU's devices carry its
// health, so an unhealthy GPU's share leaves the node's allocatable.
//
// No topology is sent: kubelet's choice of device IDs is ignored (the
// scheduler's assignment decides the GPU), so NUMA hints built from them
// would only make the topology manager reject pods for the wrong reason.
func (r resource) devices(gpus []nvml.GPU) []*pluginapi.Device {
	total := 0
	for _, gpu := range gpus {
		total += r.perGPU(gpu)
	}
	devices := make([]*pluginapi.Device, 0, total)
	for _, gpu := range gpus {
		health := pluginapi.Healthy
		if !gpu.Healthy {
			health = pluginapi.Unhealthy
		}
		for i := range r.perGPU(gpu) {
			devices = append(devices, &pluginapi.Device{ID: r.deviceID(gpu.UUID, i), Health: health})
		}
	}
	return devices
}

// socketName is the file the resource's server listens on in the kubelet's
// device-plugin directory: "nvidia-" and the part of the name after "/",
// as the upstream plugin names it ("nvidia-vgpu-number.sock").
func (r resource) socketName() string {
	name := string(r.name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return "nvidia-" + name + ".sock"
}
