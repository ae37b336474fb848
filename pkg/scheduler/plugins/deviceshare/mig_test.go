package deviceshare

import (
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// a100x40 is a GPU type the shipped MIG geometries list: group1 1g.5gb x7; group2 2g.10gb x3
// then 1g.5gb x1; group3 3g.20gb x2; group4 7g.40gb x1.
const a100x40 = "NVIDIA-NVIDIA A100-SXM4-40GB"

// migGPU is an A100-40GB in mig mode with split slots.
func migGPU(split int32) gpuSpec {
	return gpuSpec{split: split, memory: 40960, typ: a100x40, mode: vgpu.ModeMIG}
}

// migDev renders one assigned vGPU on MIG instance group-position of test GPU i.
func migDev(i int, group string, position int, memory, cores string) string {
	return uuid(i) + "[" + group + "-" + strconv.Itoa(position) + "],NVIDIA," + memory + "," + cores + ":"
}

// place checks the pod against the node and, when it fits, books it: the assignment, or
// the constraint the node refuses it with.
func place(t *testing.T, p *plugin, n *api.NodeInfo, pd *corev1.Pod) (string, constraint) {
	t.Helper()
	task := api.NewTaskInfo(pd)
	if status := p.predicate(task, n); status != nil {
		for c, s := range p.verdicts.constraints {
			if s == status {
				return "", constraint(c)
			}
		}
		t.Fatalf("predicate: %v", status.Reasons)
	}
	task.Status = api.Allocated
	e := &framework.Event{Task: task, Node: n}
	if p.allocate(e); e.Err != nil {
		t.Fatalf("allocate after the predicate passed: %v", e.Err)
	}
	return task.BindAnnotations[vgpu.AssignedDevicesAnnotation], fits
}

func TestMIGFit(t *testing.T) {
	one := func(memory int) *corev1.Pod { return pod("new", "pg", vgpuCtr("main", 1, memory, 0)) }
	a100 := gpuNode("n1", 0, []gpuSpec{migGPU(10)})
	mixed := gpuNode("n1", 0, []gpuSpec{gpus(1, 10, 30000, h200)[0], migGPU(10)})
	group1Full := make([]*corev1.Pod, 7)
	for i := range group1Full {
		group1Full[i] = using("g"+strconv.Itoa(i), "x", migDev(0, "group1", i, "5120", "0"))
	}
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		onNode     []*corev1.Pod
		pod        *corev1.Pod
		want       string
		wantReason constraint
	}{
		{name: "3000 MiB: the first group's 1g.5gb, booking the instance's memory", node: a100,
			pod: one(3000), want: migDev(0, "group1", 0, "5120", "0")},
		{name: "12000 MiB: no instance in group1 or group2 is large enough, group3's 3g.20gb is", node: a100,
			pod: one(12000), want: migDev(0, "group3", 0, "20480", "0")},
		{name: "40960 MiB: the whole GPU", node: a100, pod: one(40960), want: migDev(0, "group4", 0, "40960", "0")},
		{name: "cores are booked as requested", node: a100,
			pod: pod("new", "pg", vgpuCtr("main", 1, 3000, 30)), want: migDev(0, "group1", 0, "5120", "30")},
		{name: "the next free position of the smallest fitting profile", node: a100,
			onNode: []*corev1.Pod{using("a", "x", migDev(0, "group1", 0, "5120", "0")), using("b", "x", migDev(0, "group1", 2, "5120", "0"))},
			pod:    one(3000), want: migDev(0, "group1", 1, "5120", "0")},
		{name: "group2 in use: its 1g.5gb, listed last, is position 3 and tried first", node: a100,
			onNode: []*corev1.Pod{using("a", "x", migDev(0, "group2", 0, "10240", "0"))},
			pod:    one(3000), want: migDev(0, "group2", 3, "5120", "0")},
		{name: "group2 in use, its 1g.5gb held: a 2g.10gb", node: a100,
			onNode: []*corev1.Pod{using("a", "x", migDev(0, "group2", 3, "5120", "0"))},
			pod:    one(3000), want: migDev(0, "group2", 0, "10240", "0")},
		{name: "group2 in use: no other group is offered", node: a100,
			onNode: []*corev1.Pod{using("a", "x", migDev(0, "group2", 3, "5120", "0"))},
			pod:    one(12000), wantReason: noMIGInstance},
		{name: "every instance of the group in use held", node: a100, onNode: group1Full,
			pod: one(3000), wantReason: noMIGInstance},
		{name: "split slots still count", node: gpuNode("n1", 0, []gpuSpec{migGPU(1)}),
			onNode: []*corev1.Pod{using("a", "x", migDev(0, "group1", 0, "5120", "0"))},
			pod:    one(3000), wantReason: noFreeSlot},
		{name: "a vGPU without a known instance keeps the GPU's partition unknown", node: a100,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "3000", "0"))},
			pod:    one(3000), wantReason: migUnknownHolder},
		{name: "an instance of a group the geometry does not list", node: a100,
			onNode: []*corev1.Pod{using("a", "x", migDev(0, "group9", 0, "5120", "0"))},
			pod:    one(3000), wantReason: migUnknownHolder},
		{name: "a GPU type without MIG geometry", node: gpuNode("n1", 0, []gpuSpec{{split: 10, memory: 71885, typ: h200, mode: vgpu.ModeMIG}}),
			pod: one(3000), wantReason: migGeometryUnknown},
		{name: "containers of one pod take distinct instances", node: a100,
			pod:  pod("new", "pg", vgpuCtr("a", 1, 3000, 0), vgpuCtr("b", 1, 3000, 0)),
			want: migDev(0, "group1", 0, "5120", "0") + ";" + migDev(0, "group1", 1, "5120", "0")},
		{name: "a later container stays in the group an earlier one chose", node: a100,
			pod:  pod("new", "pg", vgpuCtr("a", 1, 12000, 0), vgpuCtr("b", 1, 3000, 0)),
			want: migDev(0, "group3", 0, "20480", "0") + ";" + migDev(0, "group3", 1, "20480", "0")},
		{name: "vgpu-mode mig: the MIG GPU", node: mixed,
			pod: annotated(one(3000), vgpu.ModeAnnotation, vgpu.ModeMIG), want: migDev(1, "group1", 0, "5120", "0")},
		{name: "vgpu-mode hami-core: the hami-core GPU", node: mixed,
			pod: annotated(one(3000), vgpu.ModeAnnotation, vgpu.ModeHAMiCore), want: dev(0, "3000", "0")},
		{name: "vgpu-mode mig on hami-core GPUs", node: gpuNode("n1", 0, gpus(2, 10, 30000, h200)),
			pod: annotated(one(3000), vgpu.ModeAnnotation, vgpu.ModeMIG), wantReason: modeNotWanted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policyPlugin(t, PolicyBinpack, 1)
			got, reason := place(t, p, nodeInfo(tc.node, tc.onNode...), tc.pod)
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got %q (reason %d)\nwant %q (reason %d)", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

// TestMIGGroupFreed: a group stays in use while any of its instances is held and no longer;
// undoing placements frees exactly their instances.
func TestMIGGroupFreed(t *testing.T) {
	p := policyPlugin(t, PolicyBinpack, 1)
	n := nodeInfo(gpuNode("n1", 0, []gpuSpec{migGPU(10)}))
	l := ledgerOf(n)
	empty := l.Clone()
	big := api.NewTaskInfo(pod("big", "pg", vgpuCtr("c", 1, 12000, 0)))
	small := api.NewTaskInfo(pod("small", "pg", vgpuCtr("c", 1, 3000, 0)))
	for _, task := range []*api.TaskInfo{big, small} {
		task.Status = api.Allocated
		e := &framework.Event{Task: task, Node: n}
		if p.allocate(e); e.Err != nil {
			t.Fatalf("allocate %s: %v", task.Name, e.Err)
		}
	}
	if got, want := small.BindAnnotations[vgpu.AssignedDevicesAnnotation], migDev(0, "group3", 1, "20480", "0"); got != want {
		t.Errorf("beside group3's first instance: %s, want %s", got, want)
	}
	held := l.Clone()
	p.deallocate(&framework.Event{Task: small, Node: n})
	if got, want := l.gpus[0].used, (usage{devices: 1, memory: 20480, mig: migInstances{group: 2, held: 1}}); got != want {
		t.Errorf("after undoing one: %+v, want %+v", got, want)
	}
	if got, _ := place(t, p, n, pod("next", "pg", vgpuCtr("c", 1, 3000, 0))); got != migDev(0, "group3", 1, "20480", "0") {
		t.Errorf("group3 still in use, got %s", got)
	}
	p.deallocate(&framework.Event{Task: big, Node: n})
	if got := held.(*ledger).gpus[0].used; got.devices != 2 || got.mig.held != 3 {
		t.Errorf("a clone shares the MIG instances: %+v", got)
	}
	for uid := range p.placed {
		p.deallocate(&framework.Event{Task: &api.TaskInfo{UID: uid}, Node: n})
	}
	if !reflect.DeepEqual(l, empty) {
		t.Fatalf("every placement undone: %+v, want %+v", l.gpus[0].used, empty.(*ledger).gpus[0].used)
	}
	if got, _ := place(t, p, n, pod("again", "pg", vgpuCtr("c", 1, 3000, 0))); got != migDev(0, "group1", 0, "5120", "0") {
		t.Errorf("all freed: another group may be chosen, got %s", got)
	}
}

// TestMIGStatement: the Binding carries the MIG assignment, Discard restores the session's
// ledger exactly, and the cache's ledger never sees the placement.
func TestMIGStatement(t *testing.T) {
	cacheNode := nodeInfo(gpuNode("n1", 0, []gpuSpec{migGPU(10)}), using("old", "x", migDev(0, "group2", 3, "5120", "0")))
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{cacheNode.Clone()}, 1,
		pod("w-0", "pg", vgpuCtr("main", 1, 3000, 0), vgpuCtr("helper", 1, 8000, 20)))}
	ssn := openDeviceSession(cache)
	node := ssn.Nodes["n1"]
	before := ledgerOf(node).Clone()
	w0 := taskOf(t, ssn, "w-0")
	want := migDev(0, "group2", 0, "10240", "0") + ";" + migDev(0, "group2", 1, "10240", "20")

	stmt := ssn.NewStatement()
	if err := stmt.Allocate(w0, node); err != nil {
		t.Fatal(err)
	}
	if got := w0.BindAnnotations[vgpu.AssignedDevicesAnnotation]; got != want {
		t.Errorf("assignment\n got %s\nwant %s", got, want)
	}
	if got := ledgerOf(cacheNode).gpus[0].used; got.devices != 1 || got.mig.held != 1<<3 {
		t.Errorf("the session's placement reached the cache's ledger: %+v", got)
	}
	stmt.Discard()
	if !reflect.DeepEqual(ledgerOf(node), before) {
		t.Errorf("Discard left %+v, want %+v", ledgerOf(node).gpus[0].used, before.(*ledger).gpus[0].used)
	}

	stmt = ssn.NewStatement()
	if err := stmt.Allocate(w0, node); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()
	if len(cache.Bound) != 1 || cache.Bound[0].BindAnnotations[vgpu.AssignedDevicesAnnotation] != want ||
		cache.Bound[0].BindAnnotations[vgpu.DevicesToAllocateAnnotation] != want {
		t.Errorf("bound %v, want the assignment %s", cache.Bound, want)
	}
}

// TestMIGRestart: a scheduler deriving the node from its pods' MIG assignments holds their
// instances and their group, so it never gives an instance twice.
func TestMIGRestart(t *testing.T) {
	node := gpuNode("n1", 0, []gpuSpec{migGPU(10), migGPU(10)})
	n := nodeInfo(node,
		using("a", "x", migDev(0, "group2", 0, "10240", "0")),
		using("b", "x", migDev(0, "group2", 3, "5120", "10")+migDev(1, "group1", 0, "5120", "0")))
	l := ledgerOf(n)
	if got, want := usageOf(l), "0:2/15360/10 1:1/5120/0"; got != want {
		t.Errorf("derived %s, want %s", got, want)
	}
	if got, want := l.gpus[0].used.mig, (migInstances{group: 1, held: 1<<0 | 1<<3}); got != want {
		t.Errorf("GPU 0 instances %+v, want %+v", got, want)
	}
	p := policyPlugin(t, "", 1)
	got, _ := place(t, p, n, pod("new", "pg", vgpuCtr("c", 1, 3000, 0)))
	if want := migDev(0, "group2", 1, "10240", "0"); got != want {
		t.Errorf("after a restart: %s, want %s", got, want)
	}

	// Two pods claiming one instance: the ledger holds it once and keeps new vGPUs off.
	twice := nodeInfo(node, using("a", "x", migDev(0, "group1", 0, "5120", "0")), using("b", "x", migDev(0, "group1", 0, "5120", "0")))
	if got, reason := place(t, p, twice, pod("new", "pg", vgpuCtr("c", 1, 3000, 0))); got != migDev(1, "group1", 0, "5120", "0") || reason != fits {
		t.Errorf("beside a doubly claimed instance: %q (reason %d), want the other GPU", got, reason)
	}
}

// TestMIGModeInShape: pods that pin different modes do not share a node's fit memo.
func TestMIGModeInShape(t *testing.T) {
	p := policyPlugin(t, PolicyBinpack, 1)
	n := nodeInfo(gpuNode("n1", 0, []gpuSpec{migGPU(10)}))
	mig := api.NewTaskInfo(annotated(pod("mig", "pg", vgpuCtr("c", 1, 3000, 0)), vgpu.ModeAnnotation, vgpu.ModeMIG))
	hami := api.NewTaskInfo(annotated(pod("hami", "pg", vgpuCtr("c", 1, 3000, 0)), vgpu.ModeAnnotation, vgpu.ModeHAMiCore))
	if s := p.predicate(mig, n); s != nil {
		t.Fatalf("mig pod refused: %v", s.Reasons)
	}
	if s, want := p.predicate(hami, n), p.verdicts.constraints[modeNotWanted]; s != want {
		t.Errorf("hami-core pod: %v, want %v", s, want.Reasons)
	}
}
