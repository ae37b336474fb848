package binpack

import (
	"fmt"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const vgpuMemory = corev1.ResourceName("volcano.sh/vgpu-memory")

func newTask(name string, requests corev1.ResourceList) *api.TaskInfo {
	return api.NewTaskInfo(st.MakePod().Namespace("ns").UID(name).Name(name).Group("pg").Container(requests).Obj())
}

func mustNew(t testing.TB, args conf.Arguments) *binpackPlugin {
	t.Helper()
	p, err := New(args)
	if err != nil {
		t.Fatalf("New(%v): %v", args, err)
	}
	return p.(*binpackPlugin)
}

// TestScore: hand-computed scores. The node has 4 cpu, 8 GiB and 10000 vgpu-memory, and
// runs a pod using 1 cpu, 2 GiB and 2000 vgpu-memory.
func TestScore(t *testing.T) {
	cases := []struct {
		name string
		args conf.Arguments
		req  corev1.ResourceList
		want float64
	}{
		// cpu (1+1)/4 = 0.5, memory (2+2)/8 = 0.5: (0.5 + 0.5)/2 × 100.
		{"defaults", nil, st.Resources("1", "2Gi"), 50},
		// × binpack.weight 10.
		{"binpack.weight", conf.Arguments{Weight: 10}, st.Resources("1", "2Gi"), 500},
		// cpu (1+1)/4 = 0.5 × 2, memory (2+4)/8 = 0.75 × 1: 1.75/3 × 100.
		{"cpu weighs double", conf.Arguments{CPUWeight: 2}, st.Resources("1", "4Gi"), 175.0 / 3},
		// memory not weighed: cpu alone, 0.5.
		{"memory weight 0", conf.Arguments{MemoryWeight: 0}, st.Resources("1", "6Gi"), 50},
		// vgpu-memory (2000+4000)/10000 = 0.6 × 3; cpu 0.5, memory 0.5: (0.5+0.5+1.8)/5 × 100.
		{"extra resource", conf.Arguments{Resources: "volcano.sh/vgpu-memory", ResourceWeightPrefix + "volcano.sh/vgpu-memory": 3},
			st.Resources("1", "2Gi", "volcano.sh/vgpu-memory", "4000"), 56},
		// Listed with spaces and a trailing comma; weight defaults to 1: (0.5+0.5+0.6)/3.
		{"extra resource, default weight", conf.Arguments{Resources: " volcano.sh/vgpu-memory, ,"},
			st.Resources("1", "2Gi", "volcano.sh/vgpu-memory", "4000"), 160.0 / 3},
		// The task asks no vgpu-memory: the resource does not count.
		{"extra resource not requested", conf.Arguments{Resources: "volcano.sh/vgpu-memory"},
			st.Resources("1", "2Gi"), 50},
		// cpu listed among the extras keeps its own weight (binpack.cpu = 0 here).
		{"cpu among the extras", conf.Arguments{Resources: "cpu", CPUWeight: 0}, st.Resources("3", "2Gi"), 50},
		// memory (2+7)/8 overflows: the node scores 0.
		{"overflow", nil, st.Resources("1", "7Gi"), 0},
		// Exactly full fits: cpu 4/4 = 1, memory 0.5.
		{"exactly full", nil, st.Resources("3", "2Gi"), 75},
		// The node has no nvidia.com/gpu: any request of it overflows.
		{"resource the node lacks", conf.Arguments{Resources: "nvidia.com/gpu"}, st.Resources("1", "", "nvidia.com/gpu", "1"), 0},
		// Nothing weighed is requested.
		{"nothing weighed requested", conf.Arguments{CPUWeight: 0, MemoryWeight: 0, Resources: "nvidia.com/gpu"}, st.Resources("1", ""), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := frameworktest.NodeInfo(st.Node("n", st.Resources("4", "8Gi", string(vgpuMemory), "10000")).Obj(),
				st.MakePod().Namespace("ns").Name("running").Container(st.Resources("1", "2Gi", string(vgpuMemory), "2000")).Obj())
			got, err := mustNew(t, tc.args).score(newTask("p", tc.req), node)
			if err != nil || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("score %v (err %v), want %v", got, err, tc.want)
			}
		})
	}
}

func TestNewRejectsMalformedArguments(t *testing.T) {
	cases := []struct {
		args    conf.Arguments
		wantKey string
	}{
		{conf.Arguments{Weight: "heavy"}, Weight},
		{conf.Arguments{CPUWeight: 1.5}, CPUWeight},
		{conf.Arguments{MemoryWeight: -2}, MemoryWeight},
		{conf.Arguments{Resources: []interface{}{"nvidia.com/gpu"}}, Resources},
		{conf.Arguments{Resources: "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": "two"}, "binpack.resources.nvidia.com/gpu"},
		{conf.Arguments{Resources: "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": -1}, "binpack.resources.nvidia.com/gpu"},
	}
	for _, tc := range cases {
		t.Run(tc.wantKey, func(t *testing.T) {
			_, err := New(tc.args)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.wantKey)) {
				t.Errorf("New(%v) = %v, want an error naming %q", tc.args, err, tc.wantKey)
			}
		})
	}
}

// TestSessionScore: the session sums the score; a weight of 0 registers nothing.
func TestSessionScore(t *testing.T) {
	cases := []struct {
		args      conf.Arguments
		wantScore bool
	}{
		{nil, true},
		{conf.Arguments{Weight: 0}, false},
		{conf.Arguments{CPUWeight: 0, MemoryWeight: 0}, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			node := frameworktest.NodeInfo(st.Node("n", st.Resources("4", "8Gi")).Obj(),
				st.MakePod().Namespace("ns").Name("running").Container(st.Resources("1", "2Gi")).Obj())
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: frameworktest.ClusterOf([]*api.NodeInfo{node})}, "allocate",
				map[string]framework.PluginBuilder{PluginName: New}, conf.PluginOption{Name: PluginName, Arguments: tc.args})
			if ssn.HasNodeOrder() != tc.wantScore {
				t.Fatalf("HasNodeOrder %v, want %v", ssn.HasNodeOrder(), tc.wantScore)
			}
			if got := ssn.NodeOrder(newTask("p", st.Resources("1", "2Gi")), node); tc.wantScore && got != 50 {
				t.Errorf("session score %v, want 50", got)
			}
		})
	}
}

// BenchmarkScore is the per-node path: cpu, memory and one vGPU resource weighed.
func BenchmarkScore(b *testing.B) {
	nodes := make([]*api.NodeInfo, 1000)
	for i := range nodes {
		used := st.Resources(fmt.Sprint(i%64), "8Gi", string(vgpuMemory), fmt.Sprint(i*100))
		nodes[i] = frameworktest.NodeInfo(st.Node("n", st.Resources("64", "512Gi", string(vgpuMemory), "655360")).Obj(),
			st.MakePod().Namespace("ns").Name("running").Container(used).Obj())
	}
	p := mustNew(b, conf.Arguments{Resources: string(vgpuMemory)})
	task := newTask("p", st.Resources("1", "2Gi", string(vgpuMemory), "8000"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.score(task, nodes[i%len(nodes)]); err != nil {
			b.Fatal(err)
		}
	}
}
