package assignment

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// containerFor maps the candidate's entry to the pod's container: entry i
// belongs to the i-th container that requests vGPU, which is not
// pod.Spec.Containers[i] when a container without vGPU comes first. The
// entry must be exactly what that container requests (matchRequest).
func containerFor(c candidate, cfg Config, gpus []nvml.GPU) (*corev1.Container, error) {
	names := cfg.Names
	pod := c.pod
	for _, initContainer := range pod.Spec.InitContainers {
		if _, ok := initContainer.Resources.Limits[names.Count]; ok {
			return nil, fmt.Errorf("pod %s/%s init container %q requests %s: devices are assigned to app containers only",
				pod.Namespace, pod.Name, initContainer.Name, names.Count)
		}
	}
	requests, err := vgpu.PodRequests(pod, names)
	if err != nil {
		return nil, err
	}
	if len(requests) != len(c.toAllocate) {
		return nil, fmt.Errorf("pod %s/%s: %s has %d container entries but %d containers request vGPU",
			pod.Namespace, pod.Name, vgpu.DevicesToAllocateAnnotation, len(c.toAllocate), len(requests))
	}
	request := requests[c.entry]
	if int(request.Count) != len(c.devices()) {
		return nil, fmt.Errorf("pod %s/%s container %q requests %d vGPUs but its entry %d in %s has %d",
			pod.Namespace, pod.Name, request.ContainerName, request.Count, c.entry, vgpu.DevicesToAllocateAnnotation, len(c.devices()))
	}
	if err := matchRequest(request, c.devices(), gpus, cfg); err != nil {
		return nil, fmt.Errorf("pod %s/%s container %q, entry %d in %s: %w",
			pod.Namespace, pod.Name, request.ContainerName, c.entry, vgpu.DevicesToAllocateAnnotation, err)
	}
	return &pod.Spec.Containers[request.ContainerIndex], nil
}

// matchRequest checks that devices are exactly what the container asks for,
// as the scheduler books it: GPUs of this node (the decoder already refuses
// one GPU twice), each with the
// container's memory (its memory, else its percentage of the GPU) and its
// cores, never more than the GPU has. The GPU's memory is what the node
// publishes (Config.gpuMemory, scaled by deviceMemoryScaling), the figure the
// scheduler books a whole GPU and percentages of. Anything else is an assignment the
// scheduler did not make, and would hand out limits nobody paid for.
//
// A memory request may book up to its GPU model's context reserve on top
// (vgpu.ContainerRequest.ReserveOn), which the container's limit then
// includes. Any figure from the request to the request plus the reserve this
// plugin knows is accepted: an upstream scheduler books none, and ours books
// the reserve of the device ConfigMap it read, which this plugin reads only at
// start.
func matchRequest(request vgpu.ContainerRequest, devices vgpu.ContainerDevices, gpus []nvml.GPU, cfg Config) error {
	for i, d := range devices {
		g := slices.IndexFunc(gpus, func(g nvml.GPU) bool { return g.UUID == d.UUID })
		if g < 0 {
			return fmt.Errorf("device %d: GPU %s is not one of this node's", i, d.UUID)
		}
		units := cfg.gpuMemory(gpus[g])
		want := request.MemoryOn(units)
		reserve := request.ReserveOn(vgpu.ReserveUnits(cfg.ContextReserves.MiBFor(vgpu.DeviceTypeForModel(gpus[g].Name)), cfg.MemoryFactor))
		switch {
		case want > units:
			return fmt.Errorf("device %d: the container asks %d memory units, more than GPU %s has (%d)", i, want, d.UUID, units)
		case d.UsedMemory == 0 && want == units:
			// Booking 0 for a container that asks the whole GPU is the older
			// schedulers' way of saying so; Allocate then limits it to the GPU.
		case reserve > 0 && (d.UsedMemory < want || int64(d.UsedMemory) > min(int64(want)+int64(reserve), int64(units))):
			// The scheduler refuses a request that fits the GPU only without the
			// reserve, so no honest booking exceeds the GPU.
			return fmt.Errorf("device %d books %d memory units, the container asks %d, and %d with the GPU's context reserve",
				i, d.UsedMemory, want, int64(want)+int64(reserve))
		case reserve == 0 && d.UsedMemory != want:
			return fmt.Errorf("device %d books %d memory units, the container asks %d", i, d.UsedMemory, want)
		}
		switch {
		case d.UsedCores != request.Cores:
			return fmt.Errorf("device %d books %d cores, the container asks %d", i, d.UsedCores, request.Cores)
		case d.UsedCores > 100:
			return fmt.Errorf("device %d books %d cores, more than a GPU has (100)", i, d.UsedCores)
		}
	}
	return nil
}
