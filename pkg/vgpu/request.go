package vgpu

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ContainerRequest is what one container of a pod asks for. Scheduler and device plugin must
// derive the list the same way, because entry i of a pod assignment (PodDevices) belongs to
// request i.
type ContainerRequest struct {
	// ContainerIndex is the container's index in pod.Spec.Containers. It differs from the
	// request's own index when a container without vGPU comes first, which is how the device
	// plugin maps an assignment entry back to the right container.
	ContainerIndex int
	ContainerName  string
	// Count is the number of vGPUs, each on a different GPU. It is 1 when only memory is
	// limited, and may be 0 when the container limits the count to 0 and asks nothing else.
	Count int32
	// Memory per vGPU, in units of gpuMemoryFactor MiB; 0 when not set.
	Memory int32
	// MemoryPercentage of each GPU's memory per vGPU, 1 to 100, used only when Memory is 0.
	// PodRequests sets it to 100 (the whole GPU) when neither is given, and leaves it 0 when
	// only Memory is.
	MemoryPercentage int32
	// Cores per vGPU in percent, 0 to 100; 0 means no compute limit.
	Cores int32
}

// MemoryOn is the memory the request books on a GPU with gpuMemory units of memory: Memory
// when set, else MemoryPercentage of gpuMemory rounded down.
func (r ContainerRequest) MemoryOn(gpuMemory int32) int32 {
	if r.Memory > 0 {
		return r.Memory
	}
	return int32(int64(gpuMemory) * int64(r.MemoryPercentage) / wholeGPU)
}

// ReserveOn is the context reserve (ContextReserve) one vGPU of the request books on a GPU
// whose reserve is reserve units: all of it for a request in vgpu-memory units, none for a
// share of the GPU (MemoryPercentage, a whole GPU included). A share divides the GPU's memory,
// contexts included: two 50 % requests must still fit one GPU, and a whole GPU has nothing
// more to give.
func (r ContainerRequest) ReserveOn(reserve int32) int32 {
	if r.Memory > 0 {
		return max(reserve, 0)
	}
	return 0
}

// BookedOn is what one vGPU of the request books on a GPU with gpuMemory units of memory and
// a context reserve of reserve units, and so the memory its assignment carries and its
// container's limit: MemoryOn plus ReserveOn, capped at math.MaxInt32 (more than any GPU).
func (r ContainerRequest) BookedOn(gpuMemory, reserve int32) int32 {
	return saturate32(int64(r.MemoryOn(gpuMemory)) + int64(r.ReserveOn(reserve)))
}

// PodRequests lists the vGPU requests of pod's containers, in container order. Only
// containers in pod.Spec.Containers with a limit on names.Count or names.Memory get an entry
// (init containers never do, as upstream); the other values come from limits, else requests.
// A malformed value fails the whole pod with an error naming the pod, container, resource and
// value, because scheduling part of a pod's containers would leave the rest unserved.
func PodRequests(pod *corev1.Pod, names ResourceNames) ([]ContainerRequest, error) {
	var requests []ContainerRequest
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		r, ok, err := containerRequest(c, names)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s container %q: %w", pod.Namespace, pod.Name, c.Name, err)
		}
		if ok {
			r.ContainerIndex = i
			requests = append(requests, r)
		}
	}
	return requests, nil
}

func containerRequest(c *corev1.Container, names ResourceNames) (ContainerRequest, bool, error) {
	count, hasCount := c.Resources.Limits[names.Count]
	_, hasMemoryLimit := c.Resources.Limits[names.Memory]
	if !hasCount && !hasMemoryLimit {
		return ContainerRequest{}, false, nil
	}
	r := ContainerRequest{ContainerName: c.Name, Count: 1}
	var err error
	if hasCount {
		if r.Count, err = quantity32(names.Count, count); err != nil {
			return ContainerRequest{}, false, err
		}
	}
	if r.Memory, err = limitOrRequest(c, names.Memory); err != nil {
		return ContainerRequest{}, false, err
	}
	percentageSet := false
	if names.MemoryPercentage != "" {
		var q resource.Quantity
		if q, percentageSet = limitOrRequestQuantity(c, names.MemoryPercentage); percentageSet {
			if r.MemoryPercentage, err = quantity32(names.MemoryPercentage, q); err != nil {
				return ContainerRequest{}, false, err
			}
			if r.MemoryPercentage < 1 || r.MemoryPercentage > wholeGPU {
				return ContainerRequest{}, false, fmt.Errorf("%s %d: want 1 to %d", names.MemoryPercentage, r.MemoryPercentage, wholeGPU)
			}
		}
	}
	if r.Cores, err = limitOrRequest(c, names.Cores); err != nil {
		return ContainerRequest{}, false, err
	}
	if r.Cores > wholeGPU {
		return ContainerRequest{}, false, fmt.Errorf("%s %d: want 0 to %d", names.Cores, r.Cores, wholeGPU)
	}
	if r.Count == 0 && (r.Memory > 0 || percentageSet || r.Cores > 0) {
		return ContainerRequest{}, false, fmt.Errorf("%s is 0 but the container asks for vGPU memory or cores", names.Count)
	}
	if r.Memory == 0 && !percentageSet {
		r.MemoryPercentage = wholeGPU
	}
	return r, true, nil
}

// limitOrRequest reads a resource from the limits, else the requests; 0 when neither sets it.
func limitOrRequest(c *corev1.Container, name corev1.ResourceName) (int32, error) {
	q, ok := limitOrRequestQuantity(c, name)
	if !ok {
		return 0, nil
	}
	return quantity32(name, q)
}

func limitOrRequestQuantity(c *corev1.Container, name corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := c.Resources.Limits[name]; ok {
		return q, true
	}
	q, ok := c.Resources.Requests[name]
	return q, ok
}

// quantity32 accepts whole, non-negative quantities that fit an int32: these resources count
// devices, memory units and percent, so "500m" or "1.5" is a mistake, not a rounding question.
func quantity32(name corev1.ResourceName, q resource.Quantity) (int32, error) {
	n, ok := q.AsInt64()
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%s %s: want a whole number from 0 to %d", name, quote(q.String()), math.MaxInt32)
	}
	return int32(n), nil
}
