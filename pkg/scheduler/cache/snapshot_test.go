package cache

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

func priorityClass(name string, value int32, globalDefault bool) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault}
}

func withPriorityClass(pg *schedulingv1beta1.PodGroup, name string) *schedulingv1beta1.PodGroup {
	pg.Spec.PriorityClassName = name
	return pg
}

// describeSnapshot renders a snapshot's jobs and node order.
func describeSnapshot(snap *api.ClusterInfo) (jobs []string, nodes []string) {
	for id, j := range snap.Jobs {
		line := fmt.Sprintf("%s queue=%s priority=%d tasks=%d", id, j.Queue, j.Priority, len(j.Tasks))
		if j.PriorityClassMissing {
			line += " (class missing)"
		}
		jobs = append(jobs, line)
	}
	sort.Strings(jobs)
	for _, n := range snap.NodeList {
		nodes = append(nodes, n.Name)
	}
	return jobs, nodes
}

func TestSnapshotContents(t *testing.T) {
	tests := []struct {
		name      string
		objs      []runtime.Object
		classes   []*schedulingv1.PriorityClass
		wantJobs  []string
		wantNodes []string
	}{
		{
			name: "a job is in only when its PodGroup and its queue exist",
			objs: []runtime.Object{newQueue("default"), newQueue("q1"),
				newPodGroup("ok", "q1", 1), st.Pod("a", "1", "").Group("ok").Obj(),
				st.Pod("b", "1", "").Group("no-podgroup").Obj(),
				newPodGroup("no-queue", "missing", 1), st.Pod("c", "1", "").Group("no-queue").Obj()},
			wantJobs: []string{"ns/ok queue=q1 priority=0 tasks=1"},
		},
		{
			name:     "a PodGroup naming no queue is in the default queue",
			objs:     []runtime.Object{newQueue("default"), newPodGroup("pg1", "", 1)},
			wantJobs: []string{"ns/pg1 queue=default priority=0 tasks=0"},
		},
		{
			name:     "without the default queue, PodGroups naming no queue wait",
			objs:     []runtime.Object{newQueue("q1"), newPodGroup("pg1", "", 1)},
			wantJobs: nil,
		},
		{
			name: "priority comes from the PodGroup's PriorityClass, else the global default; a class that does not exist is marked",
			objs: []runtime.Object{newQueue("default"),
				withPriorityClass(newPodGroup("high", "", 1), "high"),
				withPriorityClass(newPodGroup("unknown-class", "", 1), "nope"),
				newPodGroup("plain", "", 1)},
			classes: []*schedulingv1.PriorityClass{priorityClass("high", 1000, false),
				priorityClass("default-a", 10, true), priorityClass("default-b", 5, true)},
			wantJobs: []string{"ns/high queue=default priority=1000 tasks=0",
				"ns/plain queue=default priority=5 tasks=0", "ns/unknown-class queue=default priority=5 tasks=0 (class missing)"},
		},
		{
			name: "nodes are in name order; nodes known only from pods are left out",
			objs: []runtime.Object{st.Node("n3", st.Resources("1", "")).Obj(), st.Node("n1", st.Resources("1", "")).Obj(), st.Node("n2", st.Resources("1", "")).Obj(),
				st.Pod("p", "1", "").Node("gone").Phase(corev1.PodRunning).Obj()},
			wantNodes: []string{"n1", "n2", "n3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, Options{PriorityClass: true})
			for _, pc := range tt.classes {
				env.sc.onPriorityClassSet(pc)
			}
			env.add(t, tt.objs...)
			jobs, nodes := describeSnapshot(env.sc.Snapshot())
			if !reflect.DeepEqual(jobs, tt.wantJobs) {
				t.Errorf("jobs:\n got  %q\n want %q", jobs, tt.wantJobs)
			}
			if !reflect.DeepEqual(nodes, tt.wantNodes) {
				t.Errorf("nodes: got %q, want %q", nodes, tt.wantNodes)
			}
		})
	}
}

// TestSnapshotIsolation changes everything a session may change in a snapshot and checks
// that the cache, and so the next snapshot, did not see it.
func TestSnapshotIsolation(t *testing.T) {
	env := newTestEnv(t, Options{})
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), st.Node("n2", st.Resources("4", "")).Obj(), newQueue("default"), newPodGroup("pg1", "", 2),
		st.Pod("run", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj(),
		st.Pod("wait", "1", "").Group("pg1").Obj())
	want := env.sc.Snapshot()
	cacheBefore := describeCache(env.sc)

	snap := env.sc.Snapshot()
	job := snap.Jobs["ns/pg1"]
	waiting := taskNamed(t, job, "wait")
	waiting.NodeName = "n2"
	job.UpdateTaskStatus(waiting, api.Allocated)
	snap.Nodes["n2"].AddTask(waiting)
	waiting.BindAnnotations = map[string]string{"k": "v"}
	waiting.LastTransaction = &api.TransactionContext{NodeName: "n2", Status: api.Allocated}
	running := taskNamed(t, job, "run")
	snap.Nodes["n1"].Idle.Sub(snap.Nodes["n1"].Idle)
	snap.Nodes["n1"].RemoveTask(running)
	job.Status.Phase = schedulingv1beta1.PodGroupInqueue
	job.Status.Conditions = append(job.Status.Conditions, schedulingv1beta1.PodGroupCondition{Type: "Scheduled"})
	job.NodesFitErrors[running.UID] = api.NewFitErrors()
	job.MinAvailable = 9
	snap.Queues["default"].Weight = 9
	snap.NodeList[0], snap.NodeList[1] = snap.NodeList[1], snap.NodeList[0]
	delete(snap.Jobs, "ns/pg1")

	got := env.sc.Snapshot()
	got.Generation = want.Generation
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changing a snapshot changed the cache")
	}
	if got := describeCache(env.sc); !reflect.DeepEqual(got, cacheBefore) {
		t.Errorf("cache after the session:\n got  %q\n want %q", got, cacheBefore)
	}
	if pg := want.Jobs["ns/pg1"].PodGroup; pg.Status.Phase != schedulingv1beta1.PodGroupPending || len(pg.Status.Conditions) != 0 {
		t.Errorf("the informer's PodGroup was changed: %+v", pg.Status)
	}
}

// TestDanglingReferences: a job left out because what it names is missing is reported once,
// after the grace period, with a log line and a Warning event on the object that names it,
// and it blocks no other job.
func TestDanglingReferences(t *testing.T) {
	tests := []struct {
		name string
		objs []runtime.Object
		// fix makes the reference good, breaks removes it again.
		fix, breaks func(env *testEnv)
		want        string
	}{
		{
			name: "PodGroup naming a missing queue",
			objs: []runtime.Object{newPodGroup("pg1", "q1", 1), st.Pod("p1", "1", "").Group("pg1").Obj()},
			fix:  func(env *testEnv) { env.sc.onQueueSet(newQueue("q1")) },
			breaks: func(env *testEnv) {
				env.sc.onQueueDelete(newQueue("q1"))
			},
			want: "PodGroup ns/pg1 Warning QueueNotFound: Queue q1 does not exist; the PodGroup is not scheduled until it does",
		},
		{
			name: "pod naming a missing PodGroup",
			objs: []runtime.Object{st.Pod("p1", "1", "").Group("pg1").Obj(),
				// Pods already on a node wait for nothing: no report for them.
				st.Pod("p2", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj()},
			fix:    func(env *testEnv) { env.sc.onPodGroupSet(newPodGroup("pg1", "", 1)) },
			breaks: func(env *testEnv) { env.sc.onPodGroupDelete(newPodGroup("pg1", "", 1)) },
			want:   "Pod ns/p1 Warning PodGroupNotFound: PodGroup ns/pg1 named by annotation scheduling.k8s.io/group-name does not exist; the pod is not scheduled until it does",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, Options{})
			env.add(t, newQueue("default"), newPodGroup("other", "", 1), st.Pod("o1", "1", "").Group("other").Obj())
			env.add(t, tt.objs...)
			cycle := func(after time.Duration) []string {
				t.Helper()
				env.clock.SetTime(env.clock.Now().Add(after))
				snap := env.sc.Snapshot()
				if snap.Jobs["ns/other"] == nil {
					t.Fatalf("the good job is missing from the snapshot")
				}
				if snap.Jobs["ns/pg1"] != nil {
					t.Fatalf("the job with a missing reference is in the snapshot")
				}
				return env.events.Take()
			}
			expect := func(what string, got []string, want ...string) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: events %q, want %q", what, got, want)
				}
			}
			expect("first cycle", cycle(0))
			expect("inside the grace period", cycle(danglingReferenceGrace-time.Second))
			expect("grace period over", cycle(time.Second), tt.want)
			expect("later cycles", cycle(time.Minute))

			tt.fix(env)
			if env.sc.Snapshot().Jobs["ns/pg1"] == nil {
				t.Fatalf("the job is still missing once its reference exists")
			}
			tt.breaks(env)
			expect("broken again", cycle(0))
			expect("broken again, grace period over", cycle(danglingReferenceGrace), tt.want)
		})
	}
}

// TestSnapshotReusesWhatTheSessionLeft: a released session's copy of a job is the next
// snapshot's while neither the session nor the cache changed the job, its status refreshed;
// otherwise, and for a session that released nothing, the snapshot copies the job again.
func TestSnapshotReusesWhatTheSessionLeft(t *testing.T) {
	env := newTestEnv(t, Options{})
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), newQueue("default"),
		newPodGroup("idle", "", 1), st.Pod("run", "1", "").Group("idle").Node("n1").Phase(corev1.PodRunning).Obj(),
		newPodGroup("tried", "", 1), st.Pod("wait", "1", "").Group("tried").Obj(),
		newPodGroup("moved", "", 1), st.Pod("start", "1", "").Group("moved").Node("n1").Phase(corev1.PodPending).Obj())
	// fresh is what a snapshot must hold for each job: a new copy of the cache's.
	fresh := func(snap *api.ClusterInfo) {
		t.Helper()
		env.sc.mu.Lock()
		defer env.sc.mu.Unlock()
		for id, job := range env.sc.jobs {
			if want := job.Clone(); !reflect.DeepEqual(snap.Jobs[id], want) {
				t.Errorf("job %s in the snapshot:\n got  %+v\n want %+v", id, snap.Jobs[id], want)
			}
		}
	}

	first := env.sc.Snapshot()
	idle, tried, moved := first.Jobs["ns/idle"], first.Jobs["ns/tried"], first.Jobs["ns/moved"]
	// What every session does to every job, and what an unplaceable gang gets.
	for _, job := range first.Jobs {
		job.Status.Phase = schedulingv1beta1.PodGroupRunning
		job.Status.Conditions = append(job.Status.Conditions, schedulingv1beta1.PodGroupCondition{Type: "Scheduled", TransitionID: "s1"})
	}
	waiting := taskNamed(t, tried, "wait")
	waiting.LastTransaction = &api.TransactionContext{NodeName: "n1", Status: api.Allocated}
	tried.NodesFitErrors[waiting.UID] = api.NewFitErrors()
	env.sc.Release(&api.Released{Generation: first.Generation, Jobs: first.Jobs})
	// The cache sees a pod start after the session.
	env.sc.onPodUpdate(nil, st.Pod("start", "1", "").Group("moved").Node("n1").Phase(corev1.PodRunning).Obj())

	second := env.sc.Snapshot()
	fresh(second)
	if second.Jobs["ns/idle"] != idle {
		t.Errorf("the job nothing changed was copied again")
	}
	if second.Jobs["ns/tried"] == tried || second.Jobs["ns/moved"] == moved {
		t.Errorf("a job the session or the cache changed was reused")
	}

	// Unreleased, a snapshot shares nothing with the next one.
	third := env.sc.Snapshot()
	fresh(third)
	for id, job := range third.Jobs {
		if second.Jobs[id] == job {
			t.Errorf("job %s is in two snapshots, the first never released", id)
		}
	}
}

// TestSnapshotReusesNodesTheSessionLeft: the next snapshot holds the released session's copy
// of a node that neither the session (Touched) nor the cache changed, its devices readied for
// another session (Reuse); a node the session touched or the cache changed is copied again,
// and so is every node when the session was opened on an older snapshot, or released nothing.
func TestSnapshotReusesNodesTheSessionLeft(t *testing.T) {
	env := newTestEnv(t, Options{})
	env.sc.AddDeviceDeriver(reusedDeriver{})
	env.add(t, newQueue("default"), newPodGroup("pg1", "", 1),
		st.Node("quiet", st.Resources("4", "")).Obj(), st.Node("placed", st.Resources("4", "")).Obj(),
		st.Node("started", st.Resources("4", "")).Obj(),
		st.Pod("run", "1", "").Group("pg1").Node("quiet").Phase(corev1.PodRunning).Obj())
	// fresh: each node of the snapshot holds what a new copy of the cache's would (but for
	// the reuse counts).
	fresh := func(snap *api.ClusterInfo) {
		t.Helper()
		env.sc.mu.Lock()
		defer env.sc.mu.Unlock()
		for name, n := range env.sc.nodes {
			got, want := *snap.Nodes[name], *n.Clone()
			got.Devices, want.Devices = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("node %s in the snapshot:\n got  %+v\n want %+v", name, got, want)
			}
		}
	}
	release := func(snap *api.ClusterInfo, touched ...string) {
		r := &api.Released{Generation: snap.Generation, Jobs: snap.Jobs, Nodes: snap.Nodes, Touched: map[string]struct{}{}}
		for _, name := range touched {
			r.Touched[name] = struct{}{}
		}
		env.sc.Release(r)
	}

	first := env.sc.Snapshot()
	for _, n := range first.NodeList {
		*n.Devices["reused"].(*reusedCount) = 0
	}
	release(first, "placed")
	env.sc.onPodAdd(st.Pod("new", "1", "").Group("pg1").Node("started").Phase(corev1.PodRunning).Obj())
	second := env.sc.Snapshot()
	fresh(second)
	if second.Nodes["quiet"] != first.Nodes["quiet"] || *second.Nodes["quiet"].Devices["reused"].(*reusedCount) != 1 {
		t.Errorf("the node nothing changed was copied again, or its devices not readied for reuse")
	}
	if second.Nodes["placed"] == first.Nodes["placed"] || second.Nodes["started"] == first.Nodes["started"] {
		t.Errorf("a node the session or the cache changed was reused")
	}

	// Released after a later snapshot was taken (whose changes are gone), or never released,
	// a session's nodes are not reused.
	third := env.sc.Snapshot()
	env.sc.onPodAdd(st.Pod("later", "1", "").Group("pg1").Node("quiet").Phase(corev1.PodRunning).Obj())
	fourth := env.sc.Snapshot()
	release(third)
	fifth := env.sc.Snapshot()
	fresh(fifth)
	for name, n := range fifth.Nodes {
		if third.Nodes[name] == n || fourth.Nodes[name] == n {
			t.Errorf("node %s is in two snapshots, the earlier released out of turn or not at all", name)
		}
	}
}

// reusedDeriver gives each node a count of the times its copy was reused.
type reusedDeriver struct{}

func (reusedDeriver) Name() string             { return "reused" }
func (reusedDeriver) Claims(*corev1.Node) bool { return true }
func (reusedDeriver) Derive(*api.NodeInfo) api.Devices {
	n := reusedCount(0)
	return &n
}

type reusedCount int

func (c *reusedCount) Clone() api.Devices { n := *c; return &n }
func (c *reusedCount) Reuse()             { *c++ }
