// Package queuetree is the hierarchy the Queues' spec.parent fields describe, for a
// scheduler configuration whose queue plugin runs with enableHierarchy: a queue without a
// parent hangs under the root queue, and only a queue without children (a leaf) takes jobs.
//
// A queue whose chain of parents does not reach the root (a parent that does not exist, or
// a cycle) is broken: the tree keeps why, so that the queue can be told and its jobs held
// while every other queue is scheduled as usual. Upstream instead stops all scheduling by its
// capacity plugin until the queues are fixed.
package queuetree

import (
	"fmt"
	"sort"
	"strings"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Root is the name of the queue at the top of the tree. The scheduler creates it when it
// starts; should it be missing later, the tree still has it, with nothing declared on it.
const Root api.QueueID = "root"

// Event reasons of a broken queue.
const (
	// ReasonParentNotFound: the queue's spec.parent names no queue.
	ReasonParentNotFound = "ParentQueueNotFound"
	// ReasonCycle: following spec.parent from the queue comes back to it.
	ReasonCycle = "QueueHierarchyCycle"
)

// Problem is why a queue is broken.
type Problem struct {
	Queue *api.QueueInfo
	// Reason is one of the Reason constants; Message says what is wrong in words that name
	// the queues involved.
	Reason, Message string
}

// Tree is the queue hierarchy of one session.
type Tree struct {
	// parent of every queue that reaches the root; the root has none.
	parent map[api.QueueID]api.QueueID
	// children of each queue, in name order.
	children map[api.QueueID][]api.QueueID
	broken   map[api.QueueID]Problem
}

// Build reads the hierarchy from the queues' spec.parent. A missing or empty parent is the
// root; the root's own spec.parent is not read.
func Build(queues map[api.QueueID]*api.QueueInfo) *Tree {
	t := &Tree{parent: map[api.QueueID]api.QueueID{}, children: map[api.QueueID][]api.QueueID{}, broken: map[api.QueueID]Problem{}}
	parentOf := func(q *api.QueueInfo) api.QueueID {
		if q.Parent == "" {
			return Root
		}
		return q.Parent
	}
	ids := make([]api.QueueID, 0, len(queues))
	for id := range queues {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if _, placed := t.parent[id]; placed || id == Root {
			continue
		}
		if _, bad := t.broken[id]; bad {
			continue
		}
		// Walk up until the root, a queue already placed, or a fault.
		path := []api.QueueID{id}
		onPath := map[api.QueueID]int{id: 0}
		var fault *Problem
		for cur := id; ; {
			p := parentOf(queues[cur])
			if p == Root {
				break
			}
			if _, placed := t.parent[p]; placed {
				break
			}
			if prob, bad := t.broken[p]; bad {
				fault = &Problem{Reason: prob.Reason, Message: fmt.Sprintf("its ancestor queue %s is broken: %s", p, prob.Message)}
				break
			}
			if _, exists := queues[p]; !exists {
				fault = &Problem{Reason: ReasonParentNotFound,
					Message: fmt.Sprintf("queue %s names parent queue %s, which does not exist", cur, p)}
				break
			}
			if i, seen := onPath[p]; seen {
				cycle := append(append([]api.QueueID{}, path[i:]...), p)
				names := make([]string, len(cycle))
				for k, q := range cycle {
					names[k] = string(q)
				}
				fault = &Problem{Reason: ReasonCycle, Message: "spec.parent forms a cycle: " + strings.Join(names, " -> ")}
				break
			}
			onPath[p] = len(path)
			path = append(path, p)
			cur = p
		}
		for _, q := range path {
			if fault != nil {
				t.broken[q] = Problem{Queue: queues[q], Reason: fault.Reason, Message: fault.Message}
			} else {
				t.parent[q] = parentOf(queues[q])
			}
		}
	}
	for _, id := range ids {
		if p, ok := t.parent[id]; ok {
			t.children[p] = append(t.children[p], id)
		}
	}
	for _, c := range t.children {
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	}
	return t
}

// Broken reports why the queue does not reach the root, if it does not.
func (t *Tree) Broken(q api.QueueID) (Problem, bool) {
	p, ok := t.broken[q]
	return p, ok
}

// Problems are the broken queues, in name order.
func (t *Tree) Problems() []Problem {
	out := make([]Problem, 0, len(t.broken))
	for _, p := range t.broken {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue.Name < out[j].Queue.Name })
	return out
}

// Ancestors are the queues above q, its parent first and the root last; none for the root
// or a broken queue.
func (t *Tree) Ancestors(q api.QueueID) []api.QueueID {
	var out []api.QueueID
	for p, ok := t.parent[q]; ok; p, ok = t.parent[p] {
		out = append(out, p)
	}
	return out
}

// Children are the queues whose parent is q, in name order.
func (t *Tree) Children(q api.QueueID) []api.QueueID { return t.children[q] }

// InTree reports whether q is the root or a queue that reaches it.
func (t *Tree) InTree(q api.QueueID) bool {
	_, ok := t.parent[q]
	return ok || q == Root
}

// LeafRefusal says why a job in queue q cannot be scheduled, or "" when q is a leaf of the
// tree: the root never takes jobs, nor does a queue with children (upstream's admission
// webhook words, which its users know), nor a broken queue.
func (t *Tree) LeafRefusal(q api.QueueID) string {
	if q == Root {
		return "can not submit job to root queue"
	}
	if p, bad := t.broken[q]; bad {
		return fmt.Sprintf("queue `%s` is not in the queue hierarchy: %s", q, p.Message)
	}
	if n := len(t.children[q]); n > 0 {
		return fmt.Sprintf("can only submit job to leaf queue, queue `%s` has %d child queues", q, n)
	}
	return ""
}
