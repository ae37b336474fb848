// Package gang makes a PodGroup all-or-nothing. A job is dispatched only when at least
// spec.minMember of its pods, and spec.minTaskMember of each role, have a place; at session
// close its PodGroup gets a condition saying whether it is scheduled and, if not, why.
//
// The counting rules (ready, pipelined, valid, per-role checks) live on api.JobInfo; this
// plugin turns them into session votes and PodGroup conditions.
//
// For preempt and reclaim, a job is starving while fewer than minMember of its pods have a
// place, and a running job gives up victims only down to its minMember: a gang is never cut
// below its minimum (where the plugin's enablePreemptable, enableReclaimable is on). Its
// roles' minTaskMember do not count there, as in upstream's gang plugin: a VolcanoJob may lose
// its only ps while minMember pods stay (TestEvictionKeepsMinMemberNotRoles). The gang
// actions, gangpreempt and gangreclaim, leave that rule out: they take a job's surplus first,
// each role kept at its minTaskMember, and a whole job only when the surplus cannot make room.
//
// Not done yet: upstream's metrics volcano_job_retry_counts, volcano_unschedule_task_count and
// volcano_unschedule_job_count (there is no scheduler metrics package).
package gang

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "gang"

// Strings users and tools read; upstream writes the same (golden in gang_test.go).
const (
	// ScheduledReason is the reason of the Scheduled condition of a ready job.
	ScheduledReason = "tasks in gang are ready to be scheduled"
	// notEnoughPodsOfTaskMessage explains a JobValid failure with reason NotEnoughPodsOfTask.
	notEnoughPodsOfTaskMessage = "Not enough valid pods of each task for gang-scheduling"
	// notEnoughTasksFormat explains a JobValid failure with reason NotEnoughTasks:
	// the valid task count, then minMember.
	notEnoughTasksFormat = "Not enough valid tasks for gang-scheduling, valid: %d, min: %d"
	// unschedulableFormat is the Unschedulable condition's message: the tasks still missing
	// for the gang, all tasks, and the job's FitError.
	unschedulableFormat = "%d/%d tasks in gang unschedulable: %s"
)

type gangPlugin struct{}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin. It takes no arguments; any given are ignored, as upstream.
func New(conf.Arguments) (framework.Plugin, error) { return gangPlugin{}, nil }

func (gangPlugin) Name() string { return PluginName }

func (gangPlugin) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobValidFn(PluginName, validate)
	ssn.AddJobReadyFn(PluginName, func(job *api.JobInfo) bool { return job.CheckTaskReady() && job.IsReady() })
	ssn.AddJobPipelinedFn(PluginName, pipelined)
	ssn.AddJobOrderFn(PluginName, notReadyFirst)
	ssn.AddPreemptableFn(PluginName, func(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		return aboveMinimum(ssn, candidates), false
	})
	ssn.AddReclaimableFn(PluginName, func(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		return aboveMinimum(ssn, candidates), false
	})
	ssn.AddVictimSetFn(PluginName, func(victims []*api.TaskInfo) bool { return keepMinimum(ssn, victims) })
	// gangpreempt and gangreclaim keep victim jobs at their minimum by bundles of their own.
	ssn.KeepsJobMinimum(PluginName)
	ssn.AddJobStarvingFn(PluginName, func(job *api.JobInfo) bool { return job.IsStarving() })
}

// aboveMinimum are the candidates whose jobs have more than minMember ready pods: each may
// go, and keepMinimum says how many of a job's may go together. Cutting the candidates here
// to as many per job as it can spare, in candidate order, would choose for the plugins that
// pick victims by where they sit (deviceshare frees a GPU): a job's pods on the GPU that could
// be freed would be dropped for others on GPUs that cannot.
func aboveMinimum(ssn *framework.Session, candidates []*api.TaskInfo) []*api.TaskInfo {
	victims := make([]*api.TaskInfo, 0, len(candidates))
	for _, c := range candidates {
		if job := ssn.JobFor(c); job != nil && job.ReadyTaskNum() > job.MinAvailable {
			victims = append(victims, c)
		}
	}
	return victims
}

// keepMinimum: every job keeps minMember ready pods without the victims.
func keepMinimum(ssn *framework.Session, victims []*api.TaskInfo) bool {
	taken := map[api.JobID]int32{}
	for _, v := range victims {
		job := ssn.JobFor(v)
		if job == nil {
			continue
		}
		taken[job.UID]++
		if job.ReadyTaskNum()-taken[job.UID] < job.MinAvailable {
			return false
		}
	}
	return true
}

// validate rejects a job that cannot reach its gang minimum even if every task that may
// still run were placed: too few pods of some role, or too few pods in all.
func validate(job *api.JobInfo) *framework.ValidateResult {
	if !job.CheckTaskValid() {
		return &framework.ValidateResult{
			Reason:  schedulingv1beta1.NotEnoughPodsOfTaskReason,
			Message: notEnoughPodsOfTaskMessage,
		}
	}
	if valid := job.ValidTaskNum(); valid < job.MinAvailable {
		return &framework.ValidateResult{
			Reason:  schedulingv1beta1.NotEnoughPodsReason,
			Message: fmt.Sprintf(notEnoughTasksFormat, valid, job.MinAvailable),
		}
	}
	return nil
}

// pipelined permits keeping a job's tentative placements when, counting the tasks that wait
// for resources being released, the gang would be complete; otherwise it rejects, so that a
// partial gang never holds resources.
func pipelined(job *api.JobInfo) int {
	if job.CheckTaskPipelined() && job.IsPipelined() {
		return framework.Permit
	}
	return framework.Reject
}

// notReadyFirst puts jobs still short of their gang minimum before ready ones, so that
// completing a gang comes before growing one that can already run.
func notReadyFirst(l, r *api.JobInfo) int {
	lReady, rReady := l.IsReady(), r.IsReady()
	switch {
	case lReady == rReady:
		return 0
	case lReady:
		return 1
	default:
		return -1
	}
}

// OnSessionClose writes each job's gang condition: Scheduled when its minimum is placed,
// Unschedulable with the reason otherwise. A condition replaces the one of the same type,
// so an earlier Unschedulable stays beside a later Scheduled, as upstream.
//
// It also keeps upstream's gang metrics: volcano_unschedule_task_count and
// volcano_job_retry_counts per unready job (labelled with the PodGroup name, as upstream),
// and volcano_unschedule_job_count.
func (gangPlugin) OnSessionClose(ssn *framework.Session) {
	now := metav1.Now()
	unreadyJobs := 0
	for _, job := range ssn.Jobs {
		// A job without pods (a VolcanoJob before its controller creates them), or a gang whose
		// pods are still arriving, has nothing to explain yet.
		if len(job.Tasks) == 0 || job.Arriving(now.Time) {
			continue
		}
		cond, unready := gangCondition(job, ssn.UID, now)
		if cond.Type == schedulingv1beta1.PodGroupUnschedulableType {
			klog.V(3).InfoS("Gang unschedulable", "podGroup", klog.KRef(job.Namespace, job.Name), "message", cond.Message)
			unreadyJobs++
			ssn.Metrics().GangUnready(job.Name, unready)
		}
		ssn.UpdatePodGroupCondition(job, cond)
	}
	ssn.Metrics().UnreadyJobs(unreadyJobs)
}

// gangCondition is the condition the job's PodGroup gets from this session, and how many
// more tasks the gang needs placed (0 when it is ready).
func gangCondition(job *api.JobInfo, session types.UID, now metav1.Time) (schedulingv1beta1.PodGroupCondition, int32) {
	cond := schedulingv1beta1.PodGroupCondition{
		Status:             corev1.ConditionTrue,
		TransitionID:       string(session),
		LastTransitionTime: now,
	}
	if job.IsReady() {
		cond.Type = schedulingv1beta1.PodGroupScheduled
		cond.Reason = ScheduledReason
		return cond, 0
	}
	unready := job.MinAvailable - schedulableTaskNum(job)
	cond.Type = schedulingv1beta1.PodGroupUnschedulableType
	cond.Reason = schedulingv1beta1.NotEnoughResourcesReason
	cond.Message = fmt.Sprintf(unschedulableFormat, unready, len(job.Tasks), job.FitError())
	return cond, unready
}

// schedulableTaskNum counts the tasks that have or found a place: ready ones, and pending
// ones a discarded statement had allocated (they fit; the rest of the gang did not).
func schedulableTaskNum(job *api.JobInfo) int32 {
	n := job.ReadyTaskNum()
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if t.LastTransaction != nil && api.AllocatedStatus(t.LastTransaction.Status) {
			n++
		}
	}
	return n
}
