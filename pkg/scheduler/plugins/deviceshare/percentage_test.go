package deviceshare

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestMemoryPercentageEndToEnd: a pod asking volcano.sh/vgpu-memory-percentage 50 and no
// vgpu-memory on an 81,920 MiB GPU. Where the node does not advertise the percentage resource
// (upstream's device plugin never does), the resource fit finds none of it and the gang stays
// "pod group is not ready ... 1 Unschedulable" before the vGPU fit runs. Where it advertises
// 100 per GPU, as our device plugin does, the pod is bound with 40,960 MiB booked and in its
// assignment (the device plugin's limit), and its queue counts 40,960 MiB of vgpu-memory.
func TestMemoryPercentageEndToEnd(t *testing.T) {
	half := func() *corev1.Pod {
		return pod("half", "pg", ctr("main", string(resCount)+"=1", string(resPct)+"=50", "cpu=100m"))
	}
	for _, tc := range []struct {
		name string
		// percentage is the node's allocatable of the percentage resource; "" for none.
		percentage string
		wantBound  bool
		wantReason string
	}{
		{name: "node without the percentage resource", wantReason: "0/1 nodes are unavailable: 1 Insufficient " + string(resPct) + "."},
		{name: "node advertising 100 per GPU", percentage: "100", wantBound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := gpuNode("n1", 0, gpus(1, 10, 81920, h200))
			if tc.percentage != "" {
				node.Status.Allocatable[resPct] = resource.MustParse(tc.percentage)
			}
			cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{nodeInfo(node)}, 1, half())}
			cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{
				{Plugins: []conf.PluginOption{{Name: gang.PluginName}}},
				{Plugins: []conf.PluginOption{{Name: predicates.PluginName}, {Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true}}}},
			}}
			ssn := framework.OpenSession(cache, cfg, registry(map[string]framework.PluginBuilder{gang.PluginName: gang.New, predicates.PluginName: predicates.New}), nil)
			allocate.New().Execute(ssn)
			framework.CloseSession(ssn)

			if !tc.wantBound {
				if len(cache.Bound) != 0 {
					t.Fatalf("bound %d pods", len(cache.Bound))
				}
				task := taskOf(t, ssn, "half")
				if fe := ssn.Jobs["ns/pg"].NodesFitErrors[task.UID]; fe == nil || fe.Error() != tc.wantReason {
					t.Errorf("fit error %v, want %q", fe, tc.wantReason)
				}
				if got := ssn.Jobs["ns/pg"].FitError(); got != "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable. Origin reason is half: "+tc.wantReason {
					t.Errorf("gang message %q", got)
				}
				return
			}
			if len(cache.Bound) != 1 {
				t.Fatalf("bound %d pods, want 1", len(cache.Bound))
			}
			if got, want := cache.Bound[0].BindAnnotations[vgpu.AssignedDevicesAnnotation], dev(0, "40960", "0"); got != want {
				t.Errorf("assignment %q, want %q", got, want)
			}
			if got, want := usageOf(ledgerOf(ssn.Nodes["n1"])), "0:1/40960/0"; got != want {
				t.Errorf("GPU books %s, want %s", got, want)
			}
			q := cache.Allocated["default"]
			if got, want := vgpuOf(q), "number 1000 memory 4.096e+07 cores 0"; got != want {
				t.Errorf("queue allocated %s, want %s", got, want)
			}
			if got := q.Get(resPct); got != 50_000 {
				t.Errorf("queue allocated %v of %s, want the 50 asked", got, resPct)
			}
		})
	}
}
