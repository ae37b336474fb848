package quota

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// The queue order of a queue hierarchy, and the ancestors reclaim weighs (reclaim.go).

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
	x, y := a.UID, b.UID
	if aLeaf {
		x, y = l.branches(a.UID, b.UID)
	}
	return l.compareShares(x, y)
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

// ancestorAt is the queue depth levels above id (1: its parent), or "" when there is none
// (flat queues have none) or it is the root: the root is everybody's, so it never decides between two teams.
func (l *Ledger) ancestorAt(id api.QueueID, depth int) api.QueueID {
	up := l.ancestors(id)
	if depth < 1 || depth > len(up) || up[depth-1] == queuetree.Root {
		return ""
	}
	return up[depth-1]
}

// VictimQueueOrder is the victim queue order with a hierarchy, as upstream's capacity has
// it: the pods of the queue that shares a lower ancestor with the preemptor's go first, so
// a team takes back from its own department before another's; 0 when both share the same.
func (l *Ledger) VictimQueueOrder(a, b, preemptor *api.QueueInfo) int {
	da, db := l.sharedDepth(a.UID, preemptor.UID), l.sharedDepth(b.UID, preemptor.UID)
	switch {
	case da > db:
		return -1
	case da < db:
		return 1
	}
	return 0
}

// sharedDepth is how many queues the paths from the root to a and to b share.
func (l *Ledger) sharedDepth(a, b api.QueueID) int {
	pa, pb := l.pathFromRoot(a), l.pathFromRoot(b)
	n := 0
	for n < len(pa) && n < len(pb) && pa[n] == pb[n] {
		n++
	}
	return n
}
