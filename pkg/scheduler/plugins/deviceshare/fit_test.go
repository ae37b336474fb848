package deviceshare

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// policyPlugin is an enabled plugin with the given policy and weight, its session open.
func policyPlugin(t testing.TB, policy string, weight int) *plugin {
	t.Helper()
	fp, err := newPlugin(conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: policy, ScheduleWeightArg: weight})
	if err != nil {
		t.Fatal(err)
	}
	p := fp.(*plugin)
	p.open(time.Now())
	return p
}

// using is a pod running on n1 with the assignment.
func using(name, group, assignment string) *corev1.Pod {
	return runningWith(pod(name, group), "n1", assignment)
}

// dev renders one assigned vGPU of test GPU i.
func dev(i int, memory, cores string) string {
	return uuid(i) + ",NVIDIA," + memory + "," + cores + ":"
}

func TestFit(t *testing.T) {
	h200x3 := gpuNode("n1", 0, gpus(3, 10, 30000, h200))
	mixed := gpuNode("n1", 0, []gpuSpec{
		{split: 10, memory: 30000, typ: a100, mode: vgpu.ModeHAMiCore},
		{split: 10, memory: 30000, typ: h200, mode: vgpu.ModeHAMiCore},
		{split: 10, memory: 30000, typ: h200, mode: vgpu.ModeHAMiCore},
	})
	single := func(split int32) *corev1.Node { return gpuNode("n1", 0, gpus(1, split, 30000, h200)) }
	one := func(memory, cores int) *corev1.Pod { return pod("new", "pg", vgpuCtr("main", 1, memory, cores)) }
	for _, tc := range []struct {
		name   string
		policy string
		node   *corev1.Node
		onNode []*corev1.Pod
		pod    *corev1.Pod
		// want is the assignment; empty when the node must refuse the pod with wantReason.
		want       string
		wantReason constraint
	}{
		{name: "no policy: the first GPU that fits", node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "29500", "0"))},
			pod:    one(1000, 0), want: dev(1, "1000", "0")},
		{name: "binpack: the GPU with the most memory booked", policy: PolicyBinpack, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "3000", "0")), using("b", "x", dev(1, "10000", "0"))},
			pod:    one(1000, 0), want: dev(1, "1000", "0")},
		{name: "binpack: among equal memory, the GPU with more vGPUs", policy: PolicyBinpack, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(1, "4000", "0")), using("b", "x", dev(2, "2000", "0")), using("c", "x", dev(2, "2000", "0"))},
			pod:    one(1000, 0), want: dev(2, "1000", "0")},
		{name: "spread: the GPU with the fewest vGPUs, then the least memory", policy: PolicySpread, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "100", "0")), using("b", "x", dev(0, "100", "0")),
				using("c", "x", dev(1, "5000", "0")), using("d", "x", dev(2, "2000", "0"))},
			pod: one(1000, 0), want: dev(2, "1000", "0")},
		{name: "spread: an idle GPU before one holding a pod", policy: PolicySpread, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "100", "0")), using("b", "x", dev(1, "100", "0"))},
			pod:    one(1000, 0), want: dev(2, "1000", "0")},
		{name: "use-gputype matches part of the type, ignoring case", node: mixed,
			pod:  annotated(one(1000, 0), vgpu.UseGPUTypeAnnotation, " h200 "),
			want: dev(1, "1000", "0")},
		{name: "nouse-gputype keeps the pod off a type", node: mixed,
			pod:  annotated(one(1000, 0), vgpu.NoUseGPUTypeAnnotation, "A100,V100"),
			want: dev(1, "1000", "0")},
		{name: "use-gputype makes nouse-gputype moot", node: mixed,
			pod:  annotated(one(1000, 0), vgpu.UseGPUTypeAnnotation, "A100", vgpu.NoUseGPUTypeAnnotation, "A100"),
			want: dev(0, "1000", "0")},
		{name: "no GPU of the wanted type", node: mixed,
			pod: annotated(one(1000, 0), vgpu.UseGPUTypeAnnotation, "H100"), wantReason: typeNotWanted},
		{name: "every type avoided", node: h200x3,
			pod: annotated(one(1000, 0), vgpu.NoUseGPUTypeAnnotation, "h200"), wantReason: typeAvoided},
		{name: "use-gpuuuid picks the GPU", node: h200x3,
			pod:  annotated(one(1000, 0), vgpu.UseGPUUUIDAnnotation, uuid(2)),
			want: dev(2, "1000", "0")},
		{name: "nouse-gpuuuid wins over use-gpuuuid", node: h200x3,
			pod:  annotated(one(1000, 0), vgpu.UseGPUUUIDAnnotation, uuid(0)+","+uuid(1), vgpu.NoUseGPUUUIDAnnotation, uuid(0)),
			want: dev(1, "1000", "0")},
		{name: "no wanted UUID on the node", node: h200x3,
			pod: annotated(one(1000, 0), vgpu.UseGPUUUIDAnnotation, uuid(9)), wantReason: uuidNotWanted},
		{name: "every UUID avoided", node: single(10),
			pod: annotated(one(1000, 0), vgpu.NoUseGPUUUIDAnnotation, uuid(0)), wantReason: uuidAvoided},
		{name: "two GPUs of one container land on distinct cards, fullest first", policy: PolicyBinpack, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(1, "9000", "0")), using("b", "x", dev(2, "5000", "0"))},
			pod:    pod("new", "pg", vgpuCtr("main", 2, 1000, 0)),
			want:   dev(1, "1000", "0") + dev(2, "1000", "0")},
		{name: "as many GPUs as the node has", node: h200x3,
			pod:  pod("new", "pg", vgpuCtr("main", 3, 1000, 0)),
			want: dev(0, "1000", "0") + dev(1, "1000", "0") + dev(2, "1000", "0")},
		{name: "more GPUs than the node has", node: h200x3,
			pod: pod("new", "pg", vgpuCtr("main", 4, 1000, 0)), wantReason: gpuCount},
		{name: "two GPUs wanted, one GPU left with memory", node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "30000", "0")), using("b", "x", dev(1, "29500", "0"))},
			pod:    pod("new", "pg", vgpuCtr("main", 2, 1000, 0)), wantReason: memoryShort},
		{name: "several vGPU containers, a plain one between them; binpack puts them together", policy: PolicyBinpack, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(1, "1000", "0"))},
			pod:    pod("new", "pg", vgpuCtr("first", 1, 1000, 10), ctr("sidecar", "cpu=1"), vgpuCtr("second", 1, 2000, 20)),
			want:   dev(1, "1000", "10") + ";" + dev(1, "2000", "20")},
		{name: "several vGPU containers under spread: a later container sees what an earlier took", policy: PolicySpread, node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "0"))},
			pod:    pod("new", "pg", vgpuCtr("first", 1, 1000, 0), vgpuCtr("second", 1, 1000, 0)),
			want:   dev(1, "1000", "0") + ";" + dev(2, "1000", "0")},
		{name: "several vGPU containers, the second finds no slot", node: single(1),
			pod: pod("new", "pg", vgpuCtr("first", 1, 1000, 0), vgpuCtr("second", 1, 1000, 0)), wantReason: noFreeSlot},
		{name: "a zero count keeps its entry empty", node: h200x3,
			pod:  pod("new", "pg", ctr("off", string(resCount)+"=0"), vgpuCtr("on", 1, 1000, 0)),
			want: ";" + dev(0, "1000", "0")},
		{name: "cores 100 takes a GPU nobody uses", node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "0"))},
			pod:    one(1000, 100), want: dev(1, "1000", "100")},
		{name: "cores 100 refused on a used GPU", node: single(10),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "0"))},
			pod:    one(1000, 100), wantReason: exclusiveTaken},
		{name: "a GPU with all cores booked takes no container without a core limit", node: single(10),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "100"))},
			pod:    one(1000, 0), wantReason: coresFull},
		{name: "cores beyond 100 in all", node: single(10),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "70"))},
			pod:    one(1000, 40), wantReason: coresShort},
		{name: "cores up to 100 in all", node: single(10),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "70"))},
			pod:    one(1000, 30), want: dev(0, "1000", "30")},
		{name: "not enough memory", node: single(10),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "25000", "0"))},
			pod:    one(6000, 0), wantReason: memoryShort},
		{name: "no memory asked means the whole card", node: h200x3,
			onNode: []*corev1.Pod{using("a", "x", dev(0, "1000", "0"))},
			pod:    pod("new", "pg", ctr("main", string(resCount)+"=1")), want: dev(1, "30000", "0")},
		{name: "a memory percentage of each card", node: h200x3,
			pod:  pod("new", "pg", ctr("main", string(resCount)+"=2", string(resPct)+"=25")),
			want: dev(0, "7500", "0") + dev(1, "7500", "0")},
		{name: "split slots used up", node: single(2),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "100", "0")), using("b", "x", dev(0, "100", "0"))},
			pod:    one(100, 0), wantReason: noFreeSlot},
		{name: "unhealthy GPUs are left alone", node: gpuNode("n1", 0, []gpuSpec{
			{split: 10, memory: 30000, typ: h200, mode: vgpu.ModeHAMiCore, unhealthy: true},
			{split: 10, memory: 30000, typ: h200, mode: vgpu.ModeHAMiCore},
		}), pod: one(1000, 0), want: dev(1, "1000", "0")},
		{name: "only unhealthy GPUs", node: gpuNode("n1", 0, []gpuSpec{{split: 10, memory: 30000, typ: h200, mode: vgpu.ModeHAMiCore, unhealthy: true}}),
			pod: one(1000, 0), wantReason: unhealthy},
		{name: "MIG GPUs of a type without geometry are left alone", node: gpuNode("n1", 0, []gpuSpec{{split: 7, memory: 71885, typ: h200, mode: vgpu.ModeMIG}}),
			pod: one(1000, 0), wantReason: migGeometryUnknown},
		{name: "the reason is the constraint closest to being met", node: mixed,
			onNode: []*corev1.Pod{using("a", "x", dev(1, "29000", "0")), using("b", "x", dev(2, "29900", "0"))},
			pod:    annotated(one(2000, 0), vgpu.UseGPUTypeAnnotation, "H200"), wantReason: memoryShort},
		{name: "podgroup spread: off the GPUs its group uses", policy: PolicyBinpack, node: h200x3,
			onNode: []*corev1.Pod{using("a", "pg", dev(0, "5000", "0")), using("b", "other", dev(1, "1000", "0"))},
			pod:    annotated(one(1000, 0), vgpu.PodGroupPolicyAnnotation, vgpu.PodGroupPolicySpread),
			want:   dev(1, "1000", "0")},
		{name: "podgroup spread: every GPU used by the group", node: single(10),
			onNode:     []*corev1.Pod{using("a", "pg", dev(0, "5000", "0"))},
			pod:        annotated(one(1000, 0), vgpu.PodGroupPolicyAnnotation, vgpu.PodGroupPolicySpread),
			wantReason: podGroupShared},
		{name: "without the annotation, the group shares GPUs", node: single(10),
			onNode: []*corev1.Pod{using("a", "pg", dev(0, "5000", "0"))},
			pod:    one(1000, 0), want: dev(0, "1000", "0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policyPlugin(t, tc.policy, 1)
			n := nodeInfo(tc.node, tc.onNode...)
			before := usageOf(ledgerOf(n))
			task := api.NewTaskInfo(tc.pod)
			status := p.predicate(task, n)
			if tc.want == "" {
				want := p.verdicts.constraints[tc.wantReason]
				if status != want {
					t.Fatalf("predicate = %v, want %v", status, want.Reasons)
				}
				task.Status = api.Allocated
				e := &framework.Event{Task: task, Node: n}
				if p.allocate(e); e.Err == nil || e.Err.Error() != want.Reasons[0] {
					t.Errorf("allocate: err %v, want %q", e.Err, want.Reasons[0])
				}
				if after := usageOf(ledgerOf(n)); after != before || task.BindAnnotations != nil {
					t.Errorf("a refused placement left %s (was %s) and annotations %v", after, before, task.BindAnnotations)
				}
				return
			}
			if status != nil {
				t.Fatalf("predicate refused: %v", status.Reasons)
			}
			task.Status = api.Allocated
			e := &framework.Event{Task: task, Node: n}
			if p.allocate(e); e.Err != nil {
				t.Fatalf("allocate: %v", e.Err)
			}
			if got := task.BindAnnotations[vgpu.AssignedDevicesAnnotation]; got != tc.want {
				t.Errorf("assignment\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestNodeScore: once the pod is booked, binpack scores the memory share booked on all the
// node's GPUs, spread the share left free on the chosen ones; times the weight.
func TestNodeScore(t *testing.T) {
	node := gpuNode("n1", 0, gpus(2, 10, 30000, h200))
	onNode := []*corev1.Pod{using("a", "x", dev(0, "3000", "0"))}
	for _, tc := range []struct {
		name   string
		policy string
		weight int
		pod    *corev1.Pod
		want   float64
	}{
		// Upstream's TestVgpuScore: 3000 of 30000 used, 1000 more asked.
		{"binpack", PolicyBinpack, 1, pod("p", "pg", vgpuCtr("c", 1, 1000, 0)), 100 * 4000.0 / 30000},
		{"binpack, weight 10", PolicyBinpack, 10, pod("p", "pg", vgpuCtr("c", 1, 1000, 0)), 1000 * 4000.0 / 30000},
		{"spread takes the idle GPU and scores what it leaves free", PolicySpread, 1, pod("p", "pg", vgpuCtr("c", 1, 1000, 0)), 100 * 29000.0 / 30000},
		{"binpack counts the GPUs the pod does not use", PolicyBinpack, 1, pod("p", "pg", vgpuCtr("c", 1, 29000, 0)), 100*29000.0/30000 + 100*3000.0/30000},
		{"binpack over two GPUs sums them", PolicyBinpack, 1, pod("p", "pg", vgpuCtr("c", 2, 1000, 0)), 100*4000.0/30000 + 100*1000.0/30000},
		{"a pod that wants no GPU", PolicyBinpack, 1, pod("p", "pg", ctr("c", "cpu=1")), 0},
		{"a pod the node cannot take", PolicyBinpack, 1, pod("p", "pg", vgpuCtr("c", 3, 1000, 0)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policyPlugin(t, tc.policy, tc.weight)
			got, err := p.nodeOrder(api.NewTaskInfo(tc.pod), nodeInfo(node, onNode...))
			if err != nil || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("nodeOrder = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestFitMemo: pods that ask the same of GPUs share a node's fit memo; a pod that asks
// something else (a size, a filter) does not, and booking or unbooking a pod on the node
// makes every pod fit it again.
func TestFitMemo(t *testing.T) {
	p := policyPlugin(t, PolicyBinpack, 1)
	n := nodeInfo(gpuNode("n1", 0, gpus(1, 2, 30000, h200)))
	shape := func(name string) *api.TaskInfo { return api.NewTaskInfo(pod(name, "pg", vgpuCtr("c", 1, 20000, 0))) }
	a, b := shape("a"), shape("b")
	check := func(step string, task *api.TaskInfo, want constraint) {
		t.Helper()
		wantStatus := p.verdicts.constraints[want]
		if got := p.predicate(task, n); got != wantStatus {
			t.Errorf("%s: predicate(%s) = %v, want %v", step, task.Name, got, wantStatus)
		}
		wantScore := 0.0
		if want == fits {
			wantScore = 100 * 20000.0 / 30000
		}
		if got, _ := p.nodeOrder(task, n); math.Abs(got-wantScore) > 1e-9 {
			t.Errorf("%s: nodeOrder(%s) = %v, want %v", step, task.Name, got, wantScore)
		}
	}
	check("empty node", a, fits)
	check("empty node", b, fits)
	check("another size", api.NewTaskInfo(pod("big", "pg", vgpuCtr("c", 1, 40000, 0))), memoryOverGPU)
	check("a filter", api.NewTaskInfo(annotated(pod("avoid", "pg", vgpuCtr("c", 1, 20000, 0)), vgpu.NoUseGPUUUIDAnnotation, uuid(0))), uuidAvoided)
	a.Status = api.Allocated
	e := &framework.Event{Task: a, Node: n}
	if p.allocate(e); e.Err != nil {
		t.Fatalf("allocate: %v", e.Err)
	}
	check("a booked", b, memoryShort)
	p.deallocate(&framework.Event{Task: a, Node: n})
	check("a undone", b, fits)
}
