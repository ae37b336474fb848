package quota

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota/quotatest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const vgpuMemory = corev1.ResourceName("volcano.sh/vgpu-memory")

func TestMessage(t *testing.T) {
	cases := []struct {
		names []corev1.ResourceName
		want  string
	}{
		{nil, "queue resource quota insufficient"},
		{[]corev1.ResourceName{vgpuMemory}, "queue resource quota insufficient: insufficient volcano.sh/vgpu-memory"},
		{[]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
			"queue resource quota insufficient: insufficient cpu, insufficient memory"},
	}
	for _, tc := range cases {
		if got := Message(QueueQuotaInsufficient, "insufficient", tc.names); got != tc.want {
			t.Errorf("Message(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestResourceArithmetic(t *testing.T) {
	cases := []struct {
		name    string
		got     *api.Resource
		want    *api.Resource
		wantMax bool
	}{
		{"exceeded part clamps at zero and keeps l's scalars",
			ExceededPart(api.NewResource(st.Resources("3", "1Gi", "volcano.sh/vgpu-memory", "3000")), api.NewResource(st.Resources("1", "2Gi", "nvidia.com/gpu", "1"))),
			&api.Resource{MilliCPU: 2000, ScalarResources: map[corev1.ResourceName]float64{vgpuMemory: 3e6}}, false},
		{"max takes the larger of each dimension either has",
			Max(api.NewResource(st.Resources("3", "1Gi")), api.NewResource(st.Resources("1", "2Gi", "volcano.sh/vgpu-memory", "1000"))),
			&api.Resource{MilliCPU: 3000, Memory: 2 << 30, ScalarResources: map[corev1.ResourceName]float64{vgpuMemory: 1e6}}, true},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestExceedsIn(t *testing.T) {
	deserved := api.NewResource(st.Resources("2", "4Gi", "volcano.sh/vgpu-memory", "2000"))
	cases := []struct {
		name      string
		allocated *api.Resource
		want      bool
	}{
		{"within every named dimension", api.NewResource(st.Resources("2", "1Gi", "volcano.sh/vgpu-memory", "1000")), false},
		{"above in cpu", api.NewResource(st.Resources("3", "1Gi")), true},
		{"above in a named scalar", api.NewResource(st.Resources("1", "", "volcano.sh/vgpu-memory", "3000")), true},
		{"a dimension the share does not name is not compared", api.NewResource(st.Resources("1", "", "pods", "50", "nvidia.com/gpu", "4")), false},
		{"a named dimension the queue holds none of is within", api.NewResource(st.Resources("1", "")), false},
	}
	for _, tc := range cases {
		if got := ExceedsIn(tc.allocated, deserved); got != tc.want {
			t.Errorf("%s: ExceedsIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReservedAndElastic(t *testing.T) {
	vgpu := func(mem string) corev1.ResourceList {
		return st.Resources("1", "", "volcano.sh/vgpu-number", "1", "volcano.sh/vgpu-memory", mem)
	}
	cases := []struct {
		name        string
		phase       schedulingv1beta1.PodGroupPhase
		minMember   int32
		minRes      corev1.ResourceList // nil: no minResources
		pods        []*corev1.Pod
		wantReserve *api.Resource
		wantElastic *api.Resource
	}{
		{name: "inqueue job reserves its minResources", phase: schedulingv1beta1.PodGroupInqueue, minMember: 2,
			minRes: st.Resources("2", "", "volcano.sh/vgpu-memory", "6000"),
			pods: []*corev1.Pod{quotatest.Pod("a", "pg", "", vgpu("3000")),
				quotatest.Pod("b", "pg", "", vgpu("3000"))},
			wantReserve: api.NewResource(st.Resources("2", "", "volcano.sh/vgpu-memory", "6000")), wantElastic: api.EmptyResource()},
		{name: "gated pods do not reserve", phase: schedulingv1beta1.PodGroupInqueue, minMember: 2,
			minRes: st.Resources("2", "", "volcano.sh/vgpu-memory", "6000"),
			pods: []*corev1.Pod{quotatest.Pod("a", "pg", "", vgpu("3000")),
				gated(quotatest.Pod("b", "pg", "", vgpu("3000")))},
			wantReserve: api.NewResource(st.Resources("1", "", "volcano.sh/vgpu-memory", "3000")), wantElastic: api.EmptyResource()},
		{name: "running job reserves the part its placed pods do not cover, in milli-units", phase: schedulingv1beta1.PodGroupRunning,
			minMember: 1, minRes: st.Resources("2", "", "volcano.sh/vgpu-memory", "6000"),
			pods:        []*corev1.Pod{quotatest.Pod("a", "pg", "n1", vgpu("3000"))},
			wantReserve: api.NewResource(st.Resources("1", "", "volcano.sh/vgpu-memory", "3000")),
			wantElastic: api.NewResource(st.Resources("", "", "volcano.sh/vgpu-number", "1", "pods", "1"))},
		{name: "running job with fewer than minMember placed reserves nothing", phase: schedulingv1beta1.PodGroupRunning,
			minMember: 2, minRes: st.Resources("2", ""),
			pods:        []*corev1.Pod{quotatest.Pod("a", "pg", "n1", st.Resources("1", ""))},
			wantReserve: api.EmptyResource(), wantElastic: api.NewResource(st.Resources("", "", "pods", "1"))},
		{name: "pending job reserves nothing", phase: schedulingv1beta1.PodGroupPending, minMember: 1,
			minRes: st.Resources("2", ""), pods: []*corev1.Pod{quotatest.Pod("a", "pg", "", st.Resources("2", ""))},
			wantReserve: api.EmptyResource(), wantElastic: api.EmptyResource()},
		{name: "without minResources nothing is reserved and everything held is elastic", phase: schedulingv1beta1.PodGroupRunning,
			minMember: 1, pods: []*corev1.Pod{quotatest.Pod("a", "pg", "n1", st.Resources("1", ""))},
			wantReserve: api.EmptyResource(), wantElastic: api.NewResource(st.Resources("1", "", "pods", "1"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cache := &frameworktest.Cache{Snap: frameworktest.Objects{
				Nodes:     []*corev1.Node{st.Node("n1", st.Resources("8", "", "volcano.sh/vgpu-number", "10", "volcano.sh/vgpu-memory", "8192")).Obj()},
				Queues:    []*schedulingv1beta1.Queue{quotatest.Queue("default", nil)},
				PodGroups: []*schedulingv1beta1.PodGroup{quotatest.PodGroup("pg", "default", tc.minMember, tc.minRes, tc.phase)},
				Pods:      tc.pods,
			}.ClusterInfo()}
			job := quotatest.Job(frameworktest.OpenSession(t, cache, quotatest.Actions, nil), "pg")
			if !Equal(Reserved(job), tc.wantReserve) {
				t.Errorf("Reserved = %v, want %v", Reserved(job), tc.wantReserve)
			}
			if got := AddElastic(api.EmptyResource(), job); !Equal(got, tc.wantElastic) {
				t.Errorf("AddElastic = %v, want %v", got, tc.wantElastic)
			}
		})
	}
}

func gated(p *corev1.Pod) *corev1.Pod {
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	return p
}

func TestRealCapability(t *testing.T) {
	guaranteed := quotatest.Queue("guaranteed", nil)
	guaranteed.Spec.Guarantee.Resource = st.Resources("2", "", "volcano.sh/vgpu-memory", "2000")
	vgpuCapped := quotatest.Queue("vgpu-capped", st.Resources("", "", "volcano.sh/vgpu-number", "2", "volcano.sh/vgpu-memory", "4000", "volcano.sh/vgpu-cores", "60"))
	cpuCapped := quotatest.Queue("cpu-capped", st.Resources("1", ""))
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{
		Nodes: []*corev1.Node{st.Node("n1", st.Resources("8", "16Gi",
			"volcano.sh/vgpu-number", "10", "volcano.sh/vgpu-memory", "8192", "volcano.sh/vgpu-cores", "100")).Obj()},
		Queues: []*schedulingv1beta1.Queue{guaranteed, vgpuCapped, cpuCapped, quotatest.Queue("idle", nil)},
		PodGroups: []*schedulingv1beta1.PodGroup{
			quotatest.PodGroup("g", "guaranteed", 1, nil, schedulingv1beta1.PodGroupPending),
			quotatest.PodGroup("v", "vgpu-capped", 1, nil, schedulingv1beta1.PodGroupPending),
			quotatest.PodGroup("c", "cpu-capped", 1, nil, schedulingv1beta1.PodGroupPending),
		},
	}.ClusterInfo()}
	ledger := NewLedger(frameworktest.OpenSession(t, cache, quotatest.Actions, nil))
	if _, found := ledger.Queues["idle"]; found {
		t.Errorf("a queue without jobs got accounts")
	}
	want := map[api.QueueID]*api.Resource{
		// Its own guarantee comes back on top of what no queue has guaranteed.
		"guaranteed": api.NewResource(st.Resources("8", "16Gi", "pods", "110",
			"volcano.sh/vgpu-number", "10", "volcano.sh/vgpu-memory", "8192", "volcano.sh/vgpu-cores", "100")),
		// The vGPU caps apply in milli-units; cpu and memory, which the capability leaves out, are
		// bounded only by the cluster less the other queue's guarantee.
		"vgpu-capped": api.NewResource(st.Resources("6", "16Gi", "pods", "110",
			"volcano.sh/vgpu-number", "2", "volcano.sh/vgpu-memory", "4000", "volcano.sh/vgpu-cores", "60")),
		"cpu-capped": api.NewResource(st.Resources("1", "16Gi", "pods", "110",
			"volcano.sh/vgpu-number", "10", "volcano.sh/vgpu-memory", "6192", "volcano.sh/vgpu-cores", "100")),
	}
	for id, w := range want {
		if got := ledger.Queues[id].RealCapability; !Equal(got, w) {
			t.Errorf("queue %s: realCapability %v, want %v", id, got, w)
		}
	}
	if got := ledger.Queues["vgpu-capped"].Capability.MilliCPU; got != math.MaxFloat64 {
		t.Errorf("capability without cpu should leave cpu unbounded, got %v", got)
	}
}

// TestEnqueuedReservesForTheNextJob: a job admitted in this cycle holds its room for the next
// one, and a job whose admission a later vote overruled (no JobEnqueued) holds none.
func TestEnqueuedReservesForTheNextJob(t *testing.T) {
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("4", "4Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{quotatest.Queue("q", st.Resources("2", ""))},
		PodGroups: []*schedulingv1beta1.PodGroup{
			quotatest.PodGroup("first", "q", 1, st.Resources("1500m", ""), schedulingv1beta1.PodGroupPending),
			quotatest.PodGroup("second", "q", 1, st.Resources("1", ""), schedulingv1beta1.PodGroupPending),
		},
	}.ClusterInfo()}
	ssn := frameworktest.OpenSession(t, cache, quotatest.Actions, nil)
	ledger := NewLedger(ssn)
	first, second := quotatest.Job(ssn, "first"), quotatest.Job(ssn, "second")
	if ledger.JobEnqueueable(first) != framework.Permit || ledger.JobEnqueueable(second) != framework.Permit {
		t.Fatalf("both fit alone")
	}
	ledger.JobEnqueued(first)
	if ledger.JobEnqueueable(second) != framework.Reject {
		t.Errorf("second job admitted although the first holds 1.5 of the queue's 2 cpu")
	}
	want := []frameworktest.JobEvent{{PodGroup: "second", Type: corev1.EventTypeNormal, Reason: "Unschedulable",
		Message: "queue resource quota insufficient: insufficient cpu"}}
	if diff := cmp.Diff(want, cache.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestEnqueueCountsReservedAndElastic: admission compares minResources + allocated + what
// admitted jobs reserve - what running jobs hold above their minimum with the real capability.
func TestEnqueueCountsReservedAndElastic(t *testing.T) {
	pending := schedulingv1beta1.PodGroupPending
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{quotatest.Queue("q", st.Resources("4", ""))},
		PodGroups: []*schedulingv1beta1.PodGroup{
			// Holds 3 cpu of which 2 above its minimum: allocated 3, elastic 2.
			quotatest.PodGroup("elastic", "q", 1, st.Resources("1", ""), schedulingv1beta1.PodGroupRunning),
			// Admitted, no pod placed yet: reserves 1.
			quotatest.PodGroup("admitted", "q", 1, st.Resources("1", ""), schedulingv1beta1.PodGroupInqueue),
			quotatest.PodGroup("fits", "q", 1, st.Resources("2", ""), pending),
			quotatest.PodGroup("too-big", "q", 1, st.Resources("3", ""), pending),
		},
		Pods: []*corev1.Pod{
			quotatest.Pod("elastic-0", "elastic", "n1", st.Resources("1", "")),
			quotatest.Pod("elastic-1", "elastic", "n1", st.Resources("1", "")),
			quotatest.Pod("elastic-2", "elastic", "n1", st.Resources("1", "")),
		},
	}.ClusterInfo()}
	ssn := frameworktest.OpenSession(t, cache, quotatest.Actions, nil)
	ledger := NewLedger(ssn)
	// 2 + 3 + 1 - 2 = 4 fits in 4; 3 + 3 + 1 - 2 = 5 does not.
	if got := ledger.JobEnqueueable(quotatest.Job(ssn, "fits")); got != framework.Permit {
		t.Errorf("job that fits once the elastic part is discounted: vote %d", got)
	}
	if got := ledger.JobEnqueueable(quotatest.Job(ssn, "too-big")); got != framework.Reject {
		t.Errorf("job that fits only if the admitted job's reservation is forgotten: vote %d", got)
	}
}
