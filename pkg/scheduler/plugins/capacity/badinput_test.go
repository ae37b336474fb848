package capacity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	qt "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota/quotatest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestQueueWithoutVGPUDimension: a queue whose capability names cpu only does not cap vGPU;
// a vGPU job is admitted and placed with no message, which docs/bad-input.md records
// as the behaviour, not an error. A queue that must cap vGPU names the vGPU resources.
func TestQueueWithoutVGPUDimension(t *testing.T) {
	s := qt.Scenario{
		Name: "capability without vGPU",
		Cluster: frameworktest.Objects{
			Nodes: []*corev1.Node{st.Node("gpu-node", st.Resources("8", "16Gi", string(vgpu.DefaultCountResource), "10",
				string(vgpu.DefaultMemoryResource), "8192", string(vgpu.DefaultCoresResource), "100")).Obj()},
			Queues:    []*schedulingv1beta1.Queue{qt.Queue("cpu-only", st.Resources("4", ""))},
			PodGroups: []*schedulingv1beta1.PodGroup{qt.PodGroup("job", "cpu-only", 1, qt.VGPU("6000"), schedulingv1beta1.PodGroupPending)},
			Pods:      []*corev1.Pod{qt.Pod("job-0", "job", "", qt.VGPU("6000"))},
		},
		Job: "job", WantEnqueued: true, WantPlaced: []string{"job-0"},
	}
	s.Run(t, builders, conf.PluginOption{Name: PluginName})
}
