// Package priority orders work by priority: jobs by their PodGroup's priority, tasks by
// their pod's. The cache resolves a PodGroup's priorityClassName into JobInfo.Priority and a
// pod's spec.priority (or the volcano.sh/task-priority annotation) into TaskInfo.Priority,
// so this plugin only compares numbers.
//
// Upstream's priority plugin also votes on preemption victims and job starvation; the
// framework has neither extension point yet, so only the two orderings are registered.
package priority

import (
	"cmp"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "priority"

type priorityPlugin struct{}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin. It takes no arguments; any given are ignored, as upstream.
func New(conf.Arguments) (framework.Plugin, error) { return priorityPlugin{}, nil }

func (priorityPlugin) Name() string { return PluginName }

func (priorityPlugin) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobOrderFn(PluginName, func(l, r *api.JobInfo) int { return higherFirst(l.Priority, r.Priority) })
	ssn.AddTaskOrderFn(PluginName, func(l, r *api.TaskInfo) int { return higherFirst(l.Priority, r.Priority) })
}

func (priorityPlugin) OnSessionClose(*framework.Session) {}

// higherFirst compares so that the higher priority goes first (negative when l is higher).
func higherFirst(l, r int32) int { return cmp.Compare(r, l) }
