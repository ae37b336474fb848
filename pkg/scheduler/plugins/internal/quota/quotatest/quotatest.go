// Package quotatest builds the queues, PodGroups and pods of the queue plugins' tests, and
// plays the parts of the enqueue and allocate actions that those tests check.
package quotatest

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// Namespace holds every PodGroup and pod the builders make.
const Namespace = "ns"

// Actions are the actions the queue plugins' sessions are configured with: they vote on
// admission (enqueue) and on allocation.
const Actions = "enqueue, allocate"

// Queue is an Open queue of weight 1; capability may be nil.
func Queue(name string, capability corev1.ResourceList) *schedulingv1beta1.Queue {
	return st.MakeQueue().Name(name).Weight(1).Capability(capability).Obj()
}

// PodGroup is a PodGroup in queue with the given phase; minResources may be nil.
func PodGroup(name, queue string, minMember int32, minResources corev1.ResourceList, phase schedulingv1beta1.PodGroupPhase) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Namespace(Namespace).Name(name).Queue(queue).MinMember(minMember).MinResources(minResources).
		Phase(phase).Obj()
}

// Pod is a one-container pod of podGroup requesting requests: Running on node when node is
// set, Pending otherwise.
func Pod(name, podGroup, node string, requests corev1.ResourceList) *corev1.Pod {
	phase := corev1.PodPending
	if node != "" {
		phase = corev1.PodRunning
	}
	return st.MakePod().Namespace(Namespace).Name(name).Group(podGroup).Node(node).Phase(phase).
		Containers(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}).Obj()
}

// Enqueue does what the enqueue action does to one job: admit it when it sets no
// minResources or the plugins vote it enqueueable, then tell them. It reports whether the job
// was admitted.
func Enqueue(ssn *framework.Session, job *api.JobInfo) bool {
	if job.PodGroup.Spec.MinResources != nil && !ssn.JobEnqueueable(job) {
		return false
	}
	ssn.JobEnqueued(job)
	job.Status.Phase = schedulingv1beta1.PodGroupInqueue
	return true
}

// Allocate places the task on the first node (by name) with room for it, when the plugins let
// its queue take it, in a statement of its own that is committed. It returns the node's
// name, or "" when the task was not placed.
func Allocate(ssn *framework.Session, task *api.TaskInfo) string {
	job := ssn.JobFor(task)
	if ssn.Allocatable(ssn.Queues[job.Queue], task) != nil {
		return ""
	}
	for _, node := range ssn.NodeList {
		if !task.InitResreq.LessEqual(node.Idle, api.MissingAsZero) {
			continue
		}
		stmt := ssn.NewStatement()
		if err := stmt.Allocate(task, node); err != nil {
			return ""
		}
		stmt.Commit()
		return node.Name
	}
	return ""
}

// Task returns the task of the named pod.
func Task(ssn *framework.Session, pod string) *api.TaskInfo {
	for _, job := range ssn.Jobs {
		for _, t := range job.Tasks {
			if t.Name == pod {
				return t
			}
		}
	}
	return nil
}

// Job returns the job of the named PodGroup.
func Job(ssn *framework.Session, podGroup string) *api.JobInfo {
	return ssn.Jobs[api.NewJobID(Namespace, podGroup)]
}
