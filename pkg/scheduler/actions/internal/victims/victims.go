// Package victims is what preempt and reclaim share: the starving jobs that may evict, and
// for each pending task of one, a node where evicting some of the pods the plugins allow
// makes room, those evictions and the task pipelined onto the node's releasing resources
// kept in the job's statement only when the whole job is then pipelined.
//
// Unlike upstream, evictions are tried in a statement of their own per node and kept only
// when the task then fits there (resources and every predicate): a task that would still not
// fit evicts nothing.
package victims

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/priorityqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// Chooser is the plugins' say on which candidates may go: Session.Preemptable or
// Session.Reclaimable.
type Chooser func(preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo

// ForJob lets the job's pending tasks, in task order and while the job is starving, each make
// room by Search (filter, choose and reason as there). mayEvict, when set, is asked first for
// each task; its refusal ends the job's turn. The evictions stand only if the job is then
// pipelined (its whole gang has a place): otherwise nothing is evicted.
func ForJob(ssn *framework.Session, job *api.JobInfo, mayEvict func(*api.TaskInfo) error,
	filter func(*api.TaskInfo) bool, choose Chooser, reason string) {
	stmt := ssn.NewStatement()
	for _, task := range PendingTasks(ssn, job) {
		if !ssn.JobStarving(job) {
			break
		}
		if mayEvict != nil {
			if err := mayEvict(task); err != nil {
				klog.V(3).InfoS("Pod may not evict", "pod", klog.KRef(task.Namespace, task.Name), "action", reason, "reason", err)
				break
			}
		}
		Search(ssn, stmt, task, filter, choose, reason)
	}
	if ssn.JobPipelined(job) {
		stmt.Commit()
		return
	}
	klog.V(3).InfoS("Evictions would not let the job run; nothing evicted", "podGroup", klog.KRef(job.Namespace, job.Name), "action", reason)
	stmt.Discard()
}

// Search makes room for preemptor on one node, by evicting candidates that filter accepts
// and choose allows, in victim order until it fits, or those a plugin's SelectVictims picks
// among them (deviceshare for a vGPU pod: the GPUs it will use decide), in its order; reason
// is what the victims' Evict events say. It returns whether the task was pipelined (its
// evictions then stand in stmt).
func Search(ssn *framework.Session, stmt *framework.Statement, preemptor *api.TaskInfo,
	filter func(*api.TaskInfo) bool, choose Chooser, reason string) bool {
	if p := preemptor.Pod.Spec.PreemptionPolicy; p != nil && *p == corev1.PreemptNever {
		return false
	}
	if err := ssn.PrePredicate(preemptor); err != nil {
		return false
	}
	for _, node := range candidateNodes(ssn, preemptor) {
		candidates := evictable(ssn, node, filter)
		if len(candidates) == 0 {
			continue
		}
		chosen := choose(preemptor, candidates)
		metrics.PreemptionVictims.Set(float64(len(chosen)))
		if len(chosen) == 0 || !enough(preemptor, node, chosen) {
			continue
		}
		metrics.PreemptionAttempts.Inc()
		order(ssn, chosen)
		if selected, ok := ssn.SelectVictims(preemptor, node, chosen); ok {
			chosen = selected
		}
		try := ssn.NewStatement()
		room := fits(ssn, preemptor, node)
		for _, v := range chosen {
			if room {
				break
			}
			if err := try.Evict(v, reason); err != nil {
				klog.V(3).InfoS("Victim cannot be evicted", "pod", klog.KRef(v.Namespace, v.Name), "err", err)
				continue
			}
			room = fits(ssn, preemptor, node)
		}
		if !room {
			try.Discard()
			continue
		}
		if err := try.Pipeline(preemptor, node); err != nil {
			klog.V(3).InfoS("Pipelining the preemptor failed", "pod", klog.KRef(preemptor.Namespace, preemptor.Name), "node", node.Name, "err", err)
			try.Discard()
			continue
		}
		stmt.Merge(try)
		return true
	}
	return false
}

// candidateNodes are the nodes the task could use once pods leave them: those whose only
// objection is a resolvable one (too little room now), best scored first.
func candidateNodes(ssn *framework.Session, task *api.TaskInfo) []*api.NodeInfo {
	type scored struct {
		node  *api.NodeInfo
		score float64
	}
	var nodes []scored
	for _, n := range ssn.NodeList {
		if s := ssn.Predicate(task, n); s != nil && s.Code != api.Unschedulable {
			continue
		}
		nodes = append(nodes, scored{n, ssn.NodeOrder(task, n)})
	}
	slices.SortStableFunc(nodes, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.node.Name, b.node.Name))
	})
	out := make([]*api.NodeInfo, len(nodes))
	for i, s := range nodes {
		out[i] = s.node
	}
	return out
}

// evictable are the session's tasks on node that may be victims at all: running or bound,
// asking for something, not marked volcano.sh/preemptable: "false", and accepted by filter.
func evictable(ssn *framework.Session, node *api.NodeInfo, filter func(*api.TaskInfo) bool) []*api.TaskInfo {
	var out []*api.TaskInfo
	for uid, nt := range node.Tasks {
		job := ssn.Jobs[nt.Job]
		if job == nil {
			continue
		}
		t := job.Tasks[uid]
		if t == nil || (t.Status != api.Running && t.Status != api.Bound) || !t.Preemptable || t.Resreq.IsEmpty() || !filter(t) {
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *api.TaskInfo) int { return cmp.Compare(a.UID, b.UID) })
	return out
}

// enough: the node's future idle and every chosen victim together cover the task.
func enough(task *api.TaskInfo, node *api.NodeInfo, chosen []*api.TaskInfo) bool {
	room := node.FutureIdle()
	for _, v := range chosen {
		room.Add(v.Resreq)
	}
	return task.InitResreq.LessEqual(room, api.MissingAsZero)
}

// fits: the task can be pipelined onto the node now, its resources released or free and
// every predicate passing.
func fits(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) bool {
	return task.InitResreq.LessEqual(node.FutureIdle(), api.MissingAsZero) && ssn.Predicate(task, node) == nil
}

// order sorts victims lowest first: of different jobs, the job that goes last in job order
// first; of one job, the task that goes last in task order first.
func order(ssn *framework.Session, victims []*api.TaskInfo) {
	byTask, byJob := compareBy(ssn.TaskOrderFn), compareBy(ssn.JobOrderFn)
	slices.SortStableFunc(victims, func(l, r *api.TaskInfo) int {
		// Reversed: what is scheduled last is evicted first.
		if l.Job == r.Job {
			return byTask(r, l)
		}
		return byJob(ssn.Jobs[r.Job], ssn.Jobs[l.Job])
	})
}

// StarvingJobs are the admitted, valid, starving jobs with pending tasks, by queue; queues
// in queue order, each queue's jobs in job order.
func StarvingJobs(ssn *framework.Session) ([]*api.QueueInfo, map[api.QueueID][]*api.JobInfo) {
	byQueue := map[api.QueueID][]*api.JobInfo{}
	order := priorityqueue.New(ssn.QueueOrderFn)
	for _, job := range ssn.Jobs {
		if job.IsPending() || len(job.TaskStatusIndex[api.Pending]) == 0 {
			continue
		}
		if res := ssn.JobValid(job); res != nil {
			continue
		}
		queue := ssn.Queues[job.Queue]
		if queue == nil || !ssn.JobStarving(job) {
			continue
		}
		if _, ok := byQueue[queue.UID]; !ok {
			order.Push(queue)
		}
		byQueue[queue.UID] = append(byQueue[queue.UID], job)
	}
	var queues []*api.QueueInfo
	for order.Len() > 0 {
		q := order.Pop()
		queues = append(queues, q)
		jobs := byQueue[q.UID]
		slices.SortStableFunc(jobs, compareBy(ssn.JobOrderFn))
	}
	return queues, byQueue
}

// PendingTasks are the job's tasks waiting for a node, in task order; gated and best-effort
// ones are not preemptors.
func PendingTasks(ssn *framework.Session, job *api.JobInfo) []*api.TaskInfo {
	var tasks []*api.TaskInfo
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !t.SchGated && !t.BestEffort {
			tasks = append(tasks, t)
		}
	}
	slices.SortStableFunc(tasks, compareBy(ssn.TaskOrderFn))
	return tasks
}

// compareBy turns a session order ("l goes first") into a comparison for sorting.
func compareBy[T any](first func(l, r T) bool) func(l, r T) int {
	return func(l, r T) int {
		switch {
		case first(l, r):
			return -1
		case first(r, l):
			return 1
		}
		return 0
	}
}
