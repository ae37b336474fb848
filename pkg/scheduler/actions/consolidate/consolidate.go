// Package consolidate is the action that moves running pods to make room for a job that
// waits only because its devices are fragmented: each GPU has some free memory, none enough
// for the job's pod, though the cluster's free memory would hold it. A plugin that owns the
// devices (deviceshare, framework.RoomFn) finds the fewest pods whose going leaves one GPU
// with room, each of them having room elsewhere that is free now; this action says which
// pods may move, evicts them and pipelines the job onto the room they leave, all in one
// statement that stands only if the whole job is then pipelined. The moved pods' controllers
// recreate them, and allocate places the new pods as any other; the job is bound by a later
// cycle's allocate once the moved pods are gone (their devices stay booked until then, as a
// preemption victim's).
//
// A pod may move when a controller recreates it (its controller is a ReplicaSet or a
// StatefulSet), neither it nor its PodGroup is volcano.sh/preemptable: "false", every victim
// filter allows it (a PodDisruptionBudget, where the pdb plugin is on), and its job stays at
// its minimum: a gang (minMember above 1) loses at most its pods above minMember; a job of
// minMember 1 or 0 is a pod on its own (a Deployment's), whose replacement is a job of its
// own. A bare pod, or a Volcano Job's, never moves.
//
// The name is not Volcano's shuffle: that action evicts what the rescheduling plugin picks by
// node utilisation, whatever its pods' devices; a conf naming it would get moves it never
// asked for. Naming consolidate is opting in.
package consolidate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "consolidate"

// New is the action.
func New() framework.Action { return action{} }

type action struct{}

func (action) Name() string { return Name }

// Execute gives every starving job its turn, queues in queue order and each queue's jobs in
// job order, as preempt does.
func (action) Execute(ssn *framework.Session) {
	queues, starving := evictsearch.StarvingJobs(ssn)
	for _, queue := range queues {
		for _, job := range starving[queue.UID] {
			if ssn.Stopping() {
				return
			}
			forJob(ssn, job)
		}
	}
}

// forJob makes room for the job's pending tasks in task order, each by the moves the plugins
// find, and keeps the moves only when the whole job is then pipelined.
func forJob(ssn *framework.Session, job *api.JobInfo) {
	stmt := ssn.NewStatement()
	var moved []*api.TaskInfo
	for _, task := range evictsearch.PendingTasks(ssn, job) {
		if !ssn.JobStarving(job) {
			break
		}
		if err := queueRefusal(ssn, job, task); err != nil {
			klog.V(4).InfoS("Queue refuses the pod; nothing moved", "pod", klog.KRef(task.Namespace, task.Name), "reason", err)
			stmt.Discard()
			return
		}
		room, ok := ssn.MakeRoom(task, func(t *api.TaskInfo) bool { return movable(ssn.Jobs[t.Job], t) },
			func(id api.JobID) int { return budget(ssn.Jobs[id]) })
		if !ok {
			stmt.Discard()
			return
		}
		for _, m := range room.Moves {
			v := taskOf(ssn, m)
			if v == nil {
				stmt.Discard()
				return
			}
			if err := stmt.Evict(v, Name); err != nil {
				klog.V(3).InfoS("A pod to move cannot be evicted", "pod", klog.KRef(v.Namespace, v.Name), "err", err)
				stmt.Discard()
				return
			}
			moved = append(moved, v)
		}
		if !ssn.MovesAllowed(moved) || !fits(ssn, task, room.Node) {
			stmt.Discard()
			return
		}
		if err := stmt.Pipeline(task, room.Node); err != nil {
			klog.V(3).InfoS("Pipelining onto the room made failed", "pod", klog.KRef(task.Namespace, task.Name), "node", room.Node.Name, "err", err)
			stmt.Discard()
			return
		}
	}
	if !ssn.JobPipelined(job) {
		stmt.Discard()
		return
	}
	if len(moved) > 0 {
		klog.V(2).InfoS("Moving pods to make room", "podGroup", klog.KRef(job.Namespace, job.Name), "moved", len(moved))
	}
	stmt.Commit()
}

// movable: a controller recreates the pod (ReplicaSet, StatefulSet) and neither it nor its
// PodGroup is marked volcano.sh/preemptable: "false".
func movable(job *api.JobInfo, t *api.TaskInfo) bool {
	if t.Pod == nil || !t.Preemptable || job == nil || !job.Preemptable() {
		return false
	}
	owner := metav1.GetControllerOf(t.Pod)
	return owner != nil && owner.APIVersion == "apps/v1" && (owner.Kind == "ReplicaSet" || owner.Kind == "StatefulSet")
}

// budget is how many of the job's pods may move: a gang's placed pods above minMember (and
// no more than any role's above its minTaskMember); every pod of a job of minMember 1 or 0.
func budget(job *api.JobInfo) int {
	if job == nil {
		return 0
	}
	ready := int(job.ReadyTaskNum())
	if job.MinAvailable <= 1 {
		return ready
	}
	n := ready - int(job.MinAvailable)
	for _, surplus := range job.RoleSurplus() {
		n = min(n, int(surplus))
	}
	return max(n, 0)
}

// taskOf is the session's task for a task of a node.
func taskOf(ssn *framework.Session, t *api.TaskInfo) *api.TaskInfo {
	if job := ssn.Jobs[t.Job]; job != nil {
		return job.Tasks[t.UID]
	}
	return nil
}

// fits: with the moved pods releasing, the node takes the task (its resources and every
// predicate).
func fits(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) bool {
	return node != nil && task.InitResreq.LessEqual(node.FutureIdle(), api.MissingAsZero) && ssn.Predicate(task, node) == nil
}

// queueRefusal is why the job's queue cannot take the task now; nil when it can.
func queueRefusal(ssn *framework.Session, job *api.JobInfo, task *api.TaskInfo) error {
	queue := ssn.Queues[job.Queue]
	if queue == nil {
		return nil
	}
	return ssn.Allocatable(queue, task)
}
