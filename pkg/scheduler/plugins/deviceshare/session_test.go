package deviceshare

import (
	"math"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// fixedClock is the time placements are stamped with in the tests.
var fixedClock = time.Unix(1778317876, 0)

// snapshot is a cluster of the nodes (with their ledgers) and one PodGroup "pg" in queue
// "default" holding the pods, as the cache would hand it to a session.
func snapshot(nodes []*api.NodeInfo, minMember int32, pods ...*corev1.Pod) *api.ClusterInfo {
	ci := frameworktest.ClusterOf(nodes, frameworktest.JobOf(st.MakePodGroup().Namespace(testNS).Name("pg").MinMember(minMember).
		Queue("default").Phase(schedulingv1beta1.PodGroupInqueue).Obj(), pods...))
	ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
	return ci
}

// registry has the real deviceshare plugin (with its clock fixed) and the given others.
func registry(others map[string]framework.PluginBuilder) *framework.Registry {
	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, func(args conf.Arguments) (framework.Plugin, error) {
		fp, err := newPlugin(args)
		if err == nil {
			fp.(*plugin).now = func() time.Time { return fixedClock }
		}
		return fp, err
	})
	for name, b := range others {
		reg.RegisterPlugin(name, b)
	}
	return reg
}

// openDeviceSession opens a session with only the deviceshare plugin, vGPU on, binpack.
func openDeviceSession(cache framework.Cache) *framework.Session {
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{
		Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: PolicyBinpack},
	}}}}}
	return framework.OpenSession(cache, cfg, registry(nil), nil)
}

func taskOf(t *testing.T, ssn *framework.Session, name string) *api.TaskInfo {
	t.Helper()
	for _, task := range ssn.Jobs["ns/pg"].Tasks {
		if task.Name == name {
			return task
		}
	}
	t.Fatalf("no task %s", name)
	return nil
}

// TestStatementAnnotationsAndDiscard: a placement books its vGPUs in the session's ledger
// only and sets the assignment in the task's BindAnnotations; Discard restores ledgers and
// tasks exactly; Commit hands the binder the assignment.
func TestStatementAnnotationsAndDiscard(t *testing.T) {
	cacheNode := nodeInfo(gpuNode("n1", 0, gpus(2, 10, 30000, h200)), using("old", "x", dev(1, "2000", "0")))
	cacheLedger := ledgerOf(cacheNode)
	cacheUsage := usageOf(cacheLedger)
	// The cache's snapshot clones the node, its ledger with it.
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{cacheNode.Clone()}, 2,
		pod("w-0", "pg", vgpuCtr("main", 1, 1000, 30)),
		pod("w-1", "pg", vgpuCtr("main", 1, 3000, 0), ctr("sidecar", "cpu=1"), vgpuCtr("helper", 2, 500, 0)),
	)}
	ssn := openDeviceSession(cache)
	node := ssn.Nodes["n1"]
	sessionLedger := ledgerOf(node)
	before := sessionLedger.Clone()
	w0, w1 := taskOf(t, ssn, "w-0"), taskOf(t, ssn, "w-1")

	stmt := ssn.NewStatement()
	for _, task := range []*api.TaskInfo{w0, w1} {
		if err := stmt.Allocate(task, node); err != nil {
			t.Fatalf("Allocate %s: %v", task.Name, err)
		}
	}
	wantW0 := map[string]string{
		vgpu.AssignedNodeAnnotation:      "n1",
		vgpu.AssignedTimeAnnotation:      "1778317876",
		vgpu.AssignedDevicesAnnotation:   dev(1, "1000", "30"),
		vgpu.DevicesToAllocateAnnotation: dev(1, "1000", "30"),
		vgpu.BindPhaseAnnotation:         "allocating",
		vgpu.BindTimeAnnotation:          "1778317876",
	}
	if !reflect.DeepEqual(w0.BindAnnotations, wantW0) {
		t.Errorf("w-0 annotations\n got %v\nwant %v", w0.BindAnnotations, wantW0)
	}
	wantW1 := dev(1, "3000", "0") + ";" + dev(1, "500", "0") + dev(0, "500", "0")
	if got := w1.BindAnnotations[vgpu.AssignedDevicesAnnotation]; got != wantW1 {
		t.Errorf("w-1 assignment\n got %s\nwant %s", got, wantW1)
	}
	if got, want := usageOf(sessionLedger), "0:1/500/0 1:4/6500/30"; got != want {
		t.Errorf("session ledger %s, want %s", got, want)
	}
	if got := usageOf(cacheLedger); got != cacheUsage {
		t.Errorf("the session's placements reached the cache's ledger: %s, was %s", got, cacheUsage)
	}

	stmt.Discard()
	if !reflect.DeepEqual(sessionLedger, before) {
		t.Errorf("Discard left the ledger %s, want %s", usageOf(sessionLedger), usageOf(before.(*ledger)))
	}
	if w0.BindAnnotations != nil || w1.BindAnnotations != nil {
		t.Errorf("Discard left annotations %v, %v", w0.BindAnnotations, w1.BindAnnotations)
	}

	stmt = ssn.NewStatement()
	for _, task := range []*api.TaskInfo{w0, w1} {
		if err := stmt.Allocate(task, node); err != nil {
			t.Fatalf("Allocate %s again: %v", task.Name, err)
		}
	}
	stmt.Commit()
	if len(cache.Bound) != 2 {
		t.Fatalf("bound %d tasks, want 2", len(cache.Bound))
	}
	for _, b := range cache.Bound {
		if b.Name == "w-0" && !reflect.DeepEqual(b.BindAnnotations, wantW0) {
			t.Errorf("w-0 bound with %v, want %v", b.BindAnnotations, wantW0)
		}
		if b.Name == "w-1" && b.BindAnnotations[vgpu.AssignedDevicesAnnotation] != wantW1 {
			t.Errorf("w-1 bound with %v", b.BindAnnotations)
		}
	}
}

// TestPipelinedBooksNothing: a task only pipelined onto a node is not bound in the session,
// so it books no vGPU and gets no assignment.
func TestPipelinedBooksNothing(t *testing.T) {
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{nodeInfo(gpuNode("n1", 0, gpus(1, 10, 30000, h200)))}, 1,
		pod("w-0", "pg", vgpuCtr("main", 1, 1000, 0)))}
	ssn := openDeviceSession(cache)
	task := taskOf(t, ssn, "w-0")
	if err := ssn.NewStatement().Pipeline(task, ssn.Nodes["n1"]); err != nil {
		t.Fatal(err)
	}
	if got := usageOf(ledgerOf(ssn.Nodes["n1"])); got != "0:0/0/0" || task.BindAnnotations != nil {
		t.Errorf("pipelined task booked %s with annotations %v", got, task.BindAnnotations)
	}
}

// TestChecksDoNotAllocate: checking a node (predicate and score) allocates nothing, for a pod
// that wants no GPU and for one that does, on a node with GPUs and one without.
func TestChecksDoNotAllocate(t *testing.T) {
	gpuNodeInfo := nodeInfo(gpuNode("n1", 0, gpus(8, 10, 81920, h200)), using("a", "x", dev(3, "4000", "30")))
	plain := api.NewNodeInfo(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-only"}})
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"no GPU wanted", pod("p", "pg", ctr("c", "cpu=1"))},
		{"one vGPU", pod("p", "pg", vgpuCtr("c", 1, 4000, 20))},
		{"two containers, filters and group spread", annotated(pod("p", "pg", vgpuCtr("a", 2, 4000, 0), vgpuCtr("b", 1, 1000, 0)),
			vgpu.UseGPUTypeAnnotation, "H200", vgpu.NoUseGPUUUIDAnnotation, uuid(0), vgpu.PodGroupPolicyAnnotation, vgpu.PodGroupPolicySpread)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policyPlugin(t, PolicyBinpack, 1)
			task := api.NewTaskInfo(tc.pod)
			if err := p.prePredicate(task); err != nil {
				t.Fatal(err)
			}
			// The count is process-wide: goroutines other tests left winding down (informers)
			// can add to one measurement, never take away, so the least of a few is the checks'.
			allocs := math.MaxFloat64
			for range 5 {
				allocs = min(allocs, testing.AllocsPerRun(100, func() {
					p.predicate(task, gpuNodeInfo)
					p.predicate(task, plain)
					_, _ = p.nodeOrder(task, gpuNodeInfo)
				}))
			}
			if allocs != 0 {
				t.Errorf("%v allocations per check", allocs)
			}
		})
	}
}

// TestDisabled: without deviceshare.VGPUEnable the plugin registers nothing, as upstream.
func TestDisabled(t *testing.T) {
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{nodeInfo(gpuNode("n1", 0, gpus(1, 10, 30000, h200)))}, 1,
		pod("w-0", "pg", vgpuCtr("main", 1, 99999, 0)))}
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName}}}}}
	ssn := framework.OpenSession(cache, cfg, registry(nil), nil)
	task := taskOf(t, ssn, "w-0")
	if s := ssn.Predicate(task, ssn.Nodes["n1"]); s != nil {
		t.Errorf("disabled plugin refused the node: %v", s.Reasons)
	}
	if ssn.HasNodeOrder() {
		t.Errorf("disabled plugin scores nodes")
	}
}

// A node's ledger that one session left as it found it may be handed to the next session
// (the cache's snapshot reuses it, after Reuse): the memo of how a request shape fitted there
// must not answer for the next session's requests, whose shapes are numbered afresh.
func TestReusedLedgerForgetsTheLastSessionsFit(t *testing.T) {
	node := nodeInfo(gpuNode("n1", 0, gpus(1, 10, 30000, h200)), using("old", "x", dev(0, "20000", "0")))
	ask := func(name string, memory int) *api.ClusterInfo {
		return snapshot([]*api.NodeInfo{node}, 1, pod(name, "pg", vgpuCtr("main", 1, memory, 0)))
	}
	fits := func(ci *api.ClusterInfo, name string) bool {
		ssn := openDeviceSession(&frameworktest.Cache{Snap: ci})
		defer framework.CloseSession(ssn)
		return ssn.Predicate(taskOf(t, ssn, name), node) == nil
	}
	if !fits(ask("small", 5000), "small") {
		t.Fatalf("5,000 MiB does not fit beside 20,000 on a 30,000 MiB GPU")
	}
	ledgerOf(node).Reuse()
	if fits(ask("big", 20000), "big") {
		t.Errorf("20,000 MiB fits beside 20,000 on a 30,000 MiB GPU, the next session reusing the ledger")
	}
}
