package proportion

import (
	"strings"
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
)

var builders = map[string]framework.PluginBuilder{PluginName: New}

// twoQueueCluster is upstream's TestEnqueueAndAllocable cluster: two nodes of 2 cpu / 2G; q1
// (capability 2 cpu / 2G) runs a 1 cpu / 2G pod, so its memory is used up; q2 (capability
// 3 cpu / 3G) runs a 2 cpu / 1G pod; q3 is Closed. The job under test is added to it.
func twoQueueCluster(pg *schedulingv1beta1.PodGroup, pod *corev1.Pod) frameworktest.Objects {
	closed := qt.Queue("q3", st.Resources("3", "3G"))
	closed.Status.State = schedulingv1beta1.QueueStateClosed
	return frameworktest.Objects{
		Nodes: []*corev1.Node{st.Node("n1", st.Resources("2", "2G", "pods", "10")).Obj(), st.Node("n2", st.Resources("2", "2G", "pods", "10")).Obj()},
		Queues: []*schedulingv1beta1.Queue{
			qt.Queue("q1", st.Resources("2", "2G")), qt.Queue("q2", st.Resources("3", "3G")), closed},
		PodGroups: []*schedulingv1beta1.PodGroup{
			qt.PodGroup("pg1", "q1", 1, st.Resources("1", "2G"), schedulingv1beta1.PodGroupRunning),
			qt.PodGroup("pg2", "q2", 1, st.Resources("2", "1G"), schedulingv1beta1.PodGroupRunning),
			pg,
		},
		Pods: []*corev1.Pod{
			qt.Pod("pod1", "pg1", "n1", st.Resources("1", "2G")),
			qt.Pod("pod2", "pg2", "n2", st.Resources("2", "1G")),
			pod,
		},
	}
}

func TestEnqueueAndAllocatable(t *testing.T) {
	pending := schedulingv1beta1.PodGroupPending
	scenarios := []qt.Scenario{
		{
			Name:    "case0: q1's memory is used up; a job asking only cpu is admitted and placed",
			Cluster: twoQueueCluster(qt.PodGroup("pg3", "q1", 1, st.Resources("1", ""), pending), qt.Pod("pod3", "pg3", "", st.Resources("1", ""))),
			Job:     "pg3", WantEnqueued: true, WantPlaced: []string{"pod3"},
		},
		{
			Name:    "case1: q2's cpu share is taken; a job asking only memory is admitted and placed",
			Cluster: twoQueueCluster(qt.PodGroup("pg4", "q2", 1, st.Resources("", "1G"), pending), qt.Pod("pod4", "pg4", "", st.Resources("", "1G"))),
			Job:     "pg4", WantEnqueued: true, WantPlaced: []string{"pod4"},
		},
		{
			Name:    "case2: minResources over q1's capability in memory: not admitted, event names memory",
			Cluster: twoQueueCluster(qt.PodGroup("pg5", "q1", 1, st.Resources("1", "1G"), pending), qt.Pod("pod5", "pg5", "", st.Resources("1", "1G"))),
			Job:     "pg5",
			WantEvents: []frameworktest.JobEvent{qt.QueueQuotaRejected("pg5",
				"queue resource quota insufficient: insufficient memory")},
		},
		{
			Name:    "case3: admitted without minResources, but over q1's deserved memory: not placed",
			Cluster: twoQueueCluster(qt.PodGroup("pg7", "q1", 1, nil, pending), qt.Pod("pod7", "pg7", "", st.Resources("1", "1G"))),
			Job:     "pg7", WantEnqueued: true,
		},
		{
			Name:    "case4: queue not Open: not admitted, no quota event",
			Cluster: twoQueueCluster(qt.PodGroup("pg6", "q3", 1, st.Resources("1", "1G"), pending), qt.Pod("pod6", "pg6", "", st.Resources("1", "1G"))),
			Job:     "pg6",
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

func TestClosedQueueAllocatesNothing(t *testing.T) {
	cluster := twoQueueCluster(qt.PodGroup("pg6", "q3", 1, nil, schedulingv1beta1.PodGroupInqueue), qt.Pod("pod6", "pg6", "", st.Resources("1", "")))
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: cluster.ClusterInfo()}, qt.Actions, builders, conf.PluginOption{Name: PluginName})
	if err := ssn.Allocatable(ssn.Queues["q3"], qt.Task(ssn, "pod6")); err == nil || err.Error() != "queue q3 is Closed, not Open" {
		t.Errorf("a Closed queue: %v, want it to refuse the task as Closed", err)
	}
}

// TestDeserved checks the water-filling on an 8 cpu / 8Gi cluster.
func TestDeserved(t *testing.T) {
	type queue struct {
		name      string
		weight    int32
		capabilty corev1.ResourceList
		guarantee corev1.ResourceList
		request   corev1.ResourceList // one pending pod
	}
	cases := []struct {
		name   string
		queues []queue
		want   map[string]*api.Resource
	}{
		{
			name: "what a small queue cannot use goes to the others",
			queues: []queue{
				{name: "a", weight: 1, request: st.Resources("6", "6Gi")},
				{name: "b", weight: 3, request: st.Resources("2", "2Gi")},
			},
			want: map[string]*api.Resource{"a": api.NewResource(st.Resources("6", "6Gi", "pods", "1")), "b": api.NewResource(st.Resources("2", "2Gi", "pods", "1"))},
		},
		{
			name: "weights divide what both want",
			queues: []queue{
				{name: "a", weight: 1, request: st.Resources("8", "8Gi")},
				{name: "b", weight: 3, request: st.Resources("8", "8Gi")},
			},
			want: map[string]*api.Resource{"a": api.NewResource(st.Resources("2", "2Gi", "pods", "1")), "b": api.NewResource(st.Resources("6", "6Gi", "pods", "1"))},
		},
		{
			name: "capability caps a queue and the rest goes to the other",
			queues: []queue{
				{name: "a", weight: 1, capabilty: st.Resources("1", ""), request: st.Resources("8", "1Gi")},
				{name: "b", weight: 1, request: st.Resources("8", "1Gi")},
			},
			want: map[string]*api.Resource{"a": api.NewResource(st.Resources("1", "1Gi", "pods", "1")), "b": api.NewResource(st.Resources("7", "1Gi", "pods", "1"))},
		},
		{
			name: "a guarantee is deserved even unrequested, and others' real capability leaves it out",
			queues: []queue{
				{name: "a", weight: 1, request: st.Resources("8", "1Gi")},
				{name: "b", weight: 1, guarantee: st.Resources("4", ""), request: st.Resources("1", "1Gi")},
			},
			want: map[string]*api.Resource{"a": api.NewResource(st.Resources("4", "1Gi", "pods", "1")), "b": api.NewResource(st.Resources("4", "1Gi", "pods", "1"))},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := frameworktest.Objects{Nodes: []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()}}
			for _, q := range tc.queues {
				queue := qt.Queue(q.name, q.capabilty)
				queue.Spec.Weight = q.weight
				queue.Spec.Guarantee.Resource = q.guarantee
				cluster.Queues = append(cluster.Queues, queue)
				cluster.PodGroups = append(cluster.PodGroups, qt.PodGroup("pg-"+q.name, q.name, 1, nil, schedulingv1beta1.PodGroupInqueue))
				cluster.Pods = append(cluster.Pods, qt.Pod("pod-"+q.name, "pg-"+q.name, "", q.request))
			}
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: cluster.ClusterInfo()}, qt.Actions, builders, conf.PluginOption{Name: PluginName})
			ledger := quota.NewLedger(ssn)
			divideByWeight(ledger)
			for name, want := range tc.want {
				if got := ledger.Queues[api.QueueID(name)].Deserved; !quota.Equal(got, want) {
					t.Errorf("queue %s deserves %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestAllocationsKeepAccountsCurrent: placing tasks raises the queue's share, makes it overused
// once it holds its deserved share, and changes the queue order; discarding restores all.
func TestAllocationsKeepAccountsCurrent(t *testing.T) {
	queue := func(name string, priority int32) *schedulingv1beta1.Queue {
		q := qt.Queue(name, nil)
		q.Spec.Priority = priority
		return q
	}
	cluster := frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{queue("busy", 0), queue("quiet", 0), queue("urgent", 1)},
		PodGroups: []*schedulingv1beta1.PodGroup{
			qt.PodGroup("busy", "busy", 2, nil, schedulingv1beta1.PodGroupInqueue),
			qt.PodGroup("quiet", "quiet", 1, nil, schedulingv1beta1.PodGroupInqueue),
			qt.PodGroup("urgent", "urgent", 1, nil, schedulingv1beta1.PodGroupInqueue),
		},
		Pods: []*corev1.Pod{
			qt.Pod("busy-0", "busy", "", st.Resources("1", "1Gi")),
			qt.Pod("busy-1", "busy", "", st.Resources("1", "1Gi")),
			qt.Pod("quiet-0", "quiet", "", st.Resources("1", "1Gi")),
			qt.Pod("urgent-0", "urgent", "", st.Resources("4", "4Gi")),
		},
	}
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: cluster.ClusterInfo()}, qt.Actions, builders, conf.PluginOption{Name: PluginName})
	busy, quiet, urgent := ssn.Queues["busy"], ssn.Queues["quiet"], ssn.Queues["urgent"]
	check := func(when string, wantBusyOverused, wantBusyFirst bool) {
		t.Helper()
		if got := ssn.Overused(busy); got != wantBusyOverused {
			t.Errorf("%s: busy overused = %v, want %v", when, got, wantBusyOverused)
		}
		if got := ssn.QueueOrderFn(busy, quiet); got != wantBusyFirst {
			t.Errorf("%s: busy before quiet = %v, want %v", when, got, wantBusyFirst)
		}
		if !ssn.QueueOrderFn(urgent, busy) || !ssn.QueueOrderFn(urgent, quiet) {
			t.Errorf("%s: the higher-priority queue is not first", when)
		}
	}
	// Equal shares: the fallback (creation time, then name) puts busy first.
	check("before", false, true)

	stmt := ssn.NewStatement()
	for _, name := range []string{"busy-0", "busy-1"} {
		if err := stmt.Allocate(qt.Task(ssn, name), ssn.Nodes["n1"]); err != nil {
			t.Fatal(err)
		}
	}
	check("after placing busy's pods", true, false)
	if err := ssn.Allocatable(busy, qt.Task(ssn, "quiet-0")); err == nil || !strings.Contains(err.Error(), "within its deserved share: cpu") {
		t.Errorf("busy may take a task beyond its deserved share: %v", err)
	}

	stmt.Discard()
	check("after discard", false, true)
}

// TestFullClusterReclaimsByWeight: in the shapes clusters have (pods asking cpu, memory and a
// vGPU; PodGroups with minResources), queue a fills the node while b is idle; b's one-pod job
// is admitted into the full cluster and reclaims exactly one pod: water-filling gives b its
// request of 1 and a the other 3, as v1.15.1's proportion does.
func TestFullClusterReclaimsByWeight(t *testing.T) {
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{qt.GPUNode("n1", 4, 8)},
		Queues: []*schedulingv1beta1.Queue{qt.Queue("a", nil), qt.Queue("b", nil)},
	}
	qt.VCJob(&o, "burst", "a", 4, 1, "n1")
	qt.VCJob(&o, "wait", "b", 1, 1, "")
	evicted := qt.ReclaimCycle(t, o, conf.PluginOption{Name: PluginName}, framework.PluginSpec{Build: New})
	if len(evicted) != 1 || !strings.HasPrefix(evicted[0], "burst-") {
		t.Errorf("evicted %q, want one of a's pods", evicted)
	}
}
