package api

import corev1 "k8s.io/api/core/v1"

// NodeInfo is a node and the tasks placed on it.
type NodeInfo struct {
	Name string
	Node *corev1.Node

	Allocatable *Resource
	Capacity    *Resource
	// Idle = Allocatable - Used: what a new task can take now.
	Idle *Resource
	// Used by tasks that hold the node (everything but Pipelined).
	Used *Resource
	// Releasing: held by tasks being deleted, free soon.
	Releasing *Resource
	// Pipelined: promised to tasks waiting for Releasing resources.
	Pipelined *Resource

	// Tasks holds the node's own copies, so that a status change elsewhere cannot change
	// what the node accounted.
	Tasks map[TaskID]*TaskInfo

	// Devices holds per-node device state by the name of whoever keeps it (the deviceshare
	// plugin's GPU ledger). The cache derives it from the node and its pods; Clone copies
	// every entry, so that a session's tentative allocations stay in the session.
	Devices map[string]Devices
}

// Devices is device state derived from a node and the pods on it.
type Devices interface {
	// Clone returns a copy that can be changed without changing the original.
	Clone() Devices
	// Reuse readies a copy that a session left as it found it for the next session, which
	// the cache hands it instead of a new clone: what belongs to one session only (a memo of
	// that session's requests) goes.
	Reuse()
}

// NewNodeInfo builds the node's accounting from its allocatable (nil for a node known only
// from its pods).
func NewNodeInfo(node *corev1.Node) *NodeInfo {
	n := &NodeInfo{
		Allocatable: EmptyResource(), Capacity: EmptyResource(), Idle: EmptyResource(),
		Used: EmptyResource(), Releasing: EmptyResource(), Pipelined: EmptyResource(),
		Tasks: map[TaskID]*TaskInfo{},
	}
	if node != nil {
		n.SetNode(node)
	}
	return n
}

// SetNode replaces the node object, recomputing Idle from the new allocatable.
func (n *NodeInfo) SetNode(node *corev1.Node) {
	n.Name = node.Name
	n.Node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Capacity = NewResource(node.Status.Capacity)
	n.Idle = n.Allocatable.Clone().Sub(n.Used)
}

// AddTask accounts a task on the node. Re-adding a task replaces it.
func (n *NodeInfo) AddTask(t *TaskInfo) {
	if old, ok := n.Tasks[t.UID]; ok {
		n.RemoveTask(old)
	}
	c := t.Clone()
	c.NodeName = n.Name
	switch c.Status {
	case Pipelined:
		n.Pipelined.Add(c.Resreq)
	case Releasing:
		n.Releasing.Add(c.Resreq)
		n.Idle.Sub(c.Resreq)
		n.Used.Add(c.Resreq)
	default:
		n.Idle.Sub(c.Resreq)
		n.Used.Add(c.Resreq)
	}
	n.Tasks[c.UID] = c
}

// RemoveTask undoes AddTask; unknown tasks are ignored.
func (n *NodeInfo) RemoveTask(t *TaskInfo) {
	c, ok := n.Tasks[t.UID]
	if !ok {
		return
	}
	switch c.Status {
	case Pipelined:
		n.Pipelined.SubTotal(c.Resreq)
	case Releasing:
		n.Releasing.SubTotal(c.Resreq)
		n.Idle.Add(c.Resreq)
		n.Used.SubTotal(c.Resreq)
	default:
		n.Idle.Add(c.Resreq)
		n.Used.SubTotal(c.Resreq)
	}
	delete(n.Tasks, t.UID)
}

// FutureIdle = Idle + Releasing - Pipelined: what will be free once deletions finish.
func (n *NodeInfo) FutureIdle() *Resource {
	return n.Idle.Clone().Add(n.Releasing).Sub(n.Pipelined)
}

// Clone copies the node's accounting for a session; the node object is shared.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		Name: n.Name, Node: n.Node,
		Allocatable: n.Allocatable.Clone(), Capacity: n.Capacity.Clone(), Idle: n.Idle.Clone(),
		Used: n.Used.Clone(), Releasing: n.Releasing.Clone(), Pipelined: n.Pipelined.Clone(),
		Tasks: make(map[TaskID]*TaskInfo, len(n.Tasks)),
	}
	for uid, t := range n.Tasks {
		c.Tasks[uid] = t // node copies are replaced, never modified, so sharing them is safe
	}
	if n.Devices != nil {
		c.Devices = make(map[string]Devices, len(n.Devices))
		for name, d := range n.Devices {
			c.Devices[name] = d.Clone()
		}
	}
	return c
}
