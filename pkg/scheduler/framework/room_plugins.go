package framework

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// The plugins' say on moving pods to make room (the consolidate action): a plugin whose own
// resources are fragmented (GPU memory spread over GPUs that each have too little) says which
// running pods, evicted for their controllers to recreate them in room that is free now,
// leave one node with room for a waiting task.

// RoomAsk is what a RoomFn is asked for a waiting task.
type RoomAsk struct {
	Task *api.TaskInfo
	// Nodes are the session's nodes.
	Nodes []*api.NodeInfo
	// Fits says whether every predicate but the asked plugin's passes for a task on a node:
	// the task and the nodes it might get, or a moved task and the nodes it might go to.
	Fits func(*api.TaskInfo, *api.NodeInfo) bool
	// Movable says whether a running task may move at all; Budget how many of a job's tasks
	// may move and the job stay at its minimum.
	Movable func(*api.TaskInfo) bool
	Budget  func(api.JobID) int
}

// Room is a RoomFn's answer: the node that takes the task once Moves (tasks of the nodes'
// Tasks) are gone, each having room elsewhere that is free now, and the device the room is
// made on, as the plugin names it (a GPU's UUID).
type Room struct {
	Node   *api.NodeInfo
	Device string
	Moves  []*api.TaskInfo
}

// RoomFn finds the fewest moves that make room for ask.Task, which no node takes now for
// the plugin's own resources; found false when none does. abstain: the plugin has no say on
// the task (it asks for none of the plugin's resources).
type RoomFn func(ask RoomAsk) (room Room, found, abstain bool)

// AddRoomFn registers the plugin's search for moves.
func (ssn *Session) AddRoomFn(plugin string, fn RoomFn) {
	ssn.points.room.add(plugin, fn)
}

// MakeRoom is the moves that make room for task, by the first plugin, in tier order, with a
// say on it; false when none has a say or none finds moves. movable and budget are as in
// RoomAsk.
func (ssn *Session) MakeRoom(task *api.TaskInfo, movable func(*api.TaskInfo) bool, budget func(api.JobID) int) (Room, bool) {
	for _, l := range ssn.points.room.chain(ssn.Tiers) {
		plugin := l.plugin
		ask := RoomAsk{Task: task, Nodes: ssn.NodeList, Movable: movable, Budget: budget,
			Fits: func(t *api.TaskInfo, n *api.NodeInfo) bool { return ssn.predicateBesides(plugin, t, n) == nil }}
		if room, found, abstain := l.fn(ask); !abstain {
			return room, found
		}
	}
	return Room{}, false
}

// predicateBesides is Predicate without the plugin's own predicate.
func (ssn *Session) predicateBesides(plugin string, task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	for _, l := range ssn.points.predicate.chain(ssn.Tiers) {
		if l.plugin == plugin {
			continue
		}
		if s := l.fn(task, node); s.Failed() {
			return s
		}
	}
	return nil
}

// MovesAllowed reports whether every victim filter (a PodDisruptionBudget's, say) lets the
// moves all go, whatever tier or eviction flag its plugin has: moving a pod disrupts it as
// evicting it does.
func (ssn *Session) MovesAllowed(moves []*api.TaskInfo) bool {
	return len(filterVictims(ssn.points.moveFilter.chain(ssn.Tiers), moves)) == len(moves)
}
