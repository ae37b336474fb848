package quotatest

import (
	"slices"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
)

// ReclaimCycle runs the enqueue and reclaim actions once over o, with priority, gang,
// conformance and the queue plugin (entry, built from spec) in one tier, so the queue plugin
// has its say on the victims; it returns the evicted pods by name.
func ReclaimCycle(t *testing.T, o frameworktest.Objects, entry conf.PluginOption, spec framework.PluginSpec) []string {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: o.ClusterInfo(), OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	reg := framework.NewRegistry()
	reg.RegisterAction(enqueue.New())
	reg.RegisterAction(reclaim.New())
	for name, build := range map[string]framework.PluginBuilder{priority.PluginName: priority.New, gang.PluginName: gang.New,
		conformance.PluginName: conformance.New} {
		reg.RegisterPlugin(name, build)
	}
	reg.Register(entry.Name, spec)
	tiers := []conf.Tier{{Plugins: []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName},
		{Name: conformance.PluginName}, entry}}}
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: "enqueue, reclaim", Tiers: tiers}, reg)
	framework.CloseSession(ssn)
	slices.Sort(evicted)
	return evicted
}
