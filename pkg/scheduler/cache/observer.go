package cache

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// NodeObserver is the hook for state derived from a node object and the pods on it, kept in
// step with the cache rather than recomputed every cycle. The deviceshare plugin uses it to
// rebuild a node's GPU ledger from the node's device annotation and its pods' assignment
// annotations whenever either changes (DESIGN rule 4: device usage is derived from pods).
//
// Both methods run under the cache mutex, so what an observer keeps is always consistent with
// the next Snapshot. They must be quick and must not call back into the cache.
type NodeObserver interface {
	// NodeChanged runs after the node object or any task on it changed: a pod added, updated
	// or deleted, a bind accepted or undone. node is the cache's own object: read it, never
	// change it. Its Tasks are the node's full set, terminated pods excluded.
	NodeChanged(node *api.NodeInfo)
	// NodeRemoved runs after the node object was deleted (or stopped matching the node
	// selector). Pods still on it are no longer scheduled around.
	NodeRemoved(name string)
}

// AddNodeObserver registers an observer. Call it before Run: nodes already in the cache are
// not replayed.
func (sc *SchedulerCache) AddNodeObserver(o NodeObserver) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.observers = append(sc.observers, o)
}

// nodeChanged tells the observers about a node whose object the cache knows. Called under mu.
func (sc *SchedulerCache) nodeChanged(name string) {
	n := sc.nodes[name]
	if n == nil || n.Node == nil {
		return
	}
	for _, o := range sc.observers {
		o.NodeChanged(n)
	}
}
