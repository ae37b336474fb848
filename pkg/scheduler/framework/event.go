package framework

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// Event is a tentative placement (or its undo) as event handlers see it.
type Event struct {
	Task *api.TaskInfo
	Node *api.NodeInfo
	// Err, set by an AllocateFunc, refuses the placement: the statement undoes it.
	Err error
}

// EventHandler keeps a plugin's own session state in step with placements: AllocateFunc
// runs after a task is placed in the session (status, node and job already updated),
// DeallocateFunc after it is taken back (task Pending again; Event.Node is where it was).
type EventHandler struct {
	AllocateFunc   func(*Event)
	DeallocateFunc func(*Event)
}
