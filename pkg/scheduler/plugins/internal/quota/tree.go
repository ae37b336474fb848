package quota

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// NewTreeLedger opens the accounts of every queue of a queue hierarchy, the root's included
// (with nothing declared on it when the Queue object is missing). A queue's Allocated,
// Request, Inqueue and Elastic are its subtree's; its RealCapability is what its parent's
// leaves once the parent's other children have their guarantees, within its own capability;
// the root's is the cluster within the root's capability. Every check of the returned ledger
// runs up the tree: a queue takes a job or a task only when it and every ancestor have room.
// A queue out of the tree stands alone.
func NewTreeLedger(ssn *framework.Session, tree *queuetree.Tree) *Ledger {
	l := &Ledger{ssn: ssn, Total: ssn.TotalResource.Clone(), Queues: map[api.QueueID]*Queue{}, tree: tree}
	for id, info := range ssn.Queues {
		l.Queues[id] = newQueue(info, l.Total)
	}
	if l.Queues[queuetree.Root] == nil {
		l.Queues[queuetree.Root] = newQueue(implicitRoot(), l.Total)
	}
	// The root holds the cluster; a guarantee on it reserves nothing from anyone.
	root := l.Queues[queuetree.Root]
	root.RealCapability = l.Total.Clone()
	if root.Capability != nil {
		root.RealCapability.MinDimension(root.Capability, api.MissingAsInfinity)
	}
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil || l.Queues[job.Queue] == nil {
			continue
		}
		for _, q := range l.chain(job.Queue) {
			q.addJob(job)
		}
	}
	l.shareCapability(queuetree.Root)
	return l
}

// implicitRoot stands for a root queue the cluster lacks.
func implicitRoot() *api.QueueInfo {
	return api.NewQueueInfo(&schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: string(queuetree.Root)}})
}

// shareCapability sets the real capability of the children of parent, then of theirs.
func (l *Ledger) shareCapability(parent api.QueueID) {
	p := l.Queues[parent]
	children := l.tree.Children(parent)
	guaranteed := api.EmptyResource()
	for _, c := range children {
		guaranteed.Add(l.Queues[c].Guarantee)
	}
	free := ExceededPart(p.RealCapability, guaranteed)
	for _, id := range children {
		c := l.Queues[id]
		c.RealCapability = free.Clone().Add(c.Guarantee)
		if c.Capability != nil {
			c.RealCapability.MinDimension(c.Capability, api.MissingAsInfinity)
		}
		l.shareCapability(id)
	}
	if !guaranteed.LessEqual(p.RealCapability, api.MissingAsZero) {
		klog.V(2).InfoS("Children's guarantees exceed what their parent queue can hold; not all can be met at once",
			"queue", p.Info.Name, "childrenGuarantee", guaranteed, "realCapability", p.RealCapability)
	}
}

// IsTree reports whether the ledger follows a queue hierarchy.
func (l *Ledger) IsTree() bool { return l.tree != nil }

// chain is the queue's account and its ancestors', the queue first; just the queue's for
// flat queues.
func (l *Ledger) chain(id api.QueueID) []*Queue {
	q := l.Queues[id]
	if q == nil {
		return nil
	}
	out := []*Queue{q}
	if l.tree == nil {
		return out
	}
	for _, a := range l.tree.Ancestors(id) {
		out = append(out, l.Queues[a])
	}
	return out
}

// Children are the accounts of the queues under id, in name order.
func (l *Ledger) Children(id api.QueueID) []*Queue {
	var out []*Queue
	for _, c := range l.tree.Children(id) {
		out = append(out, l.Queues[c])
	}
	return out
}

// LeafRefusal is why a job of the queue cannot be scheduled at all in a hierarchy (the root,
// a queue with children, a queue out of the tree), "" when it can or the queues are flat.
func (l *Ledger) LeafRefusal(id api.QueueID) string {
	if l.tree == nil {
		return ""
	}
	return l.tree.LeafRefusal(id)
}

// fitsAncestors is nil when every ancestor of the queue has room for the task within its real
// capability, else why not, naming the ancestor; the root only when root is true. The queue
// itself is checked by the caller.
func (l *Ledger) fitsAncestors(q *Queue, task *api.TaskInfo, root bool) error {
	for _, a := range l.chain(q.Info.UID)[1:] {
		if !root && a.Info.UID == queuetree.Root {
			continue
		}
		wanted := a.Allocated.Clone().Add(task.Resreq)
		if short := wanted.ExceedingWithDimension(a.RealCapability, task.Resreq); len(short) > 0 {
			klog.V(3).InfoS("Task does not fit in an ancestor of its queue", "pod", task.Key(), "queue", q.Info.Name,
				"ancestor", a.Info.Name, "insufficient", short, "request", task.Resreq, "allocated", a.Allocated,
				"realCapability", a.RealCapability)
			return fmt.Errorf("queue %s, above queue %s, has no room for the pod within its real capability: %s",
				a.Info.Name, q.Info.Name, joinNames(short))
		}
	}
	return nil
}
