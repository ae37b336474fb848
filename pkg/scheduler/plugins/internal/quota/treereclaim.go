package quota

import (
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// The queue order and reclaim rules of a queue hierarchy. ancestorLevel is capacity's
// ancestorReclaimLevel (upstream v1.15): how many levels above the leaves reclaim also
// weighs the ancestors' deserved shares; 0 weighs the leaves' only.

// CompareQueuesInTree is the queue order with a hierarchy: higher spec.priority first, then
// leaves before the queues above them, then the lower share of the two subtrees the queues
// sit in below the queue they share, so that the team below its share is served before the
// team above it, whatever their leaves' own shares.
func (l *Ledger) CompareQueuesInTree(a, b *api.QueueInfo) int {
	if a.Priority != b.Priority {
		if a.Priority > b.Priority {
			return -1
		}
		return 1
	}
	aLeaf, bLeaf := l.LeafRefusal(a.UID) == "", l.LeafRefusal(b.UID) == ""
	if aLeaf != bLeaf {
		if aLeaf {
			return -1
		}
		return 1
	}
	sa, sb := l.share(a.UID), l.share(b.UID)
	if aLeaf {
		x, y := l.branches(a.UID, b.UID)
		sa, sb = l.share(x), l.share(y)
	}
	switch {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}

// branches are the queues just below the lowest queue a and b share, on a's path and on
// b's; a and b themselves when they share none (one is out of the tree).
func (l *Ledger) branches(a, b api.QueueID) (api.QueueID, api.QueueID) {
	pa, pb := l.pathFromRoot(a), l.pathFromRoot(b)
	if len(pa) == 0 || len(pb) == 0 {
		return a, b
	}
	i := 0
	for i < len(pa) && i < len(pb) && pa[i] == pb[i] {
		i++
	}
	if i == len(pa) || i == len(pb) {
		return a, b // one is above the other
	}
	return pa[i], pb[i]
}

// pathFromRoot is the queue's ancestors from the root down, then the queue; nil when it is
// out of the tree.
func (l *Ledger) pathFromRoot(id api.QueueID) []api.QueueID {
	if !l.tree.InTree(id) {
		return nil
	}
	up := l.tree.Ancestors(id)
	out := make([]api.QueueID, 0, len(up)+1)
	for i := len(up) - 1; i >= 0; i-- {
		out = append(out, up[i])
	}
	return append(out, id)
}

// ancestorAt is the queue depth levels above id (1: its parent), or "" when there is none or
// it is the root: the root is everybody's, so it never decides between two teams.
func (l *Ledger) ancestorAt(id api.QueueID, depth int) api.QueueID {
	up := l.tree.Ancestors(id)
	if depth < 1 || depth > len(up) || up[depth-1] == queuetree.Root {
		return ""
	}
	return up[depth-1]
}

// MayReclaim is the Preemptive rule with a hierarchy: the queue is an Open leaf, it and each
// ancestor but the root have room for the task within their real capability, and the queue
// stays within its deserved share with the task, or, with ancestorLevel, one of its ancestors
// that many levels up (the root aside) does: the team as a whole is owed it.
func (l *Ledger) MayReclaim(ancestorLevel int) func(*api.QueueInfo, *api.TaskInfo) error {
	return func(queue *api.QueueInfo, task *api.TaskInfo) error {
		// Reclaim moves resources between queues, all under the root: the root's total is the
		// same after it, and its real capability (the cluster) is full whenever reclaim is
		// needed, so checking it would refuse every reclaim.
		if err := l.fitsRealCapability(queue, task, false); err != nil {
			return err
		}
		err := l.FitsDeserved(queue, task)
		if err == nil {
			return nil
		}
		for depth := 1; depth <= ancestorLevel; depth++ {
			id := l.ancestorAt(queue.UID, depth)
			if id == "" {
				continue
			}
			a := l.Queues[id]
			wanted := a.Allocated.Clone().Add(task.Resreq)
			if len(wanted.ExceedingWithDimension(a.Deserved, task.Resreq)) == 0 {
				klog.V(3).InfoS("Queue reclaims within its ancestor's deserved share", "queue", queue.Name, "ancestor", id,
					"pod", task.Key())
				return nil
			}
		}
		return err
	}
}

// ReclaimableInTree is the Reclaimable rule with a hierarchy. A candidate may be taken when
// its queue holds more than its deserved share (as without a hierarchy), and no queue from
// its own up to the one it shares with the reclaimer would fall below its guarantee: a
// guarantee holds at every level. With ancestorLevel, each of the candidate's ancestors
// that many levels up (the root aside, and any the reclaimer sits under too) must also hold
// more than its deserved share: a team within its share keeps its pods, however its
// members share them out. Victims taken earlier count at every level.
func (l *Ledger) ReclaimableInTree(ancestorLevel int) func(*api.TaskInfo, []*api.TaskInfo) ([]*api.TaskInfo, bool) {
	return func(reclaimer *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		rq := l.queueOf(reclaimer)
		if rq == nil {
			return nil, false
		}
		reclaimerSide := map[api.QueueID]bool{rq.Info.UID: true}
		for _, a := range l.tree.Ancestors(rq.Info.UID) {
			reclaimerSide[a] = true
		}
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
			if q == nil || !ExceedsIn(allocated(q), q.Deserved) {
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
// the reclaimer, holds more than its deserved share.
func (l *Ledger) ancestorsAboveShare(q *Queue, c *api.TaskInfo, level int, reclaimerSide map[api.QueueID]bool,
	allocated func(*Queue) *api.Resource) bool {
	for depth := 1; depth <= level; depth++ {
		id := l.ancestorAt(q.Info.UID, depth)
		if id == "" || reclaimerSide[id] {
			continue
		}
		a := l.Queues[id]
		if !ExceedsIn(allocated(a), a.Deserved) {
			klog.V(4).InfoS("Reclaim spares a queue whose ancestor is within its deserved share", "pod", c.Key(),
				"queue", q.Info.Name, "ancestor", id, "deserved", a.Deserved, "allocated", allocated(a))
			return false
		}
	}
	return true
}
