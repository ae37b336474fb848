package framework_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// cluster is a queue "default", nodes n0, n1... of 4 cpu and 10 pods, and job ns/pg of pods
// pg-w-0, pg-w-1... (UID uid-0, uid-1...) of 1 cpu each, all pending, minMember all of them.
func cluster(nodes, pods int) *api.ClusterInfo {
	var infos []*api.NodeInfo
	for i := 0; i < nodes; i++ {
		infos = append(infos, api.NewNodeInfo(st.Node(fmt.Sprintf("n%d", i), st.Resources("4", "", "pods", "10")).Obj()))
	}
	var ps []*corev1.Pod
	for i := 0; i < pods; i++ {
		ps = append(ps, st.MakePod().Namespace("ns").UID(fmt.Sprintf("uid-%d", i)).Name(fmt.Sprintf("pg-w-%d", i)).Group("pg").
			Container(st.Resources("1", "")).Obj())
	}
	ci := frameworktest.ClusterOf(infos, frameworktest.JobOf(st.MakePodGroup().Namespace("ns").Name("pg").MinMember(int32(pods)).Obj(), ps...))
	ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Obj())
	return ci
}

// allocateOnly is the configuration the sessions of these tests open with, before their tiers.
var allocateOnly = conf.SchedulerConfiguration{Actions: "allocate"}

// counter is a plugin that counts placements through event handlers, to show Discard runs
// every undo.
type counter struct{ placed int }

func (c *counter) Name() string { return "counter" }
func (c *counter) OnSessionOpen(ssn *framework.Session) {
	ssn.AddEventHandler(&framework.EventHandler{
		AllocateFunc:   func(*framework.Event) { c.placed++ },
		DeallocateFunc: func(*framework.Event) { c.placed-- },
	})
}
func (c *counter) OnSessionClose(*framework.Session) {}

// withoutLastTransaction strips the one field Discard changes on purpose.
func withoutLastTransaction(ci *api.ClusterInfo) *api.ClusterInfo {
	for _, j := range ci.Jobs {
		for _, t := range j.Tasks {
			t.LastTransaction = nil
		}
	}
	return ci
}

func TestDiscardRestoresSessionExactly(t *testing.T) {
	cache := &frameworktest.Cache{Snap: cluster(2, 3)}
	before := cluster(2, 3)
	cnt := &counter{}
	ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{cnt})
	job := ssn.Jobs["ns/pg"]
	stmt := ssn.NewStatement()
	i := 0
	for _, task := range job.Tasks {
		node := ssn.NodeList[i%2]
		if i == 2 {
			if err := stmt.Pipeline(task, node); err != nil {
				t.Fatal(err)
			}
		} else if err := stmt.Allocate(task, node); err != nil {
			t.Fatal(err)
		}
		i++
	}
	if cnt.placed != 3 || job.TaskCount(api.Allocated) != 2 || job.TaskCount(api.Pipelined) != 1 {
		t.Fatalf("placed=%d allocated=%d pipelined=%d", cnt.placed, job.TaskCount(api.Allocated), job.TaskCount(api.Pipelined))
	}
	stmt.Discard()
	after := &api.ClusterInfo{Jobs: ssn.Jobs, Nodes: ssn.Nodes, Queues: ssn.Queues, NodeList: ssn.NodeList}
	for _, task := range job.Tasks {
		if task.LastTransaction == nil || task.LastTransaction.NodeName == "" {
			t.Errorf("task %s lost where it was placed", task.Name)
		}
	}
	if !reflect.DeepEqual(withoutLastTransaction(after), before) {
		t.Errorf("Discard did not restore the session: %s", cmp.Diff(before, after))
	}
	if cnt.placed != 0 {
		t.Errorf("event handlers not undone: %d", cnt.placed)
	}
	if len(cache.Bound) != 0 {
		t.Errorf("a discarded statement reached the binder: %v", cache.Binds())
	}
}

func TestCommitBindsAllocationsOnly(t *testing.T) {
	cache := &frameworktest.Cache{Snap: cluster(1, 2)}
	ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{&counter{}})
	stmt := ssn.NewStatement()
	job := ssn.Jobs["ns/pg"]
	task0, task1 := job.Tasks["uid-0"], job.Tasks["uid-1"]
	if err := stmt.Allocate(task0, ssn.NodeList[0]); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Pipeline(task1, ssn.NodeList[0]); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()
	if !reflect.DeepEqual(cache.Binds(), map[string]string{"ns/pg-w-0": "n0"}) {
		t.Errorf("bound %v", cache.Binds())
	}
	if task0.Status != api.Binding || task1.Status != api.Pipelined {
		t.Errorf("statuses %v %v", task0.Status, task1.Status)
	}
}

func TestCommitUndoesRefusedBind(t *testing.T) {
	cache := &frameworktest.Cache{Snap: cluster(1, 1), OnBind: func(*api.TaskInfo) error { return errors.New("node changed") }}
	cnt := &counter{}
	ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{cnt})
	stmt := ssn.NewStatement()
	task := ssn.Jobs["ns/pg"].Tasks["uid-0"]
	if err := stmt.Allocate(task, ssn.NodeList[0]); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()
	if task.Status != api.Pending || len(ssn.NodeList[0].Tasks) != 0 || cnt.placed != 0 {
		t.Errorf("refused bind not undone: status %v node tasks %d placed %d", task.Status, len(ssn.NodeList[0].Tasks), cnt.placed)
	}
}

// refuser fails every placement, to show a handler error leaves no trace.
type refuser struct{ counter }

func (r *refuser) Name() string { return "refuser" }
func (r *refuser) OnSessionOpen(ssn *framework.Session) {
	r.counter.OnSessionOpen(ssn)
	ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: func(e *framework.Event) { e.Err = errors.New("no device fits") }})
}

func TestHandlerErrorRefusesPlacement(t *testing.T) {
	cache := &frameworktest.Cache{Snap: cluster(1, 1)}
	r := &refuser{}
	ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{r})
	task := ssn.Jobs["ns/pg"].Tasks["uid-0"]
	err := ssn.NewStatement().Allocate(task, ssn.NodeList[0])
	if err == nil || task.Status != api.Pending || len(ssn.NodeList[0].Tasks) != 0 || r.placed != 0 {
		t.Errorf("err=%v status=%v nodeTasks=%d placed=%d", err, task.Status, len(ssn.NodeList[0].Tasks), r.placed)
	}
}

// voter votes as told, to check the tier rules of JobEnqueueable.
type voter struct {
	name string
	vote int
}

func (v *voter) Name() string { return v.name }
func (v *voter) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobEnqueueableFn(v.name, func(*api.JobInfo) int { return v.vote })
}
func (v *voter) OnSessionClose(*framework.Session) {}

func TestVoteTierRules(t *testing.T) {
	cases := []struct {
		name  string
		tiers [][]int
		want  bool
	}{
		{"all abstain", [][]int{{framework.Abstain}, {framework.Abstain}}, true},
		{"reject wins in its tier", [][]int{{framework.Permit, framework.Reject}}, false},
		{"permit in tier 1 ends the vote", [][]int{{framework.Permit}, {framework.Reject}}, true},
		{"abstain then reject", [][]int{{framework.Abstain}, {framework.Reject}}, false},
		{"abstain then permit", [][]int{{framework.Abstain}, {framework.Permit, framework.Abstain}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tiers [][]*voter
			for ti, tier := range tc.tiers {
				tiers = append(tiers, nil)
				for pi, v := range tier {
					tiers[ti] = append(tiers[ti], &voter{name: fmt.Sprintf("v%d%d", ti, pi), vote: v})
				}
			}
			ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: cluster(1, 1)}, conf.SchedulerConfiguration{Actions: "enqueue"}, tiers...)
			if got := ssn.JobEnqueueable(ssn.Jobs["ns/pg"]); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// predicateOf registers a predicate that fails with its own name, to check which plugins a
// call reaches.
type predicateOf struct{ name string }

func (p *predicateOf) Name() string { return p.name }
func (p *predicateOf) OnSessionOpen(ssn *framework.Session) {
	ssn.AddPredicateFn(p.name, func(*api.TaskInfo, *api.NodeInfo) *api.Status {
		return api.NewStatus(api.Unschedulable, p.name+" says no")
	})
}
func (p *predicateOf) OnSessionClose(*framework.Session) {}

// The extension points follow the enable flags, and a function registered after the session
// opened replaces the one before it.
func TestPredicateFollowsFlagsAndRegistrations(t *testing.T) {
	off := false
	reg := framework.NewRegistry()
	for _, name := range []string{"a", "b"} {
		p := &predicateOf{name: name}
		reg.RegisterPlugin(name, func(conf.Arguments) (framework.Plugin, error) { return p, nil })
	}
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: "a", EnabledPredicate: &off}}},
		{Plugins: []conf.PluginOption{{Name: "b"}}},
	}}
	ssn := framework.OpenSession(&frameworktest.Cache{Snap: cluster(1, 1)}, cfg, reg, nil)
	task, node := ssn.Jobs["ns/pg"].Tasks["uid-0"], ssn.NodeList[0]
	if s := ssn.Predicate(task, node); s == nil || s.Plugin != "b" || s.Reasons[0] != "b says no" {
		t.Fatalf("Predicate = %+v, want b's refusal (a is disabled)", s)
	}
	ssn.AddPredicateFn("b", func(*api.TaskInfo, *api.NodeInfo) *api.Status { return nil })
	if s := ssn.Predicate(task, node); s != nil {
		t.Errorf("Predicate after b registered anew = %+v, want nil", s)
	}
}

// usageOf registers a queue usage that counts its own amount of CPU, or has no say.
type usageOf struct {
	name     string
	milliCPU float64
	say      bool
}

func (u *usageOf) Name() string { return u.name }
func (u *usageOf) OnSessionOpen(ssn *framework.Session) {
	ssn.AddQueueUsageFn(u.name, func(_ *api.TaskInfo, total *api.Resource) bool {
		if u.say {
			total.MilliCPU += u.milliCPU
		}
		return u.say
	})
}
func (u *usageOf) OnSessionClose(*framework.Session) {}

// Queue usage goes through a chain like every other point: the first plugin in tier order
// with a say decides, and with no say the request counts.
func TestQueueUsageFollowsTiers(t *testing.T) {
	cases := []struct {
		name  string
		tiers [][]*usageOf
		want  float64
	}{
		{"no plugin: the request", nil, 1000},
		{"first tier decides", [][]*usageOf{{{name: "a", milliCPU: 1, say: true}}, {{name: "b", milliCPU: 2, say: true}}}, 1},
		{"no say passes on", [][]*usageOf{{{name: "a", milliCPU: 1}}, {{name: "b", milliCPU: 2, say: true}}}, 2},
		{"order within a tier", [][]*usageOf{{{name: "b", milliCPU: 2, say: true}, {name: "a", milliCPU: 1, say: true}}}, 2},
		{"none has a say: the request", [][]*usageOf{{{name: "a", milliCPU: 1}}}, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: cluster(1, 1)}, allocateOnly, tc.tiers...)
			total := api.EmptyResource()
			ssn.AddQueueUsage(total, ssn.Jobs["ns/pg"].Tasks["uid-0"])
			if total.MilliCPU != tc.want {
				t.Errorf("usage = %v milli-CPU, want %v", total.MilliCPU, tc.want)
			}
		})
	}
}

// running is cluster(nodes, pods) with every pod Running, round robin over the nodes.
func running(nodes, pods int) *api.ClusterInfo {
	ci := cluster(nodes, pods)
	job := ci.Jobs["ns/pg"]
	for i := 0; i < pods; i++ {
		task := job.Tasks[api.TaskID(fmt.Sprintf("uid-%d", i))]
		task.NodeName = ci.NodeList[i%nodes].Name
		job.UpdateTaskStatus(task, api.Running)
		ci.NodeList[i%nodes].AddTask(task)
	}
	return ci
}

// A closed session names, in what it hands back to the cache, every node it placed a task on
// or evicted one on, even where it undid that; the nodes it only looked at are not named.
func TestCloseSessionNamesTheNodesTouched(t *testing.T) {
	snap := running(4, 2)
	pending := st.MakePod().Namespace("ns").UID("uid-new").Name("pg-w-new").Group("pg").Container(st.Resources("1", "")).Obj()
	snap.Jobs["ns/pg"].AddTask(api.NewTaskInfo(pending))
	snap.Generation = 7
	cache := &frameworktest.Cache{Snap: snap, OnEvict: func(*api.TaskInfo, string) error { return nil }}
	ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{&counter{}})
	job := ssn.Jobs["ns/pg"]
	discarded := ssn.NewStatement()
	if err := discarded.Allocate(job.Tasks["uid-new"], ssn.Nodes["n2"]); err != nil {
		t.Fatal(err)
	}
	discarded.Discard()
	evicted := ssn.NewStatement()
	if err := evicted.Evict(job.Tasks["uid-1"], "preempted"); err != nil { // on n1
		t.Fatal(err)
	}
	evicted.Commit()
	framework.CloseSession(ssn)
	r := cache.Released
	if r == nil || r.Generation != 7 || len(r.Nodes) != 4 || len(r.Jobs) != 1 {
		t.Fatalf("handed back %+v, want generation 7, 4 nodes and 1 job", r)
	}
	if want := map[string]struct{}{"n1": {}, "n2": {}}; !reflect.DeepEqual(r.Touched, want) {
		t.Errorf("touched %v, want n1 (an eviction) and n2 (a placement discarded)", r.Touched)
	}
}

// A session's end functions run once when it ends, whether it is closed or abandoned (a
// stop), before its jobs go back to the cache; a placement still in the session is there to
// be seen.
func TestEndFunctionsRunOnceWhicheverWayTheSessionEnds(t *testing.T) {
	for name, end := range map[string]func(*framework.Session){"closed": framework.CloseSession, "abandoned": framework.AbandonSession} {
		t.Run(name, func(t *testing.T) {
			cache := &frameworktest.Cache{Snap: cluster(1, 2)}
			ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{&counter{}})
			task := ssn.Jobs["ns/pg"].Tasks["uid-0"]
			if err := ssn.NewStatement().Allocate(task, ssn.Nodes["n0"]); err != nil {
				t.Fatal(err)
			}
			var seen []string
			ssn.AddEndFn(func() {
				if cache.Released != nil {
					t.Error("the end function ran after the jobs went back to the cache")
				}
				seen = append(seen, task.Status.String())
			})
			end(ssn)
			if len(seen) != 1 || seen[0] != api.Allocated.String() || cache.Released == nil {
				t.Errorf("end functions saw %v, released %v; want one call seeing the task Allocated, then the release", seen, cache.Released != nil)
			}
			framework.AbandonSession(ssn)
			if len(seen) != 1 {
				t.Errorf("ending the session again ran the end function again: %v", seen)
			}
		})
	}
}

// An eviction counts the victim as Releasing on its node and takes it out of the handlers'
// accounts; Discard gives it back exactly, and nothing reaches the cache.
func TestDiscardRestoresEvictionExactly(t *testing.T) {
	var evicted []string
	cache := &frameworktest.Cache{Snap: running(2, 3), OnEvict: func(t *api.TaskInfo, _ string) error {
		evicted = append(evicted, t.Name)
		return nil
	}}
	before := running(2, 3)
	cnt := &counter{placed: 3}
	ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{cnt})
	job := ssn.Jobs["ns/pg"]
	stmt := ssn.NewStatement()
	for _, uid := range []api.TaskID{"uid-0", "uid-2"} {
		if err := stmt.Evict(job.Tasks[uid], "preempted"); err != nil {
			t.Fatal(err)
		}
	}
	n0 := ssn.Nodes["n0"]
	if job.TaskCount(api.Releasing) != 2 || n0.Releasing.MilliCPU != 2000 || n0.Idle.MilliCPU != 2000 || cnt.placed != 1 {
		t.Fatalf("after two evictions: releasing tasks %d, n0 releasing %v idle %v, handlers count %d",
			job.TaskCount(api.Releasing), n0.Releasing.MilliCPU, n0.Idle.MilliCPU, cnt.placed)
	}
	if err := stmt.Evict(job.Tasks["uid-0"], "twice"); err == nil {
		t.Errorf("a Releasing task was evicted again")
	}
	stmt.Discard()
	after := &api.ClusterInfo{Jobs: ssn.Jobs, Nodes: ssn.Nodes, Queues: ssn.Queues, NodeList: ssn.NodeList}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("Discard did not restore the session: %s", cmp.Diff(before, after))
	}
	if cnt.placed != 3 {
		t.Errorf("event handlers not undone: %d", cnt.placed)
	}
	if len(evicted) != 0 {
		t.Errorf("a discarded statement reached the evictor: %v", evicted)
	}
}

// Unevict gives back one eviction out of turn: the session is as if only the others had been
// made (Discard then restores it exactly), and Commit sends only those.
func TestUnevictGivesBackOneVictim(t *testing.T) {
	for _, commit := range []bool{false, true} {
		var evicted []string
		cache := &frameworktest.Cache{Snap: running(2, 3), OnEvict: func(t *api.TaskInfo, _ string) error {
			evicted = append(evicted, t.Name)
			return nil
		}}
		cnt := &counter{placed: 3}
		ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{cnt})
		job := ssn.Jobs["ns/pg"]
		stmt := ssn.NewStatement()
		for _, uid := range []api.TaskID{"uid-0", "uid-2"} {
			if err := stmt.Evict(job.Tasks[uid], "preempted"); err != nil {
				t.Fatal(err)
			}
		}
		if !stmt.Unevict(job.Tasks["uid-0"]) || stmt.Unevict(job.Tasks["uid-0"]) || stmt.Unevict(job.Tasks["uid-1"]) {
			t.Fatal("Unevict must report exactly the statement's own evictions, once")
		}
		n0 := ssn.Nodes["n0"]
		if job.Tasks["uid-0"].Status != api.Running || job.TaskCount(api.Releasing) != 1 || n0.Releasing.MilliCPU != 1000 || cnt.placed != 2 {
			t.Fatalf("after giving back uid-0: %v, releasing tasks %d, n0 releasing %v, handlers count %d",
				job.Tasks["uid-0"].Status, job.TaskCount(api.Releasing), n0.Releasing.MilliCPU, cnt.placed)
		}
		if commit {
			stmt.Commit()
			if !reflect.DeepEqual(evicted, []string{"pg-w-2"}) {
				t.Errorf("evicted %v, want [pg-w-2]", evicted)
			}
			continue
		}
		stmt.Discard()
		after := &api.ClusterInfo{Jobs: ssn.Jobs, Nodes: ssn.Nodes, Queues: ssn.Queues, NodeList: ssn.NodeList}
		if before := running(2, 3); !reflect.DeepEqual(after, before) {
			t.Errorf("Discard did not restore the session: %s", cmp.Diff(before, after))
		}
		if cnt.placed != 3 {
			t.Errorf("event handlers not undone: %d", cnt.placed)
		}
	}
}

// Commit sends evictions with their reasons; one the cache refuses is undone in the session.
func TestCommitEvicts(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		var evicted []string
		cache := &frameworktest.Cache{Snap: running(1, 2), OnEvict: func(t *api.TaskInfo, reason string) error {
			if refuse {
				return errors.New("the pod is gone")
			}
			evicted = append(evicted, t.Name+": "+reason)
			return nil
		}}
		ssn := frameworktest.OpenTiers(cache, allocateOnly, []framework.Plugin{&counter{}})
		victim := ssn.Jobs["ns/pg"].Tasks["uid-1"]
		stmt := ssn.NewStatement()
		if err := stmt.Evict(victim, "reclaimed by queue q2"); err != nil {
			t.Fatal(err)
		}
		stmt.Commit()
		if refuse {
			if victim.Status != api.Running || ssn.NodeList[0].Releasing.MilliCPU != 0 {
				t.Errorf("refused eviction not undone: %v, releasing %v", victim.Status, ssn.NodeList[0].Releasing.MilliCPU)
			}
			continue
		}
		if !reflect.DeepEqual(evicted, []string{"pg-w-1: reclaimed by queue q2"}) || victim.Status != api.Releasing {
			t.Errorf("evicted %v, victim %v", evicted, victim.Status)
		}
	}
}

// devOwner owns example.com/dev, placing it with "dev.on": true.
type devOwner struct{}

func (devOwner) OwnedResources() []corev1.ResourceName {
	return []corev1.ResourceName{"example.com/dev"}
}
func (devOwner) PlacesWith(args conf.Arguments) bool {
	on := false
	return args.GetBool(&on, "dev.on") == nil && on
}

// A pod requesting a resource only a plugin can place is refused before any pre-predicate,
// naming that plugin, while the configuration does not turn the plugin on (absent, or with
// arguments under which it places nothing); other pods pass, and a configuration that turns
// it on refuses nothing.
func TestUnplacedResourcesAreRefused(t *testing.T) {
	reg := framework.NewRegistry()
	reg.Register("dev", framework.PluginSpec{Build: func(conf.Arguments) (framework.Plugin, error) { return &counter{}, nil }, Owns: devOwner{}})
	reg.RegisterPlugin("other", func(conf.Arguments) (framework.Plugin, error) { return &counter{}, nil })
	pods := []*corev1.Pod{st.Pod("dev-pod", "1", "").Group("pg").Container(st.Resources("", "", "example.com/dev", "1")).Obj(),
		st.Pod("cpu-pod", "1", "").Group("pg").Obj()}
	snap := frameworktest.ClusterOf(nil, frameworktest.JobOf(st.MakePodGroup().Namespace("ns").Name("pg").Obj(), pods...))
	const refusal = "pod ns/dev-pod requests example.com/dev, which only the dev plugin places, and the scheduler configuration in force does not turn it on"
	for _, tt := range []struct {
		name   string
		tier   []conf.PluginOption
		places bool
	}{
		{"absent", []conf.PluginOption{{Name: "other"}}, false},
		{"turned off", []conf.PluginOption{{Name: "dev", Arguments: conf.Arguments{"dev.on": false}}}, false},
		{"turned on", []conf.PluginOption{{Name: "other"}, {Name: "dev", Arguments: conf.Arguments{"dev.on": true}}}, true},
	} {
		cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: tt.tier}}}
		if got := reg.Places(cfg, "dev"); got != tt.places {
			t.Errorf("%s: Places = %v, want %v", tt.name, got, tt.places)
		}
		ssn := framework.OpenSession(&frameworktest.Cache{Snap: snap}, cfg, reg, nil)
		job := ssn.Jobs["ns/pg"]
		err := ssn.PrePredicate(job.Tasks["uid-dev-pod"])
		if tt.places && err != nil || !tt.places && (err == nil || err.Error() != refusal) {
			t.Errorf("%s: the dev pod's PrePredicate = %v", tt.name, err)
		}
		if err := ssn.PrePredicate(job.Tasks["uid-cpu-pod"]); err != nil {
			t.Errorf("%s: the cpu pod's PrePredicate = %v", tt.name, err)
		}
	}
}
