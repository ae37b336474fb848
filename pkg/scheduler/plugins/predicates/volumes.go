package predicates

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// taskVolumes is a task's volumes in the session and, once a placement reserved its claims,
// the task placed, the node and the pre-bind step that binds them there.
type taskVolumes struct {
	volumes api.PodVolumes
	task    *api.TaskInfo
	node    string
	step    api.PreBindStep
}

// volumesByTask holds the session's tasks that have volumes the plugins read. Predicates may
// run in parallel over nodes, so reads and writes take the lock; only such tasks come here.
type volumesByTask struct {
	mu sync.Mutex
	m  map[api.TaskID]*taskVolumes
}

func (c *volumesByTask) get(id api.TaskID) *taskVolumes {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// readVolumes reads the task's volumes before its nodes are tried (kube-scheduler's
// PreFilter). A reservation already made stands: the task is tried again only once it is
// undone.
func (p *predicatesPlugin) readVolumes(task *api.TaskInfo) error {
	if !p.facts(task).hasVolumes {
		return nil
	}
	if tv := p.volumesOf.get(task.UID); tv != nil && tv.step != nil {
		return nil
	}
	v, s := p.volumes.PreFilter(context.Background(), task.Pod, p.nodes)
	if s != nil {
		return errors.New(strings.Join(s.Reasons, ", "))
	}
	p.volumesOf.mu.Lock()
	p.volumesOf.m[task.UID] = &taskVolumes{volumes: v}
	p.volumesOf.mu.Unlock()
	return nil
}

// filterVolumes says whether the node can serve the task's volumes.
func (p *predicatesPlugin) filterVolumes(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	tv := p.volumesOf.get(task.UID)
	if tv == nil || tv.volumes == nil {
		return nil
	}
	return p.volumes.Filter(context.Background(), tv.volumes, node)
}

// reserveVolumes reserves, for a task placed to be bound (not one only pipelined), the PVs its
// claims were matched to on the node, and adds the step that binds them before the Binding.
func (p *predicatesPlugin) reserveVolumes(e *framework.Event) {
	if e.Task.Status != api.Allocated {
		return
	}
	tv := p.volumesOf.get(e.Task.UID)
	if tv == nil || tv.volumes == nil {
		return
	}
	step, err := p.volumes.Reserve(context.Background(), tv.volumes, e.Node.Name)
	if err != nil {
		e.Err = err
		return
	}
	if step != nil {
		tv.task, tv.node, tv.step = e.Task, e.Node.Name, step
		e.Task.AddPreBind(step)
	}
}

// unreserveVolumes gives back what reserveVolumes took, when the placement is undone.
func (p *predicatesPlugin) unreserveVolumes(e *framework.Event) {
	if tv := p.volumesOf.get(e.Task.UID); tv != nil && tv.step != nil {
		p.unreserve(tv)
	}
}

// unreserveUncommitted gives back, when the session ends, the reservations of placements it
// neither committed nor undid: the allocated pods of a pipelined gang, which allocate keeps in
// the session for its later jobs to see. A committed placement's task is Binding; its
// reservation is its bind's, which gives it back should it fail.
func (p *predicatesPlugin) unreserveUncommitted() {
	p.volumesOf.mu.Lock()
	defer p.volumesOf.mu.Unlock()
	for _, tv := range p.volumesOf.m {
		if tv.step != nil && tv.task.Status == api.Allocated {
			p.unreserve(tv)
		}
	}
}

// unreserve gives back the reservation tv holds and takes its step off the task.
func (p *predicatesPlugin) unreserve(tv *taskVolumes) {
	p.volumes.Unreserve(context.Background(), tv.volumes, tv.node)
	tv.task.RemovePreBind(tv.step)
	tv.task, tv.node, tv.step = nil, "", nil
}
