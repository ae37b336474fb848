package capacity

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	qt "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota/quotatest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// The tests below use the shapes real clusters have: every pod asks cpu and memory beside
// its vGPU, every PodGroup carries the minResources Volcano's job controller gives it (its
// first minMember pods' requests), departments declare only a capability, and reclaim is
// needed when the cluster is full.

// share is a deserved share of n worker pods, in every dimension they ask for.
func share(n int) corev1.ResourceList { return qt.Times(qt.Worker(), n) }

// gpuShare is a deserved share of n worker pods' vGPUs only.
func gpuShare(n int) corev1.ResourceList {
	return st.Resources("", "", string(vgpu.DefaultCountResource), fmt.Sprint(n), string(vgpu.DefaultMemoryResource), fmt.Sprint(4000*n))
}

// tasksOf are the tasks of the named PodGroup's pods, by name.
func tasksOf(ssn *framework.Session, podGroup string) []*api.TaskInfo {
	var out []*api.TaskInfo
	for _, t := range qt.Job(ssn, podGroup).Tasks {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *api.TaskInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// reclaimCycle is quotatest's ReclaimCycle with capacity as entry configures it.
func reclaimCycle(t *testing.T, o frameworktest.Objects, entry conf.PluginOption) []string {
	t.Helper()
	return qt.ReclaimCycle(t, o, entry, framework.PluginSpec{Build: New, Hierarchy: true})
}

// cappedDepartment: dept caps its teams at 4 cpu on an 8-cpu node; t1 and t2 each deserve 2
// worker pods. t1 burst to 4 pods while t2 was idle; t2 now wants 2. When singles is set,
// t1's pods are four single-pod jobs (a Deployment's), else one job of minMember 1.
func cappedDepartment(singles bool) frameworktest.Objects {
	o := frameworktest.Objects{
		Nodes: []*corev1.Node{qt.GPUNode("n1", 8, 8)},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("dept", "", st.Resources("4", ""), nil, nil),
			q("t1", "dept", nil, share(2), nil), q("t2", "dept", nil, share(2), nil)},
	}
	if singles {
		for i := 0; i < 4; i++ {
			qt.VCJob(&o, fmt.Sprintf("web%d", i), "t1", 1, 1, "n1")
		}
	} else {
		qt.VCJob(&o, "burst", "t1", 4, 1, "n1")
	}
	qt.VCJob(&o, "train", "t2", 2, 2, "")
	return o
}

// TestTeamTakesBackItsShareUnderACappedDepartment: t2 is admitted although dept is at its
// capability (reclaim moves room between dept's teams and leaves its total as it is), may
// reclaim, and takes back exactly its 2 pods' worth from t1, which keeps its own 2. A pod of
// another department, above its share too, is spared: its going would make no room in dept.
// The node has room throughout: the department's cap, not the node, is what reclaim frees.
func TestTeamTakesBackItsShareUnderACappedDepartment(t *testing.T) {
	for _, singles := range []bool{false, true} {
		t.Run(fmt.Sprintf("t1's pods single-pod jobs %v", singles), func(t *testing.T) {
			o := cappedDepartment(singles)
			o.Queues = append(o.Queues, q("dept2", "", nil, nil, nil), q("other", "dept2", nil, share(1), nil))
			qt.VCJob(&o, "elsewhere", "other", 2, 1, "n1")
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, "enqueue, reclaim", builders, hierarchical(nil))
			if !qt.Enqueue(ssn, qt.Job(ssn, "train")) {
				t.Fatal("t2's job was not admitted while dept is at its capability")
			}
			reclaimer := qt.Task(ssn, "train-0")
			if err := ssn.Preemptive(ssn.Queues["t2"], reclaimer); err != nil {
				t.Fatalf("t2 may not reclaim: %v", err)
			}
			var candidates []*api.TaskInfo
			for _, pg := range []string{"elsewhere", "burst", "web0", "web1", "web2", "web3"} {
				if qt.Job(ssn, pg) != nil {
					candidates = append(candidates, tasksOf(ssn, pg)...)
				}
			}
			var victims []string
			for _, v := range ssn.Reclaimable(reclaimer, candidates) {
				victims = append(victims, v.Name)
			}
			if len(victims) != 2 || slices.ContainsFunc(victims, func(n string) bool { return strings.HasPrefix(n, "elsewhere") }) {
				t.Errorf("victims %q, want 2 of t1's pods and none of the other department's", victims)
			}
		})
	}
	// The whole cycle: enqueue, then reclaim, evicts two of t1's pods for t2's gang.
	evicted := reclaimCycle(t, cappedDepartment(false), hierarchical(nil))
	if len(evicted) != 2 || !strings.HasPrefix(evicted[0], "burst") || !strings.HasPrefix(evicted[1], "burst") {
		t.Errorf("evicted %q, want two of t1's pods", evicted)
	}
}

// fullCluster: a 4-cpu node filled by team-a's burst (one job of minMember burstMin); team-b,
// in another department, has a one-pod job waiting. Both teams deserve 2 pods.
func fullCluster(burstMin int) frameworktest.Objects {
	o := frameworktest.Objects{
		Nodes: []*corev1.Node{qt.GPUNode("n1", 4, 8)},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("dept-a", "", nil, nil, nil), q("dept-b", "", nil, nil, nil),
			q("team-a", "dept-a", nil, share(2), nil), q("team-b", "dept-b", nil, share(2), nil)},
	}
	qt.VCJob(&o, "burst", "team-a", 4, burstMin, "n1")
	qt.VCJob(&o, "wait", "team-b", 1, 1, "")
	return o
}

// TestFullClusterAdmitsAndReclaims: the root does not hold a job back at admission (a full
// cluster is when reclaim is needed; upstream's root is unbounded there), so team-b's job is
// enqueued and reclaims one pod, with a hierarchy as with flat queues.
func TestFullClusterAdmitsAndReclaims(t *testing.T) {
	for _, entry := range []conf.PluginOption{hierarchical(nil), {Name: PluginName}} {
		evicted := reclaimCycle(t, fullCluster(1), entry)
		if len(evicted) != 1 || !strings.HasPrefix(evicted[0], "burst") {
			t.Errorf("hierarchy %v: evicted %q, want one of team-a's pods", entry.HierarchyEnabled(), evicted)
		}
	}
	// A capability declared on the root still bounds admission of a job its queue is not
	// owed (team-b deserves nothing here; team-a's job holds no elastic part, which
	// admission would count as room).
	o := fullCluster(4)
	o.Queues[0] = q("root", "", st.Resources("4", ""), nil, nil)
	o.Queues[4] = q("team-b", "dept-b", nil, nil, nil)
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, qt.Actions, builders, hierarchical(nil))
	if qt.Enqueue(ssn, qt.Job(ssn, "wait")) {
		t.Error("a job was admitted past the root's declared capability")
	}
}

// TestCapabilityOnlyDepartmentsKeepTeamsShares: departments that declare only a capability
// leave their teams the shares they declare (not zero), so the idle team goes first and may
// reclaim.
func TestCapabilityOnlyDepartmentsKeepTeamsShares(t *testing.T) {
	o := cappedDepartment(false)
	o.Nodes = []*corev1.Node{qt.GPUNode("n1", 4, 8)}
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, "enqueue, reclaim", builders, hierarchical(nil))
	cp := &capacityPlugin{}
	cp.openTree(ssn)
	want := api.NewResource(share(2))
	for _, team := range []api.QueueID{"t1", "t2"} {
		if got := cp.ledger.Queues[team].Deserved; got.String() != want.String() {
			t.Errorf("%s deserves %v, want its declared %v", team, got, want)
		}
	}
	if !ssn.QueueOrderFn(ssn.Queues["t2"], ssn.Queues["t1"]) {
		t.Error("idle t2 does not go before t1, which holds twice its share")
	}
	if err := ssn.Preemptive(ssn.Queues["t2"], qt.Task(ssn, "train-0")); err != nil {
		t.Errorf("t2 may not reclaim: %v", err)
	}
}

// gpuOnlyQueues: queues a and b each deserve 2 vGPUs (and no cpu or memory) on an 8-cpu node
// of 4 vGPUs; a runs aPods pods of one job (minMember 1), b waits with one pod.
func gpuOnlyQueues(aPods int) frameworktest.Objects {
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{qt.GPUNode("n1", 8, 4)},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("a", "", nil, gpuShare(2), nil), q("b", "", nil, gpuShare(2), nil)},
	}
	qt.VCJob(&o, "held", "a", aPods, 1, "n1")
	qt.VCJob(&o, "wait", "b", 1, 1, "")
	return o
}

// TestGPUOnlyDeservedReclaims: a share that names only vGPUs speaks for vGPUs: b, below its
// share, reclaims although its pod also asks cpu and memory (which its share does not name);
// a gives back down to its 2 vGPUs, and not a pod once it holds just those, whatever cpu its
// pods use. Flat and with a hierarchy.
func TestGPUOnlyDeservedReclaims(t *testing.T) {
	for _, entry := range []conf.PluginOption{hierarchical(nil), {Name: PluginName}} {
		for aPods, want := range map[int]int{4: 2, 2: 0} {
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: gpuOnlyQueues(aPods).ClusterInfo()}, "enqueue, reclaim", builders, entry)
			reclaimer := qt.Task(ssn, "wait-0")
			if err := ssn.Preemptive(ssn.Queues["b"], reclaimer); err != nil {
				t.Errorf("hierarchy %v: b may not reclaim: %v", entry.HierarchyEnabled(), err)
			}
			if got := ssn.Reclaimable(reclaimer, tasksOf(ssn, "held")); len(got) != want {
				t.Errorf("hierarchy %v, a holding %d vGPUs: %d victims, want %d", entry.HierarchyEnabled(), aPods, len(got), want)
			}
		}
		evicted := reclaimCycle(t, gpuOnlyQueues(4), entry)
		if len(evicted) != 1 {
			t.Errorf("hierarchy %v: evicted %q, want one of a's pods", entry.HierarchyEnabled(), evicted)
		}
	}
}

// TestBestEffortQueueGoesLast: a queue that deserves nothing goes after a queue below its
// share, although it holds nothing itself.
func TestBestEffortQueueGoesLast(t *testing.T) {
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{qt.GPUNode("n1", 8, 8)},
		Queues: []*schedulingv1beta1.Queue{q("best-effort", "", nil, nil, nil), q("owed", "", nil, share(2), nil)},
	}
	qt.VCJob(&o, "owed-run", "owed", 1, 1, "n1")
	qt.VCJob(&o, "owed-wait", "owed", 1, 1, "")
	qt.VCJob(&o, "be-wait", "best-effort", 1, 1, "")
	for _, entry := range []conf.PluginOption{hierarchical(nil), {Name: PluginName}} {
		ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, qt.Actions, builders, entry)
		if !ssn.QueueOrderFn(ssn.Queues["owed"], ssn.Queues["best-effort"]) || ssn.QueueOrderFn(ssn.Queues["best-effort"], ssn.Queues["owed"]) {
			t.Errorf("hierarchy %v: the best-effort queue goes before the queue below its share", entry.HierarchyEnabled())
		}
	}
}

// TestVictimMustFreeWhatTheReclaimerAsks: a pod that asks for nothing the reclaimer asks for
// (cpu only, for a pod that asks only a vGPU) is no victim, however far above its share its
// queue is.
func TestVictimMustFreeWhatTheReclaimerAsks(t *testing.T) {
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{qt.GPUNode("n1", 8, 4)},
		Queues: []*schedulingv1beta1.Queue{q("a", "", nil, st.Resources("1", "1Gi"), nil), q("b", "", nil, gpuShare(2), nil)},
	}
	running(&o, "cpu", "a", st.Resources("4", "1Gi"))
	o.PodGroups = append(o.PodGroups, qt.PodGroup("wait", "b", 1, gpuShare(1), schedulingv1beta1.PodGroupInqueue))
	o.Pods = append(o.Pods, qt.Pod("wait-0", "wait", "", gpuShare(1)))
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, "enqueue, reclaim", builders, conf.PluginOption{Name: PluginName})
	if got := ssn.Reclaimable(qt.Task(ssn, "wait-0"), tasksOf(ssn, "cpu")); len(got) != 0 {
		t.Errorf("a cpu-only pod was taken for a vGPU-only reclaimer")
	}
}

// TestReclaimTakesFromTheNearestQueueFirst: t1 (under dept-a) reclaims on a full node where
// its sibling t2 and zb of dept-b are both above their shares: t2's pod goes, although job
// and queue order alone would take zb's (its job and queue sort last).
func TestReclaimTakesFromTheNearestQueueFirst(t *testing.T) {
	o := frameworktest.Objects{
		Nodes: []*corev1.Node{qt.GPUNode("n1", 4, 8)},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("dept-a", "", nil, nil, nil), q("dept-b", "", nil, nil, nil),
			q("t1", "dept-a", nil, share(2), nil), q("t2", "dept-a", nil, share(1), nil), q("zb", "dept-b", nil, share(1), nil)},
	}
	qt.VCJob(&o, "a-near", "t2", 2, 1, "n1")
	qt.VCJob(&o, "z-far", "zb", 2, 1, "n1")
	qt.VCJob(&o, "claim", "t1", 1, 1, "")
	evicted := reclaimCycle(t, o, hierarchical(nil))
	if len(evicted) != 1 || !strings.HasPrefix(evicted[0], "a-near") {
		t.Errorf("evicted %q, want one of t2's pods", evicted)
	}
}
