package tasktopology

import (
	"cmp"
	"slices"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// plan is one job's pods grouped into buckets for a session, as Volcano groups them: pods
// that should share a node in one bucket, pods that should not in different ones. A pod
// already on a node starts the bucket of that node; a pending pod joins the bucket its rules
// draw it to most (the one asking least, on a tie), or a new one when every bucket repels it.
// A pod of a task no rule names is in no bucket.
type plan struct {
	rules   *rules
	buckets []*bucket
	of      map[api.TaskID]*bucket
	// largest is the most pods a bucket had when the plan was made, which scales the scores.
	largest int
	// onNode counts the job's pods on each node by task name, kept as the session places
	// and takes back pods, for the anti-affinity of the next.
	onNode map[string]map[string]int
}

// bucket is a set of a job's pods that should share a node.
type bucket struct {
	index int
	// tasks counts the bucket's pods by task name.
	tasks map[string]int
	// pending are the bucket's pods without a node, and request what they ask together.
	pending map[api.TaskID]*api.TaskInfo
	request *api.Resource
	// size weighs request, for choosing between buckets that draw a pod alike.
	size float64
	// onNode counts the bucket's pods on each node.
	onNode map[string]int
	placed int
}

// newPlan groups the job's pods by the rules.
func newPlan(job *api.JobInfo, r *rules) *plan {
	p := &plan{rules: r, of: map[api.TaskID]*bucket{}, onNode: map[string]map[string]int{}}
	var tasks []*api.TaskInfo
	for _, t := range job.Tasks {
		if t.NodeName != "" {
			p.count(t.TaskRole, t.NodeName, 1)
		}
		if r.rank[t.TaskRole] > 0 {
			tasks = append(tasks, t)
		}
	}
	// Pods on nodes first, by node; then the pending, by task order and rank.
	slices.SortFunc(tasks, func(l, r *api.TaskInfo) int {
		if (l.NodeName == "") != (r.NodeName == "") {
			if l.NodeName != "" {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(l.NodeName, r.NodeName); c != 0 {
			return c
		}
		if c := p.precedence(l, r); c != 0 {
			return c
		}
		if api.CompareTasksByName(l, r) {
			return -1
		}
		return 1
	})
	byNode := map[string]*bucket{}
	for _, t := range tasks {
		var b *bucket
		if t.NodeName != "" {
			b = byNode[t.NodeName]
			if b == nil {
				b = p.newBucket()
				byNode[t.NodeName] = b
			}
		} else if b = p.closest(t.TaskRole); b == nil {
			b = p.newBucket()
		}
		b.add(t)
		p.of[t.UID] = b
		p.largest = max(p.largest, len(b.pending)+b.placed)
	}
	return p
}

// precedence compares the tasks of two pods: negative when l's goes first, by the task order,
// then by rank.
func (p *plan) precedence(l, r *api.TaskInfo) int {
	if c := cmp.Compare(p.rules.order[r.TaskRole], p.rules.order[l.TaskRole]); c != 0 {
		return c
	}
	return cmp.Compare(p.rules.rank[r.TaskRole], p.rules.rank[l.TaskRole])
}

// closest is the bucket whose pods draw a pod of task most, the one asking least among equals;
// nil when there is none or every one repels it.
func (p *plan) closest(task string) *bucket {
	var best *bucket
	bestPull := 0
	for _, b := range p.buckets {
		pull := p.rules.attraction(task, b.tasks, false)
		if best == nil || pull > bestPull || pull == bestPull && b.size < best.size {
			best, bestPull = b, pull
		}
	}
	if bestPull < 0 {
		return nil
	}
	return best
}

func (p *plan) newBucket() *bucket {
	b := &bucket{index: len(p.buckets), tasks: map[string]int{}, pending: map[api.TaskID]*api.TaskInfo{},
		request: api.EmptyResource(), onNode: map[string]int{}}
	p.buckets = append(p.buckets, b)
	return b
}

// count adds n pods of task to the node's count.
func (p *plan) count(task, node string, n int) {
	if task == "" {
		return
	}
	tasks := p.onNode[node]
	if tasks == nil {
		tasks = map[string]int{}
		p.onNode[node] = tasks
	}
	tasks[task] += n
	if tasks[task] == 0 {
		delete(tasks, task)
	}
}

// placed records that the session put the pod on the node (or gave back an evicted one).
func (p *plan) placed(t *api.TaskInfo, node string) {
	p.count(t.TaskRole, node, 1)
	if b := p.of[t.UID]; b != nil {
		b.pend(t, false)
		b.onNode[node]++
		b.placed++
	}
}

// removed records that the session took the pod off the node: a placement undone (the pod is
// pending again) or an eviction.
func (p *plan) removed(t *api.TaskInfo, node string) {
	p.count(t.TaskRole, node, -1)
	if b := p.of[t.UID]; b != nil {
		b.onNode[node]--
		if b.onNode[node] == 0 {
			delete(b.onNode, node)
		}
		b.placed--
		if t.Status == api.Pending {
			b.pend(t, true)
		}
	}
}

// add puts the pod in the bucket.
func (b *bucket) add(t *api.TaskInfo) {
	b.tasks[t.TaskRole]++
	if t.NodeName == "" {
		b.pend(t, true)
		return
	}
	b.onNode[t.NodeName]++
	b.placed++
}

// pend adds the pod to the bucket's pending pods, or takes it out (when it is there).
func (b *bucket) pend(t *api.TaskInfo, pending bool) {
	if _, ok := b.pending[t.UID]; ok == pending {
		return
	}
	if pending {
		b.pending[t.UID] = t
		b.request.Add(t.Resreq)
		b.size += size(t.Resreq)
		return
	}
	delete(b.pending, t.UID)
	b.request.SubTotal(t.Resreq)
	b.size -= size(t.Resreq)
}

// size weighs a request as Volcano weighs a bucket's: a millicore, a MiB of memory and a
// milli-unit of any other resource alike.
func size(r *api.Resource) float64 {
	s := r.MilliCPU + r.Memory/(1024*1024)
	for _, v := range r.ScalarResources {
		s += v
	}
	return s
}
