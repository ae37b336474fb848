package predicates

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const (
	gpu        = "nvidia.com/gpu"
	fpga       = "example.com/fpga"
	vgpuNumber = "volcano.sh/vgpu-number"
	vgpuMemory = "volcano.sh/vgpu-memory"
)

// proportionalArgs switches the check on for the resources, with each rate key's value.
func proportionalArgs(resources string, rates ...interface{}) conf.Arguments {
	args := conf.Arguments{ProportionalEnable: true, ProportionalResources: resources}
	for i := 0; i+1 < len(rates); i += 2 {
		args[rates[i].(string)] = rates[i+1]
	}
	return args
}

func cpuRate(resource string) string    { return ProportionalRatePrefix + resource + CPURateSuffix }
func memoryRate(resource string) string { return ProportionalRatePrefix + resource + MemoryRateSuffix }

// podAsking is pod ns/<name> of PodGroup pg with one container requesting cpu, memory and
// the name/quantity pairs.
func podAsking(name, cpu, memory string, pairs ...string) *corev1.Pod {
	return st.MakePod().Namespace("ns").UID("uid-" + name).Name(name).SchedulerName("volcano").Group("pg").
		Container(st.Resources(cpu, memory, pairs...)).Obj()
}

// TestProportional: with 2 idle GPUs at 4 cores and 8 GB each, a node keeps 8 cores and
// 16 GB for them, from tasks that ask for no GPU.
func TestProportional(t *testing.T) {
	gpuRates := proportionalArgs(gpu, cpuRate(gpu), 4, memoryRate(gpu), 8)
	gpuNode := func(running ...*corev1.Pod) *api.NodeInfo {
		return frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G", gpu, "2")).Obj(), running...)
	}
	// 2 GPUs split 10: 20 vGPU slots, 0.4 cores per slot, 4 per GPU.
	vgpuNode := func(running ...*corev1.Pod) *api.NodeInfo {
		return frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G", vgpuNumber, "20", vgpuMemory, "160000")).Obj(), running...)
	}
	vgpuRates := proportionalArgs(vgpuNumber, cpuRate(vgpuNumber), "0.4", memoryRate(vgpuNumber), 0)
	cases := []struct {
		name string
		args conf.Arguments
		pod  *corev1.Pod
		node *api.NodeInfo
		// refusedFor is the listed resource whose reserve refuses the node, "" to pass.
		refusedFor string
	}{
		{name: "cpu left exactly at the reserve", args: gpuRates, pod: podAsking("p", "8", "1G"), node: gpuNode()},
		{name: "cpu below the reserve", args: gpuRates, pod: podAsking("p", "9", "1G"), node: gpuNode(), refusedFor: gpu},
		{name: "memory left exactly at the reserve", args: gpuRates, pod: podAsking("p", "1", "48G"), node: gpuNode()},
		{name: "memory below the reserve, in GB not GiB", args: gpuRates, pod: podAsking("p", "1", "48001M"), node: gpuNode(), refusedFor: gpu},
		{name: "a task asking for the listed resource is not held back", args: gpuRates, pod: podAsking("p", "15", "60G", gpu, "1"), node: gpuNode()},
		{name: "node without the resource keeps nothing", args: gpuRates, pod: podAsking("p", "15", "60G"),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G")).Obj())},
		{name: "no idle GPU, no reserve", args: gpuRates, pod: podAsking("p", "13", "60G"),
			node: gpuNode(podAsking("train", "2", "2G", gpu, "2"))},
		{name: "one idle GPU keeps half", args: gpuRates, pod: podAsking("p", "10", "1G"),
			node: gpuNode(podAsking("train", "2", "2G", gpu, "1"))},
		{name: "one idle GPU, cpu below its reserve", args: gpuRates, pod: podAsking("p", "11", "1G"),
			node: gpuNode(podAsking("train", "2", "2G", gpu, "1")), refusedFor: gpu},
		{name: "switched off by default", args: conf.Arguments{ProportionalResources: gpu, cpuRate(gpu): 4}, pod: podAsking("p", "15", "1G"), node: gpuNode()},
		{name: "rates default to 1 core and 1 GB", args: proportionalArgs(gpu), pod: podAsking("p", "14", "62G"), node: gpuNode()},
		{name: "default cpu rate", args: proportionalArgs(gpu), pod: podAsking("p", "15", "1G"), node: gpuNode(), refusedFor: gpu},
		{name: "default memory rate", args: proportionalArgs(gpu), pod: podAsking("p", "1", "62001M"), node: gpuNode(), refusedFor: gpu},

		// several listed resources: 2 GPUs keep 2 cores, 4 FPGAs keep 8
		{name: "reserves are kept one by one, not added up", args: proportionalArgs(gpu+", "+fpga, cpuRate(fpga), 2, memoryRate(fpga), 0),
			pod: podAsking("p", "8", "1G"), node: frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G", gpu, "2", fpga, "4")).Obj())},
		{name: "the second resource's reserve refuses", args: proportionalArgs(gpu+", "+fpga, cpuRate(fpga), 2, memoryRate(fpga), 0),
			pod: podAsking("p", "9", "1G"), node: frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G", gpu, "2", fpga, "4")).Obj()), refusedFor: fpga},
		{name: "asking one listed resource frees from every reserve", args: proportionalArgs(gpu+", "+fpga, cpuRate(fpga), 2),
			pod: podAsking("p", "15", "1G", fpga, "1"), node: frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G", gpu, "2", fpga, "4")).Obj())},

		// vGPU: the idle units are slots
		{name: "vGPU slots keep their cores", args: vgpuRates, pod: podAsking("p", "8", "60G"), node: vgpuNode()},
		{name: "vGPU slots, cpu below the reserve", args: vgpuRates, pod: podAsking("p", "9", "1G"), node: vgpuNode(), refusedFor: vgpuNumber},
		{name: "a vGPU task is not held back", args: vgpuRates, pod: podAsking("p", "15", "1G", vgpuNumber, "1", vgpuMemory, "1000"), node: vgpuNode()},
		{name: "a booked slot keeps no reserve", args: vgpuRates, pod: podAsking("p", "7", "1G"),
			node: vgpuNode(podAsking("infer", "1", "1G", vgpuNumber, "1", vgpuMemory, "1000"))},
		{name: "a booked slot, cpu below the other slots' reserve", args: vgpuRates, pod: podAsking("p", "8", "1G"),
			node: vgpuNode(podAsking("infer", "1", "1G", vgpuNumber, "1", vgpuMemory, "1000")), refusedFor: vgpuNumber},
		{name: "vGPU memory without vgpu-number requests no listed resource", args: vgpuRates,
			pod: podAsking("p", "15", "1G", vgpuMemory, "1000"), node: vgpuNode(), refusedFor: vgpuNumber},
		{name: "vGPU memory listed at rate 0 lets it through",
			args: proportionalArgs(vgpuNumber+","+vgpuMemory, cpuRate(vgpuNumber), "0.4", memoryRate(vgpuNumber), 0, cpuRate(vgpuMemory), 0, memoryRate(vgpuMemory), 0),
			pod:  podAsking("p", "15", "1G", vgpuMemory, "1000"), node: vgpuNode()},
		{name: "fractional rates keep the reserve exactly", args: proportionalArgs(vgpuNumber, cpuRate(vgpuNumber), 0.1, memoryRate(vgpuNumber), 0.1),
			pod: podAsking("p", "1", "1G"), node: frameworktest.NodeInfo(st.Node("n", st.Resources("4", "4G", vgpuNumber, "30")).Obj())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.args)
			got := p.predicate(api.NewTaskInfo(tc.pod), tc.node)
			if tc.refusedFor == "" {
				if got.Failed() {
					t.Fatalf("node refused: %+v", got)
				}
				return
			}
			want := "proportional of resource " + tc.refusedFor + " check failed"
			if !got.Failed() || len(got.Reasons) != 1 || got.Reasons[0] != want || got.Code != api.UnschedulableAndUnresolvable || got.Plugin != PluginName {
				t.Errorf("got %+v, want %q, unresolvable, from %s", got, want, PluginName)
			}
		})
	}
}

func TestReadProportional(t *testing.T) {
	good := []struct {
		name string
		args conf.Arguments
		want proportional // only resource, milliCPU and memory compared
	}{
		{name: "nothing set"},
		{name: "switched on, nothing listed", args: conf.Arguments{ProportionalEnable: true}},
		{name: "listed but switched off", args: conf.Arguments{ProportionalEnable: false, ProportionalResources: gpu, cpuRate(gpu): 4}},
		{name: "upstream's example", args: proportionalArgs(gpu, cpuRate(gpu), 4, memoryRate(gpu), 8),
			want: proportional{{resource: gpu, milliCPU: 4, memory: 8e6}}},
		{name: "defaults", args: proportionalArgs(gpu), want: proportional{{resource: gpu, milliCPU: 1, memory: 1e6}}},
		{name: "blanks, a repeat, rates as strings and fractions",
			args: proportionalArgs(" "+vgpuNumber+" , "+gpu+","+vgpuNumber, cpuRate(vgpuNumber), "0.4", memoryRate(vgpuNumber), "0", cpuRate(gpu), 2.5),
			want: proportional{{resource: vgpuNumber, milliCPU: 0.4, memory: 0}, {resource: gpu, milliCPU: 2.5, memory: 1e6}}},
		{name: "an empty list", args: proportionalArgs(" ")},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readProportional(tc.args)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d reserves %+v, want %+v", len(got), got, tc.want)
			}
			for i, r := range got {
				w := tc.want[i]
				if r.resource != w.resource || r.milliCPU != w.milliCPU || r.memory != w.memory {
					t.Errorf("reserve %d: got %s %v millicores and %v bytes per milli-unit, want %s %v and %v",
						i, r.resource, r.milliCPU, r.memory, w.resource, w.milliCPU, w.memory)
				}
			}
		})
	}

	bad := []struct {
		name       string
		args       conf.Arguments
		wantKey    string
		wantReason string
	}{
		{name: "switch not a bool", args: conf.Arguments{ProportionalEnable: "sometimes"}, wantKey: ProportionalEnable, wantReason: "as bool"},
		{name: "list not a string", args: conf.Arguments{ProportionalResources: []interface{}{gpu}}, wantKey: ProportionalResources, wantReason: "as string"},
		{name: "empty item", args: proportionalArgs(gpu + ",," + fpga), wantKey: ProportionalResources, wantReason: "empty resource name"},
		{name: "trailing comma", args: proportionalArgs(gpu + ","), wantKey: ProportionalResources, wantReason: "empty resource name"},
		{name: "cpu listed", args: proportionalArgs("cpu," + gpu), wantKey: ProportionalResources, wantReason: "lists cpu, which the rates keep free"},
		{name: "memory listed", args: proportionalArgs("memory"), wantKey: ProportionalResources, wantReason: "lists memory"},
		{name: "malformed rate", args: proportionalArgs(gpu, cpuRate(gpu), "four"), wantKey: cpuRate(gpu), wantReason: "as float64"},
		{name: "negative rate", args: proportionalArgs(gpu, memoryRate(gpu), -8), wantKey: memoryRate(gpu), wantReason: "rate -8: want a number of 0 or more"},
		{name: "rate not a number", args: proportionalArgs(gpu, cpuRate(gpu), "NaN"), wantKey: cpuRate(gpu), wantReason: "want a number of 0 or more"},
		{name: "infinite rate", args: proportionalArgs(gpu, cpuRate(gpu), "+Inf"), wantKey: cpuRate(gpu), wantReason: "want a number of 0 or more"},
		{name: "rate of an unlisted resource", args: proportionalArgs(gpu, cpuRate(fpga), 2), wantKey: cpuRate(fpga),
			wantReason: "not the .cpu or .memory rate of a resource predicate.resources lists"},
		{name: "misspelt rate suffix", args: proportionalArgs(gpu, ProportionalRatePrefix+gpu+".mem", 8), wantKey: ProportionalRatePrefix + gpu + ".mem",
			wantReason: "not the .cpu or .memory rate"},
		{name: "rate with nothing listed, switched off", args: conf.Arguments{cpuRate(gpu): 4}, wantKey: cpuRate(gpu), wantReason: "not the .cpu or .memory rate"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.args)
			var argErr *conf.ArgumentError
			if !errors.As(err, &argErr) || argErr.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantReason) {
				t.Errorf("New(%v) = %v, want an argument error for %q saying %q", tc.args, err, tc.wantKey, tc.wantReason)
			}
		})
	}
}

// TestProportionalFollowsPlacements: the reserve follows the session's tentative placements,
// so a GPU task placed on the node frees the cpu kept for its GPUs, and its undo keeps it
// again.
func TestProportionalFollowsPlacements(t *testing.T) {
	cache := &frameworktest.Cache{Snap: frameworktest.ClusterOf(
		[]*api.NodeInfo{frameworktest.NodeInfo(st.Node("n", st.Resources("16", "64G", gpu, "2")).Obj())},
		frameworktest.JobOf(st.MakePodGroup().Namespace("ns").Name("pg").Obj(), podAsking("train", "2", "2G", gpu, "2"), podAsking("etl", "9", "1G")))}
	ssn := frameworktest.OpenSession(t, cache, "allocate", builders,
		conf.PluginOption{Name: PluginName, Arguments: proportionalArgs(gpu, cpuRate(gpu), 4, memoryRate(gpu), 8)})
	job, node := ssn.Jobs["ns/pg"], ssn.NodeList[0]
	train, etl := job.Tasks["uid-train"], job.Tasks["uid-etl"]
	refused := ProportionalReason(gpu)
	if s := ssn.Predicate(etl, node); !s.Failed() || s.Reasons[0] != refused {
		t.Fatalf("9 cores of 16 beside 2 idle GPUs kept at 4 cores each: got %+v, want %q", s, refused)
	}
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(train, node); err != nil {
		t.Fatal(err)
	}
	if s := ssn.Predicate(etl, node); s.Failed() {
		t.Errorf("no GPU left idle, yet refused: %+v", s)
	}
	stmt.Discard()
	if s := ssn.Predicate(etl, node); !s.Failed() || s.Reasons[0] != refused {
		t.Errorf("GPUs idle again after Discard: got %+v, want %q", s, refused)
	}
}
