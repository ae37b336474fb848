package capacity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota"
	qt "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota/quotatest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

var builders = map[string]framework.PluginBuilder{PluginName: New}

// declaredQueue is a queue that declares the share it deserves.
func declaredQueue(name string, capability, deserved corev1.ResourceList) *schedulingv1beta1.Queue {
	q := qt.Queue(name, capability)
	q.Spec.Deserved = deserved
	return q
}

// TestAllocatableUpToCapability: capacity caps allocation by the real capability, not by the
// (smaller) deserved share. Also with enableHierarchy: q1 then hangs under a root the
// cluster lacks, which caps nothing, and the refusal still names q1.
func TestAllocatableUpToCapability(t *testing.T) {
	cluster := frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("4", "4Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{declaredQueue("q1", st.Resources("2", "2Gi"), st.Resources("1", "1Gi"))},
		PodGroups: []*schedulingv1beta1.PodGroup{
			qt.PodGroup("running", "q1", 1, nil, schedulingv1beta1.PodGroupRunning),
			qt.PodGroup("small", "q1", 1, nil, schedulingv1beta1.PodGroupInqueue),
			qt.PodGroup("large", "q1", 1, nil, schedulingv1beta1.PodGroupInqueue),
		},
		Pods: []*corev1.Pod{
			qt.Pod("running-0", "running", "n1", st.Resources("1", "1Gi")),
			qt.Pod("small-0", "small", "", st.Resources("1", "1Gi")),
			qt.Pod("large-0", "large", "", st.Resources("2", "1Gi")),
		},
	}
	hierarchy := true
	for _, opt := range []conf.PluginOption{{Name: PluginName}, {Name: PluginName, EnabledHierarchy: &hierarchy}} {
		ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: cluster.ClusterInfo()}, qt.Actions, builders, opt)
		q1 := ssn.Queues["q1"]
		if err := ssn.Allocatable(q1, qt.Task(ssn, "small-0")); err != nil {
			t.Errorf("hierarchy %v: case0: 1+1 cpu within a capability of 2 is refused: %v", opt.HierarchyEnabled(), err)
		}
		const want = "queue q1 has no room for the pod within its real capability: cpu"
		if err := ssn.Allocatable(q1, qt.Task(ssn, "large-0")); err == nil || err.Error() != want {
			t.Errorf("hierarchy %v: case1: 1+2 cpu over a capability of 2: %v, want %q", opt.HierarchyEnabled(), err, want)
		}
		if ssn.Overused(q1) {
			t.Errorf("capacity registers no Overused, yet the queue is reported overused")
		}
	}
}

func TestEnqueue(t *testing.T) {
	closed := qt.Queue("closed", nil)
	closed.Status.State = schedulingv1beta1.QueueStateClosed
	cluster := func(pg *schedulingv1beta1.PodGroup) frameworktest.Objects {
		return frameworktest.Objects{
			Nodes:     []*corev1.Node{st.Node("n1", st.Resources("4", "4Gi")).Obj()},
			Queues:    []*schedulingv1beta1.Queue{qt.Queue("q1", st.Resources("2", "2Gi")), closed},
			PodGroups: []*schedulingv1beta1.PodGroup{qt.PodGroup("running", "q1", 1, st.Resources("1", "2Gi"), schedulingv1beta1.PodGroupRunning), pg},
			Pods: []*corev1.Pod{
				qt.Pod("running-0", "running", "n1", st.Resources("1", "2Gi")),
				qt.Pod(pg.Name+"-0", pg.Name, "", *pg.Spec.MinResources),
			},
		}
	}
	pending := schedulingv1beta1.PodGroupPending
	scenarios := []qt.Scenario{
		{
			Name:    "memory used up, job asks only cpu: admitted and placed",
			Cluster: cluster(qt.PodGroup("cpu-only", "q1", 1, st.Resources("1", ""), pending)),
			Job:     "cpu-only", WantEnqueued: true, WantPlaced: []string{"cpu-only-0"},
		},
		{
			Name:    "over capability in cpu and memory: not admitted, event names both",
			Cluster: cluster(qt.PodGroup("big", "q1", 1, st.Resources("2", "1Gi"), pending)),
			Job:     "big",
			WantEvents: []frameworktest.JobEvent{qt.QueueQuotaRejected("big",
				"queue resource quota insufficient: insufficient cpu, insufficient memory")},
		},
		{
			Name:    "queue not Open: not admitted",
			Cluster: cluster(qt.PodGroup("in-closed", "closed", 1, st.Resources("1", ""), pending)),
			Job:     "in-closed",
		},
	}
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, builders, conf.PluginOption{Name: PluginName}) })
	}
}

func TestVGPUQueueCapability(t *testing.T) {
	for _, s := range qt.VGPUQueueScenarios() {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, builders, conf.PluginOption{Name: PluginName}) })
	}
}

func TestDeclaredDeserved(t *testing.T) {
	cases := []struct {
		name      string
		queue     *schedulingv1beta1.Queue
		guarantee corev1.ResourceList
		want      *api.Resource
	}{
		{"cut to the capability where it names a dimension",
			declaredQueue("q", st.Resources("2", ""), st.Resources("3", "1Gi", string(vgpu.DefaultMemoryResource), "4000")), nil,
			api.NewResource(st.Resources("2", "1Gi", string(vgpu.DefaultMemoryResource), "4000"))},
		{"raised to the guarantee",
			declaredQueue("q", nil, st.Resources("1", "1Gi")), st.Resources("2", ""),
			api.NewResource(st.Resources("2", "1Gi"))},
		{"nothing declared, nothing deserved",
			declaredQueue("q", nil, nil), nil, api.EmptyResource()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.queue.Spec.Guarantee.Resource = tc.guarantee
			cluster := frameworktest.Objects{
				Nodes:     []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi", string(vgpu.DefaultMemoryResource), "8192")).Obj()},
				Queues:    []*schedulingv1beta1.Queue{tc.queue},
				PodGroups: []*schedulingv1beta1.PodGroup{qt.PodGroup("pg", "q", 1, nil, schedulingv1beta1.PodGroupInqueue)},
			}
			ledger := quota.NewLedger(frameworktest.OpenSession(t, &frameworktest.Cache{Snap: cluster.ClusterInfo()}, qt.Actions, nil))
			if got := declaredDeserved(ledger.Queues["q"]); !quota.Equal(got, tc.want) {
				t.Errorf("deserved %v, want %v", got, tc.want)
			}
		})
	}
}
