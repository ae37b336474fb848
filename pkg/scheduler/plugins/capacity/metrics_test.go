package capacity

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	qt "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota/quotatest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// TestQueueMetrics: a queue's deserved share is the one it declares, also when it has no
// job; a queue holding its deserved share reads overused.
func TestQueueMetrics(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	cluster := frameworktest.Objects{
		Nodes: []*corev1.Node{st.Node("n1", st.Resources("4", "4Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{
			declaredQueue("busy", st.Resources("2", "2Gi"), st.Resources("1", "1Gi")),
			declaredQueue("idle", nil, st.Resources("3", "")),
		},
		PodGroups: []*schedulingv1beta1.PodGroup{qt.PodGroup("running", "busy", 1, nil, schedulingv1beta1.PodGroupRunning)},
		Pods:      []*corev1.Pod{qt.Pod("running-0", "running", "n1", st.Resources("1", "1Gi"))},
	}
	framework.CloseSession(frameworktest.OpenRecording(t, m, &frameworktest.Cache{Snap: cluster.ClusterInfo()}, qt.Actions, builders, conf.PluginOption{Name: PluginName}))

	want := `
# HELP volcano_queue_deserved_milli_cpu The queue's deserved share of the cluster: cpu in millicores
# TYPE volcano_queue_deserved_milli_cpu gauge
volcano_queue_deserved_milli_cpu{queue_name="busy"} 1000
volcano_queue_deserved_milli_cpu{queue_name="idle"} 3000
# HELP volcano_queue_capacity_milli_cpu The queue's spec.capability (an unbounded cpu or memory reads as the largest float64): cpu in millicores
# TYPE volcano_queue_capacity_milli_cpu gauge
volcano_queue_capacity_milli_cpu{queue_name="busy"} 2000
volcano_queue_capacity_milli_cpu{queue_name="idle"} 1.7976931348623157e+308
# HELP volcano_queue_real_capacity_memory_bytes Most the queue can hold: the cluster less other queues' guarantees, within its capability: memory in bytes
# TYPE volcano_queue_real_capacity_memory_bytes gauge
volcano_queue_real_capacity_memory_bytes{queue_name="busy"} 2147483648
volcano_queue_real_capacity_memory_bytes{queue_name="idle"} 4294967296
# HELP volcano_queue_share Largest ratio of allocated to deserved over the queue's resources
# TYPE volcano_queue_share gauge
volcano_queue_share{queue_name="busy"} 1
volcano_queue_share{queue_name="idle"} 0
# HELP volcano_queue_overused 1 when the queue holds its deserved share in every resource, else 0
# TYPE volcano_queue_overused gauge
volcano_queue_overused{queue_name="busy"} 1
volcano_queue_overused{queue_name="idle"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"volcano_queue_deserved_milli_cpu", "volcano_queue_capacity_milli_cpu", "volcano_queue_real_capacity_memory_bytes",
		"volcano_queue_share", "volcano_queue_overused"); err != nil {
		t.Error(err)
	}
}
