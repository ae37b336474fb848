package quotatest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// The shapes real clusters have, for the queue plugins' tests: every pod asks cpu and memory
// beside its vGPU, and every PodGroup carries the minResources Volcano's job controller
// gives it (its first minMember pods' requests).

// Worker is what each worker pod asks: 1 cpu, 1Gi, one vGPU of 4000 MiB.
func Worker() corev1.ResourceList {
	return st.Resources("1", "1Gi", vgpuNumber, "1", vgpuMemory, "4000")
}

// GPUNode has cpu cpus, 2Gi of memory a cpu, and gpus vGPU slots of 4000 MiB.
func GPUNode(name string, cpu, gpus int) *corev1.Node {
	return st.Node(name, st.Resources(fmt.Sprint(cpu), fmt.Sprintf("%dGi", 2*cpu), vgpuNumber, fmt.Sprint(gpus),
		vgpuMemory, fmt.Sprint(4000*gpus))).Obj()
}

// Times is list multiplied by n.
func Times(list corev1.ResourceList, n int) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		out[name] = *resource.NewMilliQuantity(q.MilliValue()*int64(n), q.Format)
	}
	return out
}

// VCJob adds a PodGroup made as Volcano's job controller makes it (minResources: minMember
// Worker pods' requests) with its pods of Worker requests: Running on node when node is set,
// Pending otherwise.
func VCJob(o *frameworktest.Objects, name, queue string, pods, minMember int, node string) {
	phase := schedulingv1beta1.PodGroupPending
	if node != "" {
		phase = schedulingv1beta1.PodGroupRunning
	}
	o.PodGroups = append(o.PodGroups, PodGroup(name, queue, int32(minMember), Times(Worker(), minMember), phase))
	for i := 0; i < pods; i++ {
		o.Pods = append(o.Pods, Pod(fmt.Sprintf("%s-%d", name, i), name, node, Worker()))
	}
}
