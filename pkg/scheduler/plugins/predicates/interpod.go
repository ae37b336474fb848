package predicates

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// interPodByTask holds the counts of the session's tasks whose last PreFilter left something
// for the per-node filter to check. Predicates may run in parallel over nodes, so reads and
// writes take the lock.
type interPodByTask struct {
	mu sync.Mutex
	m  map[api.TaskID]api.InterPodState
}

func (c *interPodByTask) get(id api.TaskID) api.InterPodState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// set keeps the task's counts; nil forgets them.
func (c *interPodByTask) set(id api.TaskID, s api.InterPodState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == nil {
		delete(c.m, id)
		return
	}
	c.m[id] = s
}

// readInterPod counts, before the task's nodes are tried (kube-scheduler's PreFilter), the
// pods its affinity, anti-affinity and spread constraints select, over the session's nodes
// as they are now, and the pods whose anti-affinity selects it. A task without constraints of
// its own is looked at only where a pod with required anti-affinity is placed, and then only
// on those pods' nodes.
func (p *predicatesPlugin) readInterPod(task *api.TaskInfo) error {
	nodes := p.nodes
	if !p.facts(task).podConstraints {
		if !p.enabled.interPod.Affinity {
			return nil
		}
		if !p.repelling.Built() {
			p.repelling.Build(p.nodes)
		}
		if nodes = p.repelling.Nodes(); len(nodes) == 0 {
			return nil
		}
	}
	s, status := p.interPod.PreFilter(context.Background(), task.Pod, nodes)
	if status != nil {
		return errors.New(strings.Join(status.Reasons, ", "))
	}
	p.interPodOf.set(task.UID, s)
	return nil
}

// filterInterPod says whether the node takes the task by its counts.
func (p *predicatesPlugin) filterInterPod(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	s := p.interPodOf.get(task.UID)
	if s == nil {
		return nil
	}
	return p.interPod.Filter(context.Background(), s, node)
}

// nodeChanged follows a placement, or its undo: the filters read the node's pods again, and
// a task with required anti-affinity is counted in or out of the repelling nodes. Before that
// index is built there is nothing to follow: it will be built from node.Tasks, which already
// holds the placement.
func (p *predicatesPlugin) nodeChanged(e *framework.Event) {
	p.interPod.NodeChanged(e.Node)
	if api.HasRequiredAntiAffinity(e.Task.Pod) {
		p.repelling.Recount(e.Node)
	}
}
