package proportion

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

// metricsCluster: one node of 8 cpu / 8Gi / 110 pods. Queue a (weight 1) runs 2 cpu / 2Gi
// and waits for 6 cpu / 6Gi; queue b (weight 3, capability 4 cpu) waits for 2 cpu / 2Gi;
// queue idle (weight 2, guarantee 1 cpu) has no job.
//
// Water-filling: the first round offers a a quarter (2 cpu, 2Gi) and b three quarters, cut
// to its request (2 cpu, 2Gi, 1 pod); the second gives a the 4 cpu / 4Gi b left, so a
// deserves 6 cpu / 6Gi / its 2 pods. The guarantee takes 1 cpu out of a's and b's real
// capability (b's is also cut to 4 cpu by its capability).
func metricsCluster(withB bool) frameworktest.Objects {
	b := qt.Queue("b", st.Resources("4", ""))
	b.Spec.Weight = 3
	idle := qt.Queue("idle", nil)
	idle.Spec.Weight = 2
	idle.Spec.Guarantee.Resource = st.Resources("1", "")
	c := frameworktest.Objects{
		Nodes:     []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues:    []*schedulingv1beta1.Queue{qt.Queue("a", nil), idle},
		PodGroups: []*schedulingv1beta1.PodGroup{qt.PodGroup("pg-a", "a", 1, nil, schedulingv1beta1.PodGroupRunning)},
		Pods: []*corev1.Pod{
			qt.Pod("a-0", "pg-a", "n1", st.Resources("2", "2Gi")),
			qt.Pod("a-1", "pg-a", "", st.Resources("6", "6Gi")),
		},
	}
	if withB {
		c.Queues = append(c.Queues, b)
		c.PodGroups = append(c.PodGroups, qt.PodGroup("pg-b", "b", 1, nil, schedulingv1beta1.PodGroupInqueue))
		c.Pods = append(c.Pods, qt.Pod("b-0", "pg-b", "", st.Resources("2", "2Gi")))
	}
	return c
}

// TestQueueMetrics: the session's accounts, including a placement made during it, are what
// the queue metrics show once it closes; a queue deleted before the next session loses its
// series.
func TestQueueMetrics(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	ssn := frameworktest.OpenRecording(t, m, &frameworktest.Cache{Snap: metricsCluster(true).ClusterInfo()}, qt.Actions, builders, conf.PluginOption{Name: PluginName})
	// b takes its whole deserved share: share 1, overused.
	if qt.Allocate(ssn, qt.Task(ssn, "b-0")) == "" {
		t.Fatal("b-0 was not placed")
	}
	framework.CloseSession(ssn)

	const maxFloat = "1.7976931348623157e+308"
	want := `
# HELP volcano_queue_allocated_milli_cpu Resources held by the queue's placed tasks: cpu in millicores
# TYPE volcano_queue_allocated_milli_cpu gauge
volcano_queue_allocated_milli_cpu{queue_name="a"} 2000
volcano_queue_allocated_milli_cpu{queue_name="b"} 2000
volcano_queue_allocated_milli_cpu{queue_name="idle"} 0
# HELP volcano_queue_allocated_scalar_resources Resources held by the queue's placed tasks: each other resource in milli-units
# TYPE volcano_queue_allocated_scalar_resources gauge
volcano_queue_allocated_scalar_resources{queue_name="a",resource="pods"} 1000
volcano_queue_allocated_scalar_resources{queue_name="b",resource="pods"} 1000
# HELP volcano_queue_request_memory_bytes Resources requested by the queue's placed and pending tasks: memory in bytes
# TYPE volcano_queue_request_memory_bytes gauge
volcano_queue_request_memory_bytes{queue_name="a"} 8589934592
volcano_queue_request_memory_bytes{queue_name="b"} 2147483648
volcano_queue_request_memory_bytes{queue_name="idle"} 0
# HELP volcano_queue_deserved_milli_cpu The queue's deserved share of the cluster: cpu in millicores
# TYPE volcano_queue_deserved_milli_cpu gauge
volcano_queue_deserved_milli_cpu{queue_name="a"} 6000
volcano_queue_deserved_milli_cpu{queue_name="b"} 2000
volcano_queue_deserved_milli_cpu{queue_name="idle"} 0
# HELP volcano_queue_deserved_scalar_resources The queue's deserved share of the cluster: each other resource in milli-units
# TYPE volcano_queue_deserved_scalar_resources gauge
volcano_queue_deserved_scalar_resources{queue_name="a",resource="pods"} 2000
volcano_queue_deserved_scalar_resources{queue_name="b",resource="pods"} 1000
# HELP volcano_queue_capacity_milli_cpu The queue's spec.capability (an unbounded cpu or memory reads as the largest float64): cpu in millicores
# TYPE volcano_queue_capacity_milli_cpu gauge
volcano_queue_capacity_milli_cpu{queue_name="a"} ` + maxFloat + `
volcano_queue_capacity_milli_cpu{queue_name="b"} 4000
volcano_queue_capacity_milli_cpu{queue_name="idle"} ` + maxFloat + `
# HELP volcano_queue_capacity_memory_bytes The queue's spec.capability (an unbounded cpu or memory reads as the largest float64): memory in bytes
# TYPE volcano_queue_capacity_memory_bytes gauge
volcano_queue_capacity_memory_bytes{queue_name="a"} ` + maxFloat + `
volcano_queue_capacity_memory_bytes{queue_name="b"} ` + maxFloat + `
volcano_queue_capacity_memory_bytes{queue_name="idle"} ` + maxFloat + `
# HELP volcano_queue_real_capacity_milli_cpu Most the queue can hold: the cluster less other queues' guarantees, within its capability: cpu in millicores
# TYPE volcano_queue_real_capacity_milli_cpu gauge
volcano_queue_real_capacity_milli_cpu{queue_name="a"} 7000
volcano_queue_real_capacity_milli_cpu{queue_name="b"} 4000
volcano_queue_real_capacity_milli_cpu{queue_name="idle"} 8000
# HELP volcano_queue_real_capacity_scalar_resources Most the queue can hold: the cluster less other queues' guarantees, within its capability: each other resource in milli-units
# TYPE volcano_queue_real_capacity_scalar_resources gauge
volcano_queue_real_capacity_scalar_resources{queue_name="a",resource="pods"} 110000
volcano_queue_real_capacity_scalar_resources{queue_name="b",resource="pods"} 110000
volcano_queue_real_capacity_scalar_resources{queue_name="idle",resource="pods"} 110000
# HELP volcano_queue_share Largest ratio of allocated to deserved over the queue's resources
# TYPE volcano_queue_share gauge
volcano_queue_share{queue_name="a"} 0.5
volcano_queue_share{queue_name="b"} 1
volcano_queue_share{queue_name="idle"} 0
# HELP volcano_queue_weight The queue's weight
# TYPE volcano_queue_weight gauge
volcano_queue_weight{queue_name="a"} 1
volcano_queue_weight{queue_name="b"} 3
volcano_queue_weight{queue_name="idle"} 2
# HELP volcano_queue_overused 1 when the queue holds its deserved share in every resource, else 0
# TYPE volcano_queue_overused gauge
volcano_queue_overused{queue_name="a"} 0
volcano_queue_overused{queue_name="b"} 1
volcano_queue_overused{queue_name="idle"} 0
`
	names := []string{
		"volcano_queue_allocated_milli_cpu", "volcano_queue_allocated_scalar_resources", "volcano_queue_request_memory_bytes",
		"volcano_queue_deserved_milli_cpu", "volcano_queue_deserved_scalar_resources",
		"volcano_queue_capacity_milli_cpu", "volcano_queue_capacity_memory_bytes",
		"volcano_queue_real_capacity_milli_cpu", "volcano_queue_real_capacity_scalar_resources",
		"volcano_queue_share", "volcano_queue_weight", "volcano_queue_overused",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// Queue b and its job are deleted: its series go, a's and idle's stay.
	framework.CloseSession(frameworktest.OpenRecording(t, m, &frameworktest.Cache{Snap: metricsCluster(false).ClusterInfo()}, qt.Actions, builders,
		conf.PluginOption{Name: PluginName}))
	want = `
# HELP volcano_queue_weight The queue's weight
# TYPE volcano_queue_weight gauge
volcano_queue_weight{queue_name="a"} 1
volcano_queue_weight{queue_name="idle"} 2
# HELP volcano_queue_allocated_scalar_resources Resources held by the queue's placed tasks: each other resource in milli-units
# TYPE volcano_queue_allocated_scalar_resources gauge
volcano_queue_allocated_scalar_resources{queue_name="a",resource="pods"} 1000
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"volcano_queue_weight", "volcano_queue_allocated_scalar_resources"); err != nil {
		t.Errorf("after queue b was deleted: %v", err)
	}
}
