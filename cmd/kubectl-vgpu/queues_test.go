package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// queueTree is a department, research, with two teams: team-a holds more vGPUs and memory
// than it deserves, team-b less, and names vgpu-cores in its capability. orphan's parent
// does not exist, loop-a and loop-b are each other's parent, and default hangs under the
// root, which holds what the scheduler allocated in all. Allocations carry cpu and memory
// beside the vGPU resources, as the scheduler writes them.
func queueTree() []runtime.Object {
	return []runtime.Object{
		queue("root", "", 1, nil, nil, allocated("40", "160Gi", 4, 80000), nil),
		queue("default", "", 1, nil, nil, allocated("0", "0", 0, 0), nil),
		queue("research", "root", 2, vgpuList(4, 80000, -1), vgpuList(6, 120000, -1), allocated("24", "96Gi", 4, 80000), vgpuList(1, 20000, -1)),
		queue("team-a", "research", 1, vgpuList(2, 40000, -1), nil, allocated("16", "64Gi", 3, 60000), nil),
		queue("team-b", "research", 1, vgpuList(2, 40000, -1), vgpuList(4, 80000, 200), allocated("8", "32Gi", 1, 20000), nil),
		queue("orphan", "gone", 1, vgpuList(1, 10000, -1), nil, allocated("0", "0", 0, 0), nil),
		queue("loop-a", "loop-b", 1, nil, nil, nil, nil),
		queue("loop-b", "loop-a", 1, nil, nil, nil, nil),
	}
}

func TestQueuesGolden(t *testing.T) {
	for _, tt := range []goldenCase{
		{name: "queues", args: "queues"},
		{name: "queues-wide", args: "queues -o wide"},
		{name: "queues-json", args: "queues -o json"},
		{name: "queues-without-root", args: "queues", volcano: queueTree()[1:]},
		{name: "error-forbidden-queues", args: "queues", react: forbid("list", "queues", "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.volcano == nil {
				tt.volcano = queueTree()
			}
			runGolden(t, tt)
		})
	}
}

func queue(name, parent string, weight int32, deserved, capability, allocated, guarantee corev1.ResourceList) *schedulingv1beta1.Queue {
	q := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1beta1.QueueSpec{Parent: parent, Weight: weight, Deserved: deserved, Capability: capability,
			Guarantee: schedulingv1beta1.Guarantee{Resource: guarantee}},
		Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen, Allocated: allocated},
	}
	switch name {
	case "root":
		q.Spec.Reclaimable = ptr.To(false)
	case "team-a":
		q.Status.Running, q.Status.Inqueue, q.Status.Pending = 2, 1, 0
	case "team-b":
		q.Status.Running, q.Status.Pending = 1, 2
	}
	return q
}

// vgpuList names vgpu-number and vgpu-memory, and vgpu-cores unless cores is negative, with
// the cpu and memory a queue's lists also name.
func vgpuList(number, memory, cores int64) corev1.ResourceList {
	list := corev1.ResourceList{
		corev1.ResourceCPU:         resource.MustParse("64"),
		corev1.ResourceMemory:      resource.MustParse("512Gi"),
		vgpu.DefaultCountResource:  *resource.NewQuantity(number, resource.DecimalSI),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(memory, resource.DecimalSI),
	}
	if cores >= 0 {
		list[vgpu.DefaultCoresResource] = *resource.NewQuantity(cores, resource.DecimalSI)
	}
	return list
}

// allocated is a status.allocated as the scheduler writes it: scalars in milli-units.
func allocated(cpu, memory string, number, vgpuMemory int64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:         resource.MustParse(cpu),
		corev1.ResourceMemory:      resource.MustParse(memory),
		vgpu.DefaultCountResource:  *resource.NewMilliQuantity(number*1000, resource.DecimalSI),
		vgpu.DefaultMemoryResource: *resource.NewMilliQuantity(vgpuMemory*1000, resource.DecimalSI),
	}
}
