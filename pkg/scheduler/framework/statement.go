package framework

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Statement groups tentative placements and evictions of one job. Each changes the session
// at once (so later decisions see it); Discard undoes them exactly, in reverse, and Commit
// sends the evictions to the evictor and the allocations to the binder. Nothing reaches the
// API server before Commit.
type Statement struct {
	ssn *Session
	ops []operation
}

type opKind int

const (
	opAllocate opKind = iota
	opPipeline
	opEvict
)

type operation struct {
	kind opKind
	task *api.TaskInfo
	node *api.NodeInfo
	// For an eviction: the status the victim had (Running or Bound) and why it goes.
	was    api.TaskStatus
	reason string
}

// ErrRoomReleasing is what an event handler answers (wrapped or not) when a task placed as
// Allocated would fit its node only once the node's releasing tasks are gone, as a vGPU pod
// whose GPUs are held by victims being evicted: the caller may pipeline it instead.
var ErrRoomReleasing = errors.New("the node has room only once its releasing pods are gone")

// NewStatement opens a statement on the session.
func (ssn *Session) NewStatement() *Statement { return &Statement{ssn: ssn} }

// Allocate places the task on the node, which must have room now.
func (s *Statement) Allocate(task *api.TaskInfo, node *api.NodeInfo) error {
	if err := s.ssn.place(task, node, api.Allocated); err != nil {
		return err
	}
	s.ops = append(s.ops, operation{kind: opAllocate, task: task, node: node})
	return nil
}

// Pipeline promises the task the node's resources that are being released.
func (s *Statement) Pipeline(task *api.TaskInfo, node *api.NodeInfo) error {
	if err := s.ssn.place(task, node, api.Pipelined); err != nil {
		return err
	}
	s.ops = append(s.ops, operation{kind: opPipeline, task: task, node: node})
	return nil
}

// Evict marks a running (or bound) task as releasing: it stays on its node, its resources
// counted as Releasing there, so a task can be pipelined onto them; the event handlers see it
// go (DeallocateFunc, task Releasing), as queue and job shares no longer count it.
func (s *Statement) Evict(victim *api.TaskInfo, reason string) error {
	job := s.ssn.JobFor(victim)
	if job == nil {
		return fmt.Errorf("evict %s: job %s is not in the session", victim.Key(), victim.Job)
	}
	node := s.ssn.Nodes[victim.NodeName]
	if node == nil {
		return fmt.Errorf("evict %s: node %q is not in the session", victim.Key(), victim.NodeName)
	}
	if victim.Status != api.Running && victim.Status != api.Bound {
		return fmt.Errorf("evict %s: the pod is %s, not Running or Bound", victim.Key(), victim.Status)
	}
	was := victim.Status
	job.UpdateTaskStatus(victim, api.Releasing)
	s.ssn.touch(node)
	node.AddTask(victim)
	s.ssn.deallocated(victim, node)
	s.ops = append(s.ops, operation{kind: opEvict, task: victim, node: node, was: was, reason: reason})
	return nil
}

// Merge moves other's operations to the end of s, as if they had been made through s: an
// action tries evictions in a statement of their own and keeps them only if they serve.
func (s *Statement) Merge(other *Statement) {
	s.ops = append(s.ops, other.ops...)
	other.ops = nil
}

// Unevict gives back a victim the statement evicted, whatever operations came after, and
// reports whether it had: a search that evicted more than its preemptor turned out to need
// keeps only the victims it cannot do without. Evictions of different pods change the session
// independently (each its task's status, its node's releasing sum, the handlers' records of
// it), so one undone out of turn leaves the session as if it had not been made; a placement
// onto the victim's room made after it is the caller's to undo first.
func (s *Statement) Unevict(victim *api.TaskInfo) bool {
	for i, op := range s.ops {
		if op.kind == opEvict && op.task == victim {
			s.ops = slices.Delete(s.ops, i, i+1)
			s.ssn.unevict(op)
			return true
		}
	}
	return false
}

// unevict undoes Evict: the victim has its old status on its node again, and the event
// handlers see it come back (AllocateFunc, in registration order; an undo cannot be refused).
func (ssn *Session) unevict(op operation) {
	if job := ssn.JobFor(op.task); job != nil {
		job.UpdateTaskStatus(op.task, op.was)
	}
	ssn.touch(op.node)
	op.node.AddTask(op.task)
	ev := &Event{Task: op.task, Node: op.node}
	for _, h := range ssn.eventHandlers {
		if h.AllocateFunc != nil {
			h.AllocateFunc(ev)
		}
	}
}

// Discard undoes every operation, last first. The tasks placed keep where they were put as
// their LastTransaction, so that their status can say where they would fit.
func (s *Statement) Discard() {
	for i := len(s.ops) - 1; i >= 0; i-- {
		op := s.ops[i]
		if op.kind == opEvict {
			s.ssn.unevict(op)
			continue
		}
		op.task.LastTransaction = &api.TransactionContext{NodeName: op.node.Name, Status: op.task.Status}
		s.ssn.unplace(op.task, op.node)
	}
	s.ops = nil
}

// Commit sends the evictions to the evictor, then the allocations to the binder; pipelined
// tasks stay in the session only, to be placed in a later cycle once their node has room.
// An eviction or allocation the cache refuses is undone.
func (s *Statement) Commit() {
	for _, op := range s.ops {
		if op.kind != opEvict {
			continue
		}
		if err := s.ssn.cache.Evict(op.task, op.reason); err != nil {
			klog.ErrorS(err, "Evict refused; undoing the eviction", "pod", op.task.Key(), "node", op.node.Name)
			s.ssn.unevict(op)
		}
	}
	for _, op := range s.ops {
		if op.kind != opAllocate {
			continue
		}
		if err := s.ssn.cache.Bind(op.task); err != nil {
			klog.ErrorS(err, "Bind refused; undoing the placement", "pod", op.task.Key(), "node", op.node.Name)
			s.ssn.unplace(op.task, op.node)
			continue
		}
		if job := s.ssn.JobFor(op.task); job != nil {
			job.UpdateTaskStatus(op.task, api.Binding)
		}
	}
	s.ops = nil
}

// place puts the task on the node in the session and runs the event handlers; a handler
// error undoes it.
func (ssn *Session) place(task *api.TaskInfo, node *api.NodeInfo, status api.TaskStatus) error {
	job := ssn.JobFor(task)
	if job == nil {
		return fmt.Errorf("task %s: job %s is not in the session", task.Key(), task.Job)
	}
	task.NodeName = node.Name
	job.UpdateTaskStatus(task, status)
	ssn.touch(node)
	node.AddTask(task)
	ev := &Event{Task: task, Node: node}
	for i, h := range ssn.eventHandlers {
		if h.AllocateFunc == nil {
			continue
		}
		if h.AllocateFunc(ev); ev.Err != nil {
			err := ev.Err
			// Undo the handlers that already ran, then the placement itself.
			undo := &Event{Task: task, Node: node}
			for j := i - 1; j >= 0; j-- {
				if ssn.eventHandlers[j].DeallocateFunc != nil {
					ssn.eventHandlers[j].DeallocateFunc(undo)
				}
			}
			node.RemoveTask(task)
			job.UpdateTaskStatus(task, api.Pending)
			task.NodeName = ""
			return fmt.Errorf("place %s on %s: %w", task.Key(), node.Name, err)
		}
	}
	return nil
}

// unplace takes a task back off its node in the session. As with place, handlers see the
// session after the change (task Pending, off the node; Event.Node says where it was), last
// registered first.
func (ssn *Session) unplace(task *api.TaskInfo, node *api.NodeInfo) {
	ssn.touch(node)
	node.RemoveTask(task)
	if job := ssn.JobFor(task); job != nil {
		job.UpdateTaskStatus(task, api.Pending)
	}
	task.NodeName = ""
	ssn.deallocated(task, node)
}

// deallocated runs the DeallocateFunc handlers for a task taken off (or released on) node,
// last registered first.
func (ssn *Session) deallocated(task *api.TaskInfo, node *api.NodeInfo) {
	ev := &Event{Task: task, Node: node}
	for i := len(ssn.eventHandlers) - 1; i >= 0; i-- {
		if h := ssn.eventHandlers[i]; h.DeallocateFunc != nil {
			h.DeallocateFunc(ev)
		}
	}
}

// touch notes that the session changes node's copy (its tasks, and the device state the
// event handlers keep), so that the cache does not hand that copy to the next session.
func (ssn *Session) touch(node *api.NodeInfo) { ssn.touched[node.Name] = struct{}{} }
