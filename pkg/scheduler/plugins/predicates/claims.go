package predicates

import (
	"context"
	"errors"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// taskClaims is a task's claims in the session and, once a placement reserved them, the
// node and the pre-bind step that binds them there.
type taskClaims struct {
	claims api.PodClaims
	node   string
	step   api.PreBindStep
}

// claimsByTask holds the session's tasks that have claims. Predicates may run in parallel
// over nodes, so reads and writes take the lock; only tasks with claims come here.
type claimsByTask struct {
	mu sync.Mutex
	m  map[api.TaskID]*taskClaims
}

func (c *claimsByTask) get(id api.TaskID) *taskClaims {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// readClaims reads the task's claims before its nodes are tried (kube-scheduler's PreFilter).
// A reservation already made stands: the task is tried again only once it is undone.
func (p *predicatesPlugin) readClaims(task *api.TaskInfo) error {
	if !p.facts(task).hasClaims {
		return nil
	}
	if tc := p.claims.get(task.UID); tc != nil && tc.step != nil {
		return nil
	}
	c, s := p.volumes.PreFilter(context.Background(), task.Pod)
	if s != nil {
		return errors.New(strings.Join(s.Reasons, ", "))
	}
	p.claims.mu.Lock()
	p.claims.m[task.UID] = &taskClaims{claims: c}
	p.claims.mu.Unlock()
	return nil
}

// filterVolumes says whether the node can serve the task's claims.
func (p *predicatesPlugin) filterVolumes(task *api.TaskInfo, node *corev1.Node) *api.Status {
	tc := p.claims.get(task.UID)
	if tc == nil || tc.claims == nil {
		return nil
	}
	return p.volumes.Filter(context.Background(), tc.claims, node)
}

// reserveVolumes reserves, for a task placed to be bound (not one only pipelined), the PVs its
// claims were matched to on the node, and adds the step that binds them before the Binding.
func (p *predicatesPlugin) reserveVolumes(e *framework.Event) {
	if e.Task.Status != api.Allocated {
		return
	}
	tc := p.claims.get(e.Task.UID)
	if tc == nil || tc.claims == nil {
		return
	}
	if err := p.volumes.Reserve(context.Background(), tc.claims, e.Node.Name); err != nil {
		e.Err = err
		return
	}
	tc.node, tc.step = e.Node.Name, p.volumes.Step(tc.claims, e.Node.Name)
	e.Task.AddPreBind(tc.step)
}

// unreserveVolumes gives back what reserveVolumes took, when the placement is undone.
func (p *predicatesPlugin) unreserveVolumes(e *framework.Event) {
	tc := p.claims.get(e.Task.UID)
	if tc == nil || tc.step == nil {
		return
	}
	p.volumes.Unreserve(context.Background(), tc.claims, tc.node)
	e.Task.RemovePreBind(tc.step)
	tc.node, tc.step = "", nil
}
