package predicates

import (
	"context"
	"errors"
	"strings"
	"sync"

	"k8s.io/klog/v2"

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
	p.attempt = task.UID
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

// placed follows a task put on a node: a placement, or an eviction undone (the task Running
// or Bound again, which a placement never is), after which the pod counts again, for the task
// being tried at once.
func (p *predicatesPlugin) placed(e *framework.Event) {
	if s := e.Task.Status; s == api.Running || s == api.Bound {
		logFailure(p.interPod.Unevicted(context.Background(), p.interPodOf.get(p.attempt), e.Task.Pod, e.Node), e)
	} else {
		p.interPod.NodeChanged(e.Node)
	}
	p.recountRepelling(e)
}

// taken follows a task taken off a node: a placement undone, or an eviction (the task
// Releasing), after which the victim counts for nothing the session places, the task being
// tried included: a preemptor that the victim's anti-affinity, or its own, kept away passes
// once the victim is evicted.
func (p *predicatesPlugin) taken(e *framework.Event) {
	if e.Task.Status == api.Releasing {
		logFailure(p.interPod.Evicted(context.Background(), p.interPodOf.get(p.attempt), e.Task.Pod, e.Node), e)
	} else {
		p.interPod.NodeChanged(e.Node)
	}
	p.recountRepelling(e)
}

// recountRepelling counts a task with required anti-affinity in or out of the repelling
// nodes. Before that index is built there is nothing to follow: it will be built from
// node.Tasks, which already holds the change. An evicted task stays counted (it is still on
// its node): the index only says which nodes the filters look at.
func (p *predicatesPlugin) recountRepelling(e *framework.Event) {
	if api.HasRequiredAntiAffinity(e.Task.Pod) {
		p.repelling.Recount(e.Node)
	}
}

// logFailure logs a plugin's failure to follow an eviction (not expected: kube-scheduler's
// AddPod and RemovePod fail only without a PreFilter state, which the state passed has).
func logFailure(s *api.Status, e *framework.Event) {
	if s != nil {
		klog.ErrorS(nil, "Inter-pod counts did not follow an eviction", "pod", klog.KObj(e.Task.Pod), "node", e.Node.Name, "reasons", s.Reasons)
	}
}
