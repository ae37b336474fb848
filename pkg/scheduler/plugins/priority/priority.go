// Package priority orders work by priority: jobs by their PodGroup's priority, tasks by
// their pod's. The cache resolves a PodGroup's priorityClassName into JobInfo.Priority and a
// pod's spec.priority (or the volcano.sh/task-priority annotation) into TaskInfo.Priority,
// so this plugin only compares numbers.
//
// For preempt it allows as victims only what ranks lower: a task of another job whose job
// has a lower priority, or a lower-priority task of the preemptor's own job; and it calls a
// job starving while some of its tasks have no place (ready or pipelined).
package priority

import (
	"cmp"
	"fmt"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/ignoredannotation"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "priority"

// ClassNotFound is the PodGroup condition (and its reason, and the Warning event's) of a job
// whose PodGroup names a PriorityClass the cluster does not have: it is scheduled with the
// default priority, which its owner would otherwise not learn (upstream says nothing).
const ClassNotFound schedulingv1beta1.PodGroupConditionType = "PriorityClassNotFound"

type priorityPlugin struct{}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin. It takes no arguments; any given are ignored, as upstream.
func New(conf.Arguments) (framework.Plugin, error) { return priorityPlugin{}, nil }

func (priorityPlugin) Name() string { return PluginName }

func (priorityPlugin) OnSessionOpen(ssn *framework.Session) {
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		if !job.PriorityClassMissing {
			ignoredannotation.Clear(job, ClassNotFound)
			continue
		}
		ignoredannotation.ReportWithReason(ssn, job, ClassNotFound, string(ClassNotFound), fmt.Sprintf(
			"PriorityClass %s does not exist; the job is scheduled with the default priority %d", job.PodGroup.Spec.PriorityClassName, job.Priority))
	}
	ssn.AddJobOrderFn(PluginName, func(l, r *api.JobInfo) int { return higherFirst(l.Priority, r.Priority) })
	ssn.AddTaskOrderFn(PluginName, func(l, r *api.TaskInfo) int { return higherFirst(l.Priority, r.Priority) })
	ssn.AddPreemptableFn(PluginName, func(preemptor *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		return lowerPriority(ssn, preemptor, candidates), false
	})
	ssn.AddJobStarvingFn(PluginName, func(job *api.JobInfo) bool {
		return job.ReadyTaskNum()+job.WaitingTaskNum() < int32(len(job.Tasks))
	})
}

// lowerPriority are the candidates that rank below the preemptor: by job priority between
// jobs, by task priority within its job.
func lowerPriority(ssn *framework.Session, preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	job := ssn.JobFor(preemptor)
	victims := make([]*api.TaskInfo, 0, len(candidates))
	for _, c := range candidates {
		if c.Job != preemptor.Job {
			if other := ssn.JobFor(c); job == nil || other == nil || other.Priority >= job.Priority {
				continue
			}
		} else if c.Priority >= preemptor.Priority {
			continue
		}
		victims = append(victims, c)
	}
	return victims
}

func (priorityPlugin) OnSessionClose(*framework.Session) {}

// higherFirst compares so that the higher priority goes first (negative when l is higher).
func higherFirst(l, r int32) int { return cmp.Compare(r, l) }
