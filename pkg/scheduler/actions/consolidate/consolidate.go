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
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "consolidate"

// The action's arguments, under its name in the configuration's configurations:
const (
	// MaxMovesPerCycleArg bounds the pods moved in one cycle (default 8); a job whose moves
	// would pass it gets none.
	MaxMovesPerCycleArg = "maxMovesPerCycle"
	// MaxMovesPerHourArg bounds the pods moved in any hour (default 60; 0: no bound).
	MaxMovesPerHourArg = "maxMovesPerHour"
	// MinPodAgeArg is how long a pod must have run before it may move (a duration such as
	// "10m"; default 0).
	MinPodAgeArg = "minPodAge"
	// QueuesArg, a comma-separated list of queue names, is the queues that take part: only
	// their jobs get moves and only their pods move (default: every queue).
	QueuesArg = "queues"
)

// limits are the arguments as read for one cycle.
type limits struct {
	perCycle, perHour int
	minAge            time.Duration
	queues            map[string]bool
}

// New is the action.
func New() framework.Action { return &action{now: time.Now} }

// action remembers when it moved pods, for the hourly bound; sessions run one at a time.
type action struct {
	now   func() time.Time
	moves []time.Time
}

func (*action) Name() string { return Name }

// Execute gives every starving job its turn, queues in queue order and each queue's jobs in
// job order, as preempt does, within the limits.
func (a *action) Execute(ssn *framework.Session) {
	l := arguments(ssn)
	now := a.now()
	a.moves = slices.DeleteFunc(a.moves, func(t time.Time) bool { return now.Sub(t) >= time.Hour })
	left := l.perCycle
	if l.perHour > 0 {
		left = min(left, l.perHour-len(a.moves))
	}
	// unhelped are pods no moves could make room for since the last moves: a pod every
	// predicate answers alike (the rest of a gang, the next replica) gets the same answer,
	// so with thousands of such pods waiting the search runs once, not for each.
	var unhelped []*api.TaskInfo
	queues, starving := evictsearch.StarvingJobs(ssn)
	for _, queue := range queues {
		if l.queues != nil && !l.queues[queue.Name] {
			continue
		}
		for _, job := range starving[queue.UID] {
			if ssn.Stopping() || left <= 0 {
				return
			}
			moved, refused := forJob(ssn, job, l, now, left, unhelped)
			if moved > 0 {
				unhelped = unhelped[:0]
			} else if refused != nil {
				unhelped = append(unhelped, refused)
			}
			left -= moved
			for range moved {
				a.moves = append(a.moves, now)
			}
		}
	}
}

// arguments reads the action's arguments; a malformed one is reported and leaves its default.
func arguments(ssn *framework.Session) limits {
	l := limits{perCycle: 8, perHour: 60}
	for _, cfg := range ssn.Configurations {
		if cfg.Name != Name {
			continue
		}
		for key, ptr := range map[string]*int{MaxMovesPerCycleArg: &l.perCycle, MaxMovesPerHourArg: &l.perHour} {
			if err := cfg.Arguments.GetInt(ptr, key); err != nil {
				klog.ErrorS(err, "Ignoring a malformed action argument", "action", Name)
			}
		}
		var age, queues string
		if err := cfg.Arguments.GetString(&age, MinPodAgeArg); err != nil {
			klog.ErrorS(err, "Ignoring a malformed action argument", "action", Name)
		}
		if age != "" {
			d, err := time.ParseDuration(age)
			if err != nil || d < 0 {
				klog.ErrorS(err, "Ignoring a malformed action argument: want a duration such as 10m", "action", Name, "key", MinPodAgeArg, "value", age)
			} else {
				l.minAge = d
			}
		}
		if err := cfg.Arguments.GetString(&queues, QueuesArg); err != nil {
			klog.ErrorS(err, "Ignoring a malformed action argument", "action", Name)
		}
		for _, q := range strings.Split(queues, ",") {
			if q = strings.TrimSpace(q); q != "" {
				if l.queues == nil {
					l.queues = map[string]bool{}
				}
				l.queues[q] = true
			}
		}
	}
	return l
}

// forJob makes room for the job's pending tasks in task order, each by the moves the plugins
// find, and keeps the moves only when the whole job is then pipelined and they are at most
// left; it returns how many pods it moved, and the task no moves made room for, if that is
// why it moved none. A task that every predicate answers as one of unhelped is not searched
// for again.
func forJob(ssn *framework.Session, job *api.JobInfo, l limits, now time.Time, left int, unhelped []*api.TaskInfo) (int, *api.TaskInfo) {
	stmt := ssn.NewStatement()
	may := func(t *api.TaskInfo) bool {
		victim := ssn.Jobs[t.Job]
		return movable(victim, t) && oldEnough(t, l.minAge, now) && (l.queues == nil || (victim != nil && l.queues[string(victim.Queue)])) &&
			ssn.MovesAllowed([]*api.TaskInfo{t})
	}
	var moved []*api.TaskInfo
	var rooms []framework.Room
	for _, task := range evictsearch.PendingTasks(ssn, job) {
		if !ssn.JobStarving(job) {
			break
		}
		if err := queueRefusal(ssn, job, task); err != nil {
			klog.V(4).InfoS("Queue refuses the pod; nothing moved", "pod", klog.KRef(task.Namespace, task.Name), "reason", err)
			stmt.Discard()
			return 0, nil
		}
		if slices.ContainsFunc(unhelped, func(u *api.TaskInfo) bool { return sameAsk(ssn, u, task) }) {
			stmt.Discard()
			return 0, nil
		}
		room, ok := ssn.MakeRoom(task, may, func(id api.JobID) int { return budget(ssn.Jobs[id]) })
		if !ok {
			stmt.Discard()
			return 0, task
		}
		if len(moved)+len(room.Moves) > left {
			stmt.Discard()
			return 0, nil
		}
		reason := fmt.Sprintf("%s: moved to free %s on node %s for podgroup %s/%s", Name, room.Device, room.Node.Name, job.Namespace, job.Name)
		for _, m := range room.Moves {
			v := taskOf(ssn, m)
			if v == nil {
				stmt.Discard()
				return 0, nil
			}
			if err := stmt.Evict(v, reason); err != nil {
				klog.V(3).InfoS("A pod to move cannot be evicted", "pod", klog.KRef(v.Namespace, v.Name), "err", err)
				stmt.Discard()
				return 0, nil
			}
			moved = append(moved, v)
		}
		if !ssn.MovesAllowed(moved) || !fits(ssn, task, room.Node) {
			stmt.Discard()
			return 0, nil
		}
		if err := stmt.Pipeline(task, room.Node); err != nil {
			klog.V(3).InfoS("Pipelining onto the room made failed", "pod", klog.KRef(task.Namespace, task.Name), "node", room.Node.Name, "err", err)
			stmt.Discard()
			return 0, nil
		}
		if len(room.Moves) > 0 {
			rooms = append(rooms, room)
		}
	}
	if !ssn.JobPipelined(job) {
		stmt.Discard()
		return 0, nil
	}
	stmt.Commit()
	for _, room := range rooms {
		names := make([]string, len(room.Moves))
		for i, m := range room.Moves {
			names[i] = m.Namespace + "/" + m.Name
		}
		slices.Sort(names)
		msg := fmt.Sprintf("moved %d pods to free %s on node %s: %s", len(room.Moves), room.Device, room.Node.Name, strings.Join(names, ", "))
		klog.V(2).InfoS("Moving pods to free a GPU", "podGroup", klog.KRef(job.Namespace, job.Name), "gpu", room.Device, "node", room.Node.Name, "pods", names)
		ssn.RecordJobEvent(job, corev1.EventTypeNormal, EventReasonConsolidated, msg)
		ssn.Metrics().Consolidated(len(room.Moves))
	}
	return len(moved), nil
}

// sameAsk: the plugins' search answers a and b alike, every predicate answering them alike
// and their resources the same.
func sameAsk(ssn *framework.Session, a, b *api.TaskInfo) bool {
	return a.InitResreq.LessEqual(b.InitResreq, api.MissingAsZero) && b.InitResreq.LessEqual(a.InitResreq, api.MissingAsZero) &&
		ssn.SamePredicates(a, b)
}

// EventReasonConsolidated is the reason of the Normal event on a PodGroup for which pods were
// moved.
const EventReasonConsolidated = "Consolidated"

// oldEnough: the pod has run (or, not started yet, existed) for at least minAge.
func oldEnough(t *api.TaskInfo, minAge time.Duration, now time.Time) bool {
	if minAge <= 0 {
		return true
	}
	started := t.Pod.CreationTimestamp.Time
	if t.Pod.Status.StartTime != nil {
		started = t.Pod.Status.StartTime.Time
	}
	return now.Sub(started) >= minAge
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
