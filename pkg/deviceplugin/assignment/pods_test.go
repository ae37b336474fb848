package assignment

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Test fixtures shared by this package's tests.

const (
	testNode = "node-a"
	gpuA     = "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1"
	gpuB     = "GPU-8f2c0a71-1b2d-4c3e-9f40-5a6b7c8d9e0f"
	gpuC     = "GPU-0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5"
)

var names = vgpu.DefaultResourceNames()

type fixedGPUs []nvml.GPU

func (g fixedGPUs) GPUs() []nvml.GPU { return g }

func testGPUs() fixedGPUs {
	return fixedGPUs{
		{Index: 0, UUID: gpuA, Name: "NVIDIA H200", MemoryMiB: 143771, Healthy: true},
		{Index: 1, UUID: gpuB, Name: "NVIDIA H200", MemoryMiB: 143771, Healthy: true},
		{Index: 2, UUID: gpuC, Name: "NVIDIA H200", MemoryMiB: 143771, Healthy: false, UnhealthyReason: "XID 79"},
	}
}

// ctr is a container; vgpus < 0 means no vGPU request at all.
func ctr(name string, vgpus, memory, cores int) corev1.Container {
	c := corev1.Container{Name: name, Image: "busybox"}
	if vgpus < 0 {
		return c
	}
	c.Resources.Limits = corev1.ResourceList{names.Count: *resource.NewQuantity(int64(vgpus), resource.DecimalSI)}
	if memory > 0 {
		c.Resources.Limits[names.Memory] = *resource.NewQuantity(int64(memory), resource.DecimalSI)
	}
	if cores > 0 {
		c.Resources.Limits[names.Cores] = *resource.NewQuantity(int64(cores), resource.DecimalSI)
	}
	return c
}

// dev is one assigned device "uuid,NVIDIA,memory,cores".
func dev(uuid string, memory, cores int32) vgpu.ContainerDevice {
	return vgpu.ContainerDevice{UUID: uuid, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: memory, UsedCores: cores}
}

// assigned is a pod bound to testNode with the given assignment still to
// allocate, as the scheduler leaves it: Pending, bind phase allocating.
func assigned(name string, assignedAt int, containers []corev1.Container, toAllocate vgpu.PodDevices) corev1.Pod {
	value, err := toAllocate.Encode()
	if err != nil {
		panic(err)
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         "ns",
			Name:              name,
			UID:               types.UID("uid-" + name),
			ResourceVersion:   "7",
			CreationTimestamp: metav1.NewTime(time.Unix(int64(assignedAt), 0)),
			Annotations: map[string]string{
				vgpu.AssignedNodeAnnotation:      testNode,
				vgpu.AssignedTimeAnnotation:      strconv.Itoa(assignedAt),
				vgpu.AssignedDevicesAnnotation:   value,
				vgpu.DevicesToAllocateAnnotation: value,
				vgpu.BindPhaseAnnotation:         vgpu.BindPhaseAllocating,
			},
		},
		Spec:   corev1.PodSpec{NodeName: testNode, SchedulerName: DefaultSchedulerName, Containers: containers},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// with returns pod changed by edit.
func with(pod corev1.Pod, edit func(*corev1.Pod)) corev1.Pod {
	pod = *pod.DeepCopy()
	edit(&pod)
	return pod
}
