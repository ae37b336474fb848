package deviceshare

import (
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// With deviceshare.NodeLockEnable a placed vGPU task asks the binder for the node lock, a
// task without vGPUs does not, and undoing the placement takes the request back.
func TestNodeLockRequest(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		cache := &bindRecorder{snap: snapshot([]*api.NodeInfo{nodeInfo(gpuNode("n1", 0, gpus(1, 10, 30000, h200)))}, 1,
			pod("gpu", "pg", vgpuCtr("main", 1, 1000, 0)), pod("plain", "pg", ctr("main", "cpu=1")))}
		cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{
			Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true, NodeLockEnableArg: enabled},
		}}}}}
		ssn := framework.OpenSession(cache, cfg, registry(nil))
		want := ""
		if enabled {
			want = vgpu.NodeLockAnnotation
		}
		stmt := ssn.NewStatement()
		for _, name := range []string{"gpu", "plain"} {
			if err := stmt.Allocate(taskOf(t, ssn, name), ssn.Nodes["n1"]); err != nil {
				t.Fatalf("Allocate %s: %v", name, err)
			}
		}
		if got := taskOf(t, ssn, "gpu").NodeLock; got != want {
			t.Errorf("lock enabled %v: vGPU task's NodeLock %q, want %q", enabled, got, want)
		}
		if got := taskOf(t, ssn, "plain").NodeLock; got != "" {
			t.Errorf("lock enabled %v: a task without vGPUs asks for lock %q", enabled, got)
		}
		stmt.Discard()
		if got := taskOf(t, ssn, "gpu").NodeLock; got != "" {
			t.Errorf("lock enabled %v: NodeLock %q left after Discard", enabled, got)
		}
	}
}
