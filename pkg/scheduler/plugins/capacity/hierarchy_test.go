package capacity

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

var on = true

// hierarchical is the plugin entry with enableHierarchy.
func hierarchical(args conf.Arguments) conf.PluginOption {
	return conf.PluginOption{Name: PluginName, EnabledHierarchy: &on, Arguments: args}
}

// q is an Open queue under parent ("" for the root) with the given capability, deserved and
// guarantee (each may be nil).
func q(name, parent string, capability, deserved, guarantee corev1.ResourceList) *schedulingv1beta1.Queue {
	queue := declaredQueue(name, capability, deserved)
	queue.Spec.Parent = parent
	queue.Spec.Guarantee.Resource = guarantee
	return queue
}

// running is a Running one-pod PodGroup in queue, its pod on n1; minResources is the pod's
// request, so none of it is elastic.
func running(o *frameworktest.Objects, name, queue string, req corev1.ResourceList) {
	o.PodGroups = append(o.PodGroups, qt.PodGroup(name, queue, 1, req, schedulingv1beta1.PodGroupRunning))
	o.Pods = append(o.Pods, qt.Pod(name+"-0", name, "n1", req))
}

// TestParentQueueRefused: a job in a queue with children, or in the root, waits with
// upstream's words in an Unschedulable condition and one Warning event; the leaf's job runs.
func TestParentQueueRefused(t *testing.T) {
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("org", "", nil, nil, nil), q("team-a", "org", nil, nil, nil), q("team-b", "org", nil, nil, nil)},
		PodGroups: []*schedulingv1beta1.PodGroup{
			qt.PodGroup("in-org", "org", 1, st.Resources("1", ""), schedulingv1beta1.PodGroupPending),
			qt.PodGroup("in-root", "root", 1, nil, schedulingv1beta1.PodGroupPending),
			qt.PodGroup("in-team", "team-a", 1, st.Resources("1", ""), schedulingv1beta1.PodGroupPending),
		},
		Pods: []*corev1.Pod{qt.Pod("in-org-0", "in-org", "", st.Resources("1", "")), qt.Pod("in-root-0", "in-root", "", st.Resources("1", "")),
			qt.Pod("in-team-0", "in-team", "", st.Resources("1", ""))},
	}
	cache := &frameworktest.Cache{Snap: o.ClusterInfo()}
	ssn := frameworktest.OpenSession(t, cache, qt.Actions, builders, hierarchical(nil))
	const orgWhy = "can only submit job to leaf queue, queue `org` has 2 child queues"
	const rootWhy = "can not submit job to root queue"
	if qt.Enqueue(ssn, qt.Job(ssn, "in-org")) {
		t.Errorf("a job in a parent queue was admitted")
	}
	if !qt.Enqueue(ssn, qt.Job(ssn, "in-team")) || qt.Allocate(ssn, qt.Task(ssn, "in-team-0")) == "" {
		t.Errorf("the leaf queue's job was not admitted and placed")
	}
	for job, why := range map[string]string{"in-org": orgWhy, "in-root": rootWhy} {
		if r := ssn.JobValid(qt.Job(ssn, job)); r == nil || r.Reason != InvalidQueueReason || r.Message != why {
			t.Errorf("JobValid of %s: %+v, want %q", job, r, why)
		}
	}
	if err := ssn.Allocatable(ssn.Queues["org"], qt.Task(ssn, "in-org-0")); err == nil || err.Error() != "queue org takes no pods: "+orgWhy {
		t.Errorf("Allocatable in the parent queue: %v", err)
	}
	framework.CloseSession(ssn)
	for job, why := range map[string]string{"in-org": orgWhy, "in-root": rootWhy} {
		var got []string
		for _, c := range qt.Job(ssn, job).Status.Conditions {
			got = append(got, string(c.Type)+"/"+c.Reason+"/"+c.Message)
		}
		if want := []string{"Unschedulable/InvalidQueue/" + why}; !cmp.Equal(got, want) {
			t.Errorf("conditions of %s %q, want %q", job, got, want)
		}
	}
	want := []frameworktest.JobEvent{{PodGroup: "in-org", Type: "Warning", Reason: "Unschedulable", Message: orgWhy},
		{PodGroup: "in-root", Type: "Warning", Reason: "Unschedulable", Message: rootWhy}}
	got := cache.Events
	if len(got) == 2 && got[0].PodGroup > got[1].PodGroup {
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestTreeErrorsHoldOnlyTheirJobs: a queue whose parent is missing and two queues in a cycle
// are reported and their jobs wait; the good leaf's job is placed.
func TestTreeErrorsHoldOnlyTheirJobs(t *testing.T) {
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("team", "", nil, nil, nil), q("orphan", "gone", nil, nil, nil), q("x", "y", nil, nil, nil), q("y", "x", nil, nil, nil)},
	}
	for _, queue := range []string{"team", "orphan", "x"} {
		o.PodGroups = append(o.PodGroups, qt.PodGroup("in-"+queue, queue, 1, nil, schedulingv1beta1.PodGroupInqueue))
		o.Pods = append(o.Pods, qt.Pod("in-"+queue+"-0", "in-"+queue, "", st.Resources("1", "")))
	}
	cache := &frameworktest.Cache{Snap: o.ClusterInfo()}
	ssn := frameworktest.OpenSession(t, cache, qt.Actions, builders, hierarchical(nil))
	var reported []string
	for _, p := range cache.QueueProblems {
		reported = append(reported, p.Queue.Name+": "+p.Message)
	}
	wantReported := []string{"orphan: queue orphan names parent queue gone, which does not exist",
		"x: spec.parent forms a cycle: x -> y -> x", "y: spec.parent forms a cycle: x -> y -> x"}
	if !cmp.Equal(reported, wantReported) {
		t.Errorf("reported %q, want %q", reported, wantReported)
	}
	if qt.Allocate(ssn, qt.Task(ssn, "in-team-0")) == "" {
		t.Errorf("the good queue's job was held")
	}
	for _, job := range []string{"in-orphan", "in-x"} {
		if r := ssn.JobValid(qt.Job(ssn, job)); r == nil || !strings.Contains(r.Message, "is not in the queue hierarchy") {
			t.Errorf("JobValid of %s: %+v", job, r)
		}
		if qt.Allocate(ssn, qt.Task(ssn, job+"-0")) != "" {
			t.Errorf("%s was placed from a broken queue", job)
		}
	}
}

// vgpuRequest is a vGPU request: number, memory in MiB, cores in percent.
func vgpuRequest(number, memMiB, cores string) corev1.ResourceList {
	return st.Resources("", "", string(vgpu.DefaultCountResource), number, string(vgpu.DefaultMemoryResource), memMiB,
		string(vgpu.DefaultCoresResource), cores)
}

// TestAncestorCapabilityCap: org caps its subtree at 2 vGPUs, 4000 MiB and 60% of cores while
// the node has room for far more; team-a uses 1 vGPU / 3000 MiB / 30%. Team-b has no cap of its
// own, so it is org's that stops it, in each vGPU dimension, at enqueue and at allocate; with
// flat queues the same jobs run. Org's status.allocated is its subtree's.
func TestAncestorCapabilityCap(t *testing.T) {
	cluster := func(req corev1.ResourceList, minResources bool) frameworktest.Objects {
		o := frameworktest.Objects{
			Nodes: []*corev1.Node{st.Node("n1", st.Resources("8", "16Gi", string(vgpu.DefaultCountResource), "10",
				string(vgpu.DefaultMemoryResource), "16384", string(vgpu.DefaultCoresResource), "400")).Obj()},
			Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("org", "", vgpuRequest("2", "4000", "60"), nil, nil),
				q("team-a", "org", nil, nil, nil), q("team-b", "org", nil, nil, nil)},
		}
		running(&o, "a", "team-a", vgpuRequest("1", "3000", "30"))
		var min corev1.ResourceList
		if minResources {
			min = req
		}
		o.PodGroups = append(o.PodGroups, qt.PodGroup("job", "team-b", 1, min, schedulingv1beta1.PodGroupPending))
		o.Pods = append(o.Pods, qt.Pod("job-0", "job", "", req))
		return o
	}
	cases := []struct {
		name string
		req  corev1.ResourceList
		over string // the dimension over org's cap, "" when the job fits
	}{
		{"fits", vgpuRequest("1", "1000", "30"), ""},
		{"vgpu-number", vgpuRequest("2", "500", "10"), "volcano.sh/vgpu-number"},
		{"vgpu-memory", vgpuRequest("1", "2000", "10"), "volcano.sh/vgpu-memory"},
		{"vgpu-cores", vgpuRequest("1", "500", "40"), "volcano.sh/vgpu-cores"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var placed []string
			if tc.over == "" {
				placed = []string{"job-0"}
			}
			// A standalone pod (minResources with vGPU): enqueue checks org too.
			s := qt.Scenario{Cluster: cluster(tc.req, true), Job: "job", WantEnqueued: tc.over == "", WantPlaced: placed}
			if tc.over != "" {
				s.WantEvents = []frameworktest.JobEvent{qt.QueueQuotaRejected("job", "queue resource quota insufficient: insufficient "+tc.over)}
			}
			s.Run(t, builders, hierarchical(nil))
			// A VolcanoJob (no vGPU in minResources): admitted, then allocate checks org.
			s = qt.Scenario{Cluster: cluster(tc.req, false), Job: "job", WantEnqueued: true, WantPlaced: placed}
			s.Run(t, builders, hierarchical(nil))
			// Flat queues: team-b has no cap, the node has room.
			s = qt.Scenario{Cluster: cluster(tc.req, true), Job: "job", WantEnqueued: true, WantPlaced: []string{"job-0"}}
			s.Run(t, builders, conf.PluginOption{Name: PluginName})

			cache := &frameworktest.Cache{Snap: cluster(tc.req, false).ClusterInfo()}
			ssn := frameworktest.OpenSession(t, cache, qt.Actions, builders, hierarchical(nil))
			err := ssn.Allocatable(ssn.Queues["team-b"], qt.Task(ssn, "job-0"))
			want := "queue org, above queue team-b, has no room for the pod within its real capability: " + tc.over
			if (tc.over == "" && err != nil) || (tc.over != "" && (err == nil || err.Error() != want)) {
				t.Errorf("Allocatable: %v, want %q", err, want)
			}
			framework.CloseSession(ssn)
			org := cache.Allocated["org"]
			if got := org.Get(vgpu.DefaultMemoryResource); got != 3000*1000 {
				t.Errorf("org's status.allocated vgpu-memory %v, want team-a's 3000 MiB", got)
			}
		})
	}
}

// reclaimCluster: a 4-cpu node; root > org-a > team-a, root > org-b > team-b. team-a deserves
// 1 cpu and runs three 1-cpu pods; team-b (deserving 1 cpu) waits for one.
func reclaimCluster(orgA, teamA *schedulingv1beta1.Queue) frameworktest.Objects {
	o := frameworktest.Objects{
		Nodes: []*corev1.Node{st.Node("n1", st.Resources("4", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), orgA, teamA,
			q("org-b", "", nil, st.Resources("2", ""), nil), q("team-b", "org-b", nil, st.Resources("1", ""), nil)},
	}
	for _, name := range []string{"a1", "a2", "a3"} {
		running(&o, name, "team-a", st.Resources("1", ""))
	}
	o.PodGroups = append(o.PodGroups, qt.PodGroup("b", "team-b", 1, nil, schedulingv1beta1.PodGroupInqueue))
	o.Pods = append(o.Pods, qt.Pod("b-0", "b", "", st.Resources("1", "")))
	return o
}

// TestReclaimAlongTheTree: team-b takes back from team-a, above its deserved share, down to
// that share; never below a guarantee, whether team-a's or org-a's; and with
// ancestorReclaimLevel 1 not at all while org-a is within its own deserved share.
func TestReclaimAlongTheTree(t *testing.T) {
	cases := []struct {
		name        string
		orgA, teamA *schedulingv1beta1.Queue
		level       conf.Arguments
		want        int
	}{
		{"down to team-a's deserved share",
			q("org-a", "", nil, st.Resources("2", ""), nil), q("team-a", "org-a", nil, st.Resources("1", ""), nil), nil, 2},
		{"not below team-a's guarantee",
			q("org-a", "", nil, st.Resources("2", ""), nil), q("team-a", "org-a", nil, st.Resources("1", ""), st.Resources("2", "")), nil, 1},
		{"not below org-a's guarantee",
			q("org-a", "", nil, st.Resources("1", ""), st.Resources("3", "")), q("team-a", "org-a", nil, st.Resources("1", ""), nil), nil, 0},
		{"ancestorReclaimLevel 1: org-a within its deserved share keeps its pods",
			q("org-a", "", nil, st.Resources("3", ""), nil), q("team-a", "org-a", nil, st.Resources("1", ""), nil),
			conf.Arguments{AncestorReclaimLevel: 1}, 0},
		{"ancestorReclaimLevel 0: only team-a's share counts",
			q("org-a", "", nil, st.Resources("3", ""), nil), q("team-a", "org-a", nil, st.Resources("1", ""), nil), nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: reclaimCluster(tc.orgA, tc.teamA).ClusterInfo()},
				"reclaim", builders, hierarchical(tc.level))
			reclaimer := qt.Task(ssn, "b-0")
			if err := ssn.Preemptive(ssn.Queues["team-b"], reclaimer); err != nil {
				t.Fatalf("team-b may not reclaim: %v", err)
			}
			candidates := []*api.TaskInfo{qt.Task(ssn, "a1-0"), qt.Task(ssn, "a2-0"), qt.Task(ssn, "a3-0")}
			if got := ssn.Reclaimable(reclaimer, candidates); len(got) != tc.want {
				t.Errorf("victims %d, want %d", len(got), tc.want)
			}
		})
	}
}

// TestReclaimInAFullCluster: with team-a's three pods filling the node, the root (the
// cluster) has no room left, as whenever reclaim is needed; team-b still takes back from
// team-a, since reclaim leaves the root's total as it is.
func TestReclaimInAFullCluster(t *testing.T) {
	o := reclaimCluster(q("org-a", "", nil, st.Resources("2", ""), nil), q("team-a", "org-a", nil, st.Resources("1", ""), nil))
	o.Nodes = []*corev1.Node{st.Node("n1", st.Resources("3", "8Gi")).Obj()}
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, "reclaim", builders, hierarchical(nil))
	reclaimer := qt.Task(ssn, "b-0")
	if err := ssn.Allocatable(ssn.Queues["team-b"], reclaimer); err == nil {
		t.Fatal("team-b may allocate in a full cluster")
	}
	if err := ssn.Preemptive(ssn.Queues["team-b"], reclaimer); err != nil {
		t.Fatalf("team-b may not reclaim in a full cluster: %v", err)
	}
	candidates := []*api.TaskInfo{qt.Task(ssn, "a1-0"), qt.Task(ssn, "a2-0"), qt.Task(ssn, "a3-0")}
	if got := ssn.Reclaimable(reclaimer, candidates); len(got) != 2 {
		t.Errorf("victims %d, want 2: team-a down to its deserved share", len(got))
	}
}

// TestDeservedAlongTheTree: a child deserves no more than its parent does, nor than its real
// capability, and at least its guarantee; the root deserves what its children do.
func TestDeservedAlongTheTree(t *testing.T) {
	o := frameworktest.Objects{
		Nodes: []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil), q("org", "", nil, st.Resources("4", "4Gi"), nil),
			q("greedy", "org", st.Resources("3", ""), st.Resources("6", "6Gi"), nil), q("guaranteed", "org", nil, nil, st.Resources("1", ""))},
	}
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, qt.Actions, builders, hierarchical(nil))
	cp := &capacityPlugin{}
	cp.openTree(ssn)
	want := map[api.QueueID]*api.Resource{
		"greedy":     api.NewResource(st.Resources("3", "4Gi")),
		"guaranteed": api.NewResource(st.Resources("1", "")),
		"org":        api.NewResource(st.Resources("4", "4Gi")),
		"root":       api.NewResource(st.Resources("4", "4Gi")),
	}
	for id, w := range want {
		if got := cp.ledger.Queues[id].Deserved; got.String() != w.String() {
			t.Errorf("%s deserves %v, want %v", id, got, w)
		}
	}
}

// TestQueueOrderAlongTheTree: leaves are ordered by the shares of the teams they belong to,
// not their own: a-small (share 1/1) under org-a, within its share, goes before b-idle (share
// 0) under org-b, above its share; parents go after leaves.
func TestQueueOrderAlongTheTree(t *testing.T) {
	o := frameworktest.Objects{
		Nodes: []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{q("root", "", nil, nil, nil),
			q("org-a", "", nil, st.Resources("4", ""), nil), q("a-small", "org-a", nil, st.Resources("1", ""), nil),
			q("org-b", "", nil, st.Resources("1", ""), nil), q("b-busy", "org-b", nil, st.Resources("1", ""), nil),
			q("b-idle", "org-b", nil, st.Resources("1", ""), nil)},
	}
	running(&o, "a", "a-small", st.Resources("1", ""))
	running(&o, "b", "b-busy", st.Resources("3", ""))
	ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, qt.Actions, builders, hierarchical(nil))
	if !ssn.QueueOrderFn(ssn.Queues["a-small"], ssn.Queues["b-idle"]) {
		t.Errorf("b-idle goes before a-small although its team is above its share")
	}
	if !ssn.QueueOrderFn(ssn.Queues["b-idle"], ssn.Queues["org-a"]) {
		t.Errorf("a parent queue goes before a leaf")
	}
}

// TestReclaimForTheTeam: a queue that deserves nothing itself may reclaim with
// ancestorReclaimLevel 1 when its parent is owed the resources, and not without.
func TestReclaimForTheTeam(t *testing.T) {
	for level, want := range map[int]bool{0: false, 1: true} {
		o := reclaimCluster(q("org-a", "", nil, st.Resources("2", ""), nil), q("team-a", "org-a", nil, st.Resources("1", ""), nil))
		o.Queues[4] = q("team-b", "org-b", nil, nil, nil)
		ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: o.ClusterInfo()}, "reclaim", builders,
			hierarchical(conf.Arguments{AncestorReclaimLevel: level}))
		err := ssn.Preemptive(ssn.Queues["team-b"], qt.Task(ssn, "b-0"))
		if (err == nil) != want {
			t.Errorf("ancestorReclaimLevel %d: team-b may reclaim = %v (%v), want %v", level, err == nil, err, want)
		}
	}
}
