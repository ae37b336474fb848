package framework

import (
	"fmt"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Statement groups tentative placements of one job. Each changes the session at once (so
// later decisions see it); Discard undoes them exactly, in reverse, and Commit sends the
// allocations to the binder. Nothing reaches the API server before Commit.
type Statement struct {
	ssn *Session
	ops []operation
}

type opKind int

const (
	opAllocate opKind = iota
	opPipeline
)

type operation struct {
	kind opKind
	task *api.TaskInfo
	node *api.NodeInfo
}

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

// Discard undoes every operation, last first. The tasks keep where they were put as their
// LastTransaction, so that their status can say where they would fit.
func (s *Statement) Discard() {
	for i := len(s.ops) - 1; i >= 0; i-- {
		op := s.ops[i]
		op.task.LastTransaction = &api.TransactionContext{NodeName: op.node.Name, Status: op.task.Status}
		s.ssn.unplace(op.task, op.node)
	}
	s.ops = nil
}

// Commit sends the allocations to the binder; pipelined tasks stay in the session only.
// An allocation the cache refuses is undone.
func (s *Statement) Commit() {
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
	node.RemoveTask(task)
	if job := ssn.JobFor(task); job != nil {
		job.UpdateTaskStatus(task, api.Pending)
	}
	task.NodeName = ""
	ev := &Event{Task: task, Node: node}
	for i := len(ssn.eventHandlers) - 1; i >= 0; i-- {
		if h := ssn.eventHandlers[i]; h.DeallocateFunc != nil {
			h.DeallocateFunc(ev)
		}
	}
}
