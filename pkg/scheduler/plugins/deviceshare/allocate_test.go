package deviceshare

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// runAllocate runs the allocate action over the snapshot with the real gang, predicates and
// deviceshare plugins (vGPU on, with the given arguments), closes the session, and returns it.
func runAllocate(t *testing.T, cache *frameworktest.Cache, args conf.Arguments) *framework.Session {
	t.Helper()
	deviceArgs := conf.Arguments{VGPUEnableArg: true}
	for k, v := range args {
		deviceArgs[k] = v
	}
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: gang.PluginName}}},
		{Plugins: []conf.PluginOption{{Name: predicates.PluginName}, {Name: PluginName, Arguments: deviceArgs}}},
	}}
	reg := registry(map[string]framework.PluginBuilder{gang.PluginName: gang.New, predicates.PluginName: predicates.New})
	ssn := framework.OpenSession(cache, cfg, reg, nil)
	allocate.New().Execute(ssn)
	framework.CloseSession(ssn)
	return ssn
}

// boundPerGPU counts the vGPUs bound per GPU UUID, from the assignments the binder got.
func boundPerGPU(t *testing.T, cache *frameworktest.Cache) map[string]int {
	t.Helper()
	perGPU := map[string]int{}
	for _, task := range cache.Bound {
		pd, err := vgpu.DecodePodDevices(task.BindAnnotations[vgpu.AssignedDevicesAnnotation])
		if err != nil || len(pd) == 0 {
			t.Fatalf("pod %s bound without a readable assignment: %v %v", task.Name, task.BindAnnotations, err)
		}
		if task.BindAnnotations[vgpu.AssignedNodeAnnotation] != task.NodeName {
			t.Errorf("pod %s bound to %s with devices on %s", task.Name, task.NodeName, task.BindAnnotations[vgpu.AssignedNodeAnnotation])
		}
		for uuid, u := range pd.UsageByGPU() {
			perGPU[uuid] += u.Devices
		}
	}
	return perGPU
}

// TestTenGPUsSplitTwo: 10 GPUs with split 2 take 20 one-vGPU pods, two on each GPU, and
// refuse the 21st, whether kubelet's allocatable or the GPU ledger is what runs out.
func TestTenGPUsSplitTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		// slotsAllocatable overrides the vgpu-number allocatable of each node.
		slotsAllocatable string
		wantReason       string
	}{
		{"allocatable runs out", "", "0/2 nodes are unavailable: 2 Insufficient volcano.sh/vgpu-number."},
		{"the ledger runs out (allocatable claims more)", "100",
			"0/2 nodes are unavailable: 2 hami-vgpuDeviceSharing error: no free vGPU slot on the GPU (deviceSplitCount)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*api.NodeInfo
			for i := range 2 {
				node := gpuNode(fmt.Sprintf("n%d", i), 5*i, gpus(5, 2, 30000, h200))
				if tc.slotsAllocatable != "" {
					node.Status.Allocatable[resCount] = resource.MustParse(tc.slotsAllocatable)
				}
				nodes = append(nodes, nodeInfo(node))
			}
			var pods []*corev1.Pod
			for i := range 21 {
				pods = append(pods, pod(fmt.Sprintf("w-%02d", i), "pg", vgpuCtr("main", 1, 1000, 0)))
			}
			cache := &frameworktest.Cache{Snap: snapshot(nodes, 20, pods...)}
			ssn := runAllocate(t, cache, conf.Arguments{SchedulePolicyArg: PolicySpread})

			if len(cache.Bound) != 20 {
				t.Fatalf("bound %d pods, want 20", len(cache.Bound))
			}
			perGPU := boundPerGPU(t, cache)
			for i := range 10 {
				if perGPU[uuid(i)] != 2 {
					t.Errorf("GPU %d holds %d vGPUs, want 2 (all: %v)", i, perGPU[uuid(i)], perGPU)
				}
			}
			job := ssn.Jobs["ns/pg"]
			last := taskOf(t, ssn, "w-20")
			if last.Status != api.Pending {
				t.Fatalf("w-20 is %s", last.Status)
			}
			if fe := job.NodesFitErrors[last.UID]; fe == nil || fe.Error() != tc.wantReason {
				t.Errorf("w-20's fit error %v, want %q", fe, tc.wantReason)
			}
		})
	}
}

// TestGangRefusalNamesTheConstraint: a gang that does not fit is undone in the ledger, and
// the constraint that failed reaches the gang condition's "Origin reason" and the pods'
// FailedScheduling message.
func TestGangRefusalNamesTheConstraint(t *testing.T) {
	node := nodeInfo(gpuNode("n1", 0, gpus(2, 10, 30000, h200)))
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{node}, 3,
		// 200 cores in all, as allocatable has: only the GPUs tell that w-2 cannot have one
		// to itself.
		pod("w-0", "pg", vgpuCtr("main", 1, 1000, 0)),
		pod("w-1", "pg", vgpuCtr("main", 1, 1000, 100)),
		pod("w-2", "pg", vgpuCtr("main", 1, 1000, 100)),
	)}
	ssn := runAllocate(t, cache, nil)
	if len(cache.Bound) != 0 {
		t.Fatalf("bound %d pods of a gang that does not fit", len(cache.Bound))
	}
	if got := usageOf(ledgerOf(ssn.Nodes["n1"])); got != "0:0/0/0 1:0/0/0" {
		t.Errorf("the discarded gang left %s in the ledger", got)
	}
	job := ssn.Jobs["ns/pg"]
	var message string
	for _, c := range job.Status.Conditions {
		if c.Type == schedulingv1beta1.PodGroupUnschedulableType {
			message = c.Message
		}
	}
	want := "Origin reason is w-2: 0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: volcano.sh/vgpu-cores 100 needs a GPU no other vGPU uses."
	if !strings.HasSuffix(message, want) {
		t.Errorf("gang condition %q\ndoes not end with %q", message, want)
	}
	if _, msg := job.PodScheduledMessage(taskOf(t, ssn, "w-2"), job.FitError); !strings.Contains(msg, "vgpu-cores 100 needs a GPU no other vGPU uses") {
		t.Errorf("w-2's FailedScheduling message %q does not name the constraint", msg)
	}
}

// TestPolicyDecidesBetweenEqualNodes: with a policy and no weight, the policy picks between
// nodes nothing else tells apart; with weight 0 (upstream's default) it does not.
func TestPolicyDecidesBetweenEqualNodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args conf.Arguments
		want string
	}{
		{"binpack: the node whose GPU is fuller", conf.Arguments{SchedulePolicyArg: PolicyBinpack}, "b-node"},
		{"spread: the node whose GPU is emptier", conf.Arguments{SchedulePolicyArg: PolicySpread}, "a-node"},
		{"weight 0: the first node by name, as with no policy", conf.Arguments{SchedulePolicyArg: PolicyBinpack, ScheduleWeightArg: 0}, "a-node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := nodeInfo(gpuNode("a-node", 0, gpus(1, 10, 30000, h200)),
				runningWith(pod("a-user", "x"), "a-node", dev(0, "1000", "0")))
			b := nodeInfo(gpuNode("b-node", 1, gpus(1, 10, 30000, h200)),
				runningWith(pod("b-user", "x"), "b-node", dev(1, "9000", "0")))
			cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{a, b}, 1, pod("w-0", "pg", vgpuCtr("main", 1, 1000, 0)))}
			runAllocate(t, cache, tc.args)
			var got []string
			for _, task := range cache.Bound {
				got = append(got, task.NodeName)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != tc.want {
				t.Errorf("bound to %v, want %s", got, tc.want)
			}
		})
	}
}
