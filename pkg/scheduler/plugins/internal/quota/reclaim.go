package quota

import (
	"fmt"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// capacity's reclaim rules, with or without a queue hierarchy. A deserved share speaks only
// for the dimensions it names: a queue that declares vGPUs alone is owed vGPUs, and its
// pods' cpu and memory neither stop it from reclaiming nor make its pods victims (as
// upstream v1.15.1's capacity decides). ancestorLevel is capacity's ancestorReclaimLevel:
// how many levels above the leaves reclaim also weighs the ancestors' deserved shares; 0
// weighs the leaves' only.

// MayReclaim is the Preemptive rule: the queue is an Open leaf with room for the task within
// its own real capability, and it stays within its deserved share with the task in every
// dimension of the task that the share names (one at least), or, with ancestorLevel, one of
// its ancestors that many levels up (the root aside) does: the team as a whole is owed it.
//
// The ancestors' real capabilities are not checked, as upstream: a reclaim inside a capped
// department moves resources between its teams and leaves its total as it is, and the root
// (the cluster) is full whenever reclaim is needed. ReclaimVictims takes the victims from
// under every ancestor that lacks room, so the task then fits them all.
func (l *Ledger) MayReclaim(ancestorLevel int) func(*api.QueueInfo, *api.TaskInfo) error {
	return func(queue *api.QueueInfo, task *api.TaskInfo) error {
		if err := l.fits(queue, task, func(q *Queue) *api.Resource { return q.RealCapability }, "real capability"); err != nil {
			return err
		}
		q := l.Queues[queue.UID]
		err := owedTo(q, q.Allocated, task)
		if err == nil {
			return nil
		}
		for depth := 1; depth <= ancestorLevel; depth++ {
			id := l.ancestorAt(queue.UID, depth)
			if id == "" {
				continue
			}
			a := l.Queues[id]
			if owedTo(a, a.Allocated, task) == nil {
				klog.V(3).InfoS("Queue reclaims within its ancestor's deserved share", "queue", queue.Name, "ancestor", id,
					"pod", task.Key())
				return nil
			}
		}
		return err
	}
}

// owedTo is nil when q, holding allocated, stays within its deserved share with the task in
// every dimension the task asks for and the share names, and the share names one at least;
// else why not.
func owedTo(q *Queue, allocated *api.Resource, task *api.TaskInfo) error {
	named := NamedBy(task.Resreq, q.Deserved)
	if named == nil {
		klog.V(3).InfoS("Queue's deserved share names nothing the task asks for", "pod", task.Key(), "queue", q.Info.Name,
			"request", task.Resreq, "deserved", q.Deserved)
		return fmt.Errorf("queue %s has no deserved share of what the pod asks for", q.Info.Name)
	}
	short := allocated.Clone().Add(task.Resreq).ExceedingWithDimension(q.Deserved, named)
	if len(short) == 0 {
		return nil
	}
	klog.V(3).InfoS("Task does not fit in its queue's deserved share", "pod", task.Key(), "queue", q.Info.Name,
		"insufficient", short, "request", task.Resreq, "allocated", allocated, "deserved", q.Deserved)
	return fmt.Errorf("queue %s has no room for the pod within its deserved share: %s", q.Info.Name, joinNames(short))
}

// ReclaimVictims is the Reclaimable rule. A candidate may be taken when:
//   - it asks for something the reclaimer asks for (a cpu-only pod frees no vGPU);
//   - its queue holds more than its deserved share in a dimension the candidate uses and the
//     share names, or the share names nothing the candidate uses (the queue is owed none of
//     it), counting the victims taken before it;
//   - no queue from its own up to, not including, the first it shares with the reclaimer
//     falls below its guarantee without it: a guarantee holds at every level;
//   - with ancestorLevel, each of its ancestors that many levels up (the root aside, and any
//     the reclaimer sits under too) holds more than its deserved share in the same sense: a
//     team within its share keeps its pods, however its members share them out;
//   - it sits under every ancestor of the reclaimer's queue (the root aside) that has no
//     room for the reclaimer within its real capability: only a victim from inside such a
//     department makes room in it.
func (l *Ledger) ReclaimVictims(ancestorLevel int) func(*api.TaskInfo, []*api.TaskInfo) ([]*api.TaskInfo, bool) {
	return func(reclaimer *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		rq := l.queueOf(reclaimer)
		if rq == nil {
			return nil, false
		}
		reclaimerSide := map[api.QueueID]bool{rq.Info.UID: true}
		for _, a := range l.ancestors(rq.Info.UID) {
			reclaimerSide[a] = true
		}
		within := l.fullAncestor(rq, reclaimer)
		left := map[api.QueueID]*api.Resource{}
		allocated := func(q *Queue) *api.Resource {
			a, ok := left[q.Info.UID]
			if !ok {
				a = q.Allocated.Clone()
				left[q.Info.UID] = a
			}
			return a
		}
		victims := make([]*api.TaskInfo, 0, len(candidates))
		for _, c := range candidates {
			q := l.queueOf(c)
			if q == nil || !sharesDimension(c.Resreq, reclaimer.Resreq) || !aboveShareFor(q, allocated(q), c) {
				continue
			}
			if within != "" && !l.isUnder(q.Info.UID, within) {
				klog.V(4).InfoS("Reclaim spares a pod outside the department that has no room for the reclaimer", "pod", c.Key(),
					"queue", q.Info.Name, "department", within, "reclaimer", reclaimer.Key())
				continue
			}
			// The candidate's queues up to, not including, the first the reclaimer shares:
			// above that the resources stay in the subtree.
			var below []*Queue
			for _, a := range l.chain(q.Info.UID) {
				if reclaimerSide[a.Info.UID] {
					break
				}
				below = append(below, a)
			}
			if !l.keepsGuarantees(below, c, allocated) || !l.ancestorsAboveShare(q, c, ancestorLevel, reclaimerSide, allocated) {
				continue
			}
			for _, a := range below {
				allocated(a).SubTotal(c.Resreq)
			}
			victims = append(victims, c)
		}
		return victims, false
	}
}

// aboveShareFor: q, holding allocated, holds more than its deserved share in a dimension
// the candidate uses and the share names, or the share names none of those.
func aboveShareFor(q *Queue, allocated *api.Resource, c *api.TaskInfo) bool {
	named := NamedBy(c.Resreq, q.Deserved)
	return named == nil || len(allocated.ExceedingWithDimension(q.Deserved, named)) > 0
}

// fullAncestor is the lowest ancestor of q, the root aside, without room for the task within
// its real capability; "" when every one has room or the queues are flat.
func (l *Ledger) fullAncestor(q *Queue, task *api.TaskInfo) api.QueueID {
	for _, a := range l.chain(q.Info.UID)[1:] {
		if a.Info.UID == queuetree.Root {
			break
		}
		if len(a.Allocated.Clone().Add(task.Resreq).ExceedingWithDimension(a.RealCapability, task.Resreq)) > 0 {
			return a.Info.UID
		}
	}
	return ""
}

// isUnder reports whether ancestor is above queue in the tree.
func (l *Ledger) isUnder(queue, ancestor api.QueueID) bool {
	for _, a := range l.ancestors(queue) {
		if a == ancestor {
			return true
		}
	}
	return false
}

// ancestors are the queue's ancestors, its parent first; none for flat queues.
func (l *Ledger) ancestors(id api.QueueID) []api.QueueID {
	if l.tree == nil {
		return nil
	}
	return l.tree.Ancestors(id)
}

// keepsGuarantees: each queue keeps its guarantee without the candidate.
func (l *Ledger) keepsGuarantees(queues []*Queue, c *api.TaskInfo, allocated func(*Queue) *api.Resource) bool {
	for _, a := range queues {
		if !a.Guarantee.LessEqual(allocated(a).Clone().SubTotal(c.Resreq), api.MissingAsZero) {
			klog.V(4).InfoS("Reclaim would take a queue below its guarantee", "pod", c.Key(), "queue", a.Info.Name,
				"guarantee", a.Guarantee, "allocated", allocated(a))
			return false
		}
	}
	return true
}

// ancestorsAboveShare: each ancestor of q up to level levels, unless the root or shared with
// the reclaimer, holds more than its deserved share where the candidate uses it.
func (l *Ledger) ancestorsAboveShare(q *Queue, c *api.TaskInfo, level int, reclaimerSide map[api.QueueID]bool,
	allocated func(*Queue) *api.Resource) bool {
	for depth := 1; depth <= level; depth++ {
		id := l.ancestorAt(q.Info.UID, depth)
		if id == "" || reclaimerSide[id] {
			continue
		}
		a := l.Queues[id]
		if !aboveShareFor(a, allocated(a), c) {
			klog.V(4).InfoS("Reclaim spares a queue whose ancestor is within its deserved share", "pod", c.Key(),
				"queue", q.Info.Name, "ancestor", id, "deserved", a.Deserved, "allocated", allocated(a))
			return false
		}
	}
	return true
}
