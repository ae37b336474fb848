package vgpu

import corev1 "k8s.io/api/core/v1"

// Default extended resource names. Upstream lets the device ConfigMap rename them
// (resourceCountName and friends), so code reads them from ResourceNames, not from here.
const (
	// DefaultCountResource is the number of vGPUs a container asks for; each lands on a
	// different physical GPU.
	DefaultCountResource corev1.ResourceName = "volcano.sh/vgpu-number"
	// DefaultMemoryResource is the device memory per vGPU, in units of gpuMemoryFactor MiB.
	DefaultMemoryResource corev1.ResourceName = "volcano.sh/vgpu-memory"
	// DefaultCoresResource is the share of one GPU's compute per vGPU, in percent.
	DefaultCoresResource corev1.ResourceName = "volcano.sh/vgpu-cores"
	// DefaultMemoryPercentageResource asks for a percentage of each chosen GPU's memory
	// instead of an absolute amount.
	DefaultMemoryPercentageResource corev1.ResourceName = "volcano.sh/vgpu-memory-percentage"
)

// wholeGPU is a whole GPU in percent: all of its memory (memory percentage) or all of its
// compute (cores).
const wholeGPU = 100

// ResourceNames are the extended resource names in use, as configured in device-config.yaml.
type ResourceNames struct {
	Count  corev1.ResourceName
	Memory corev1.ResourceName
	Cores  corev1.ResourceName
	// MemoryPercentage may be empty, which turns percentage requests off (upstream Volcano's
	// built-in default does that; the shipped ConfigMap turns them on).
	MemoryPercentage corev1.ResourceName
}

// DefaultResourceNames returns the names the upstream device ConfigMap ships with,
// percentage requests included.
func DefaultResourceNames() ResourceNames {
	return ResourceNames{
		Count:            DefaultCountResource,
		Memory:           DefaultMemoryResource,
		Cores:            DefaultCoresResource,
		MemoryPercentage: DefaultMemoryPercentageResource,
	}
}
