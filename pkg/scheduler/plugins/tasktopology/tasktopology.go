// Package tasktopology places a job's pods by the affinity and anti-affinity between its
// tasks that the job's annotations name (rules.go), as Volcano's task-topology plugin
// (v1.15). Each session it groups every job's pods into buckets (plan.go) and
//
//   - orders a job's pods: those in a bucket before those in none, the larger bucket (pods
//     still to place) first, the older bucket first, and within a bucket by the task order
//     annotation, then by the strongest kind of rule naming the task;
//   - scores a node for a pod in a bucket: the bucket's pods already on the node, less the
//     job's pods there that the pod's task is anti-affine to, plus the bucket's pods still to
//     place, less one for each of those that would not fit there with it (the largest left
//     out first, where Volcano takes them in map order), all × task-topology.weight × 100 /
//     the largest bucket's size; 0 on a node the pod does not fit (idle + releasing) and for
//     a pod in no bucket.
//
// Unlike Volcano, the anti-affinity counts the job's pods that were on the node before the
// session as well as those the session placed, and a placement undone is taken back. A job
// whose annotations are malformed is scheduled without them and its PodGroup says why
// (package ignoredannotation); one that names a task the job has no pod of yet is only
// skipped while its pods are still arriving (api.JobInfo.Arriving).
package tasktopology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/ignoredannotation"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "task-topology"

// Weight scales the node score; a whole number, 0 or more, default 1 (0: pods are ordered,
// nodes not scored).
const Weight = "task-topology.weight"

// ArgumentKeys are the arguments New reads.
var ArgumentKeys = conf.ArgumentKeys{Weight}

// maxNodeScore is the score of a node where the pod joins the whole of the largest bucket,
// before the weight (kube-scheduler's MaxNodeScore, as Volcano scales it).
const maxNodeScore = 100

type plugin struct {
	weight int
	// plans are the session's jobs with rules and pods to place.
	plans map[api.JobID]*plan
}

// New builds the plugin. A weight that is not a whole number, or is negative, is refused,
// naming the value.
func New(args conf.Arguments) (framework.Plugin, error) {
	p := &plugin{weight: 1}
	if err := args.GetInt(&p.weight, Weight); err != nil {
		return nil, err
	}
	if p.weight < 0 {
		return nil, conf.InvalidArgument(Weight, p.weight, fmt.Sprintf("weight %d is negative", p.weight))
	}
	return p, nil
}

func (p *plugin) Name() string { return PluginName }

func (p *plugin) OnSessionOpen(ssn *framework.Session) {
	p.plans = map[api.JobID]*plan{}
	now := time.Now()
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		if !annotated(job.PodGroup.Annotations) {
			ignoredannotation.Clear(job, Condition)
			continue
		}
		r, err := readRules(job.PodGroup.Annotations, taskNames(job))
		var unknown *unknownTaskError
		switch {
		case errors.As(err, &unknown) && job.Arriving(now):
			continue
		case err != nil:
			ignoredannotation.Report(ssn, job, Condition, err.Error()+"; the job is scheduled without task topology")
			continue
		}
		ignoredannotation.Clear(job, Condition)
		if job.TaskCount(api.Pending) == 0 {
			continue
		}
		p.plans[job.UID] = newPlan(job, r)
		klog.V(4).InfoS("Task topology", "podGroup", klog.KRef(job.Namespace, job.Name), "buckets", len(p.plans[job.UID].buckets))
	}
	if len(p.plans) == 0 {
		return
	}
	ssn.AddTaskOrderFn(PluginName, p.taskOrder)
	if p.weight > 0 {
		ssn.AddNodeOrderFn(PluginName, p.score)
	}
	ssn.AddEventHandler(&framework.EventHandler{
		AllocateFunc: func(e *framework.Event) {
			if plan := p.plans[e.Task.Job]; plan != nil {
				plan.placed(e.Task, e.Node.Name)
			}
		},
		DeallocateFunc: func(e *framework.Event) {
			if plan := p.plans[e.Task.Job]; plan != nil {
				plan.removed(e.Task, e.Node.Name)
			}
		},
	})
}

func (p *plugin) OnSessionClose(*framework.Session) { p.plans = nil }

// annotated reports whether the annotations hold any of the plugin's: only then are the
// job's task names gathered, which costs a walk over its pods.
func annotated(annotations map[string]string) bool {
	for _, key := range []string{AffinityAnnotation, AntiAffinityAnnotation, TaskOrderAnnotation} {
		if _, ok := annotations[key]; ok {
			return true
		}
	}
	return false
}

// taskNames are the job's task names.
func taskNames(job *api.JobInfo) map[string]bool {
	names := map[string]bool{}
	for _, t := range job.Tasks {
		if t.TaskRole != "" {
			names[t.TaskRole] = true
		}
	}
	return names
}

// taskOrder puts pods in a bucket before pods in none (of any job with a plan); between pods
// of one job, the larger bucket first, the older bucket first, then by task precedence.
func (p *plugin) taskOrder(l, r *api.TaskInfo) int {
	lp, rp := p.plans[l.Job], p.plans[r.Job]
	if lp == nil || rp == nil {
		return 0
	}
	lb, rb := lp.of[l.UID], rp.of[r.UID]
	switch {
	case (lb == nil) != (rb == nil):
		if lb != nil {
			return -1
		}
		return 1
	case lb == nil || l.Job != r.Job:
		return 0
	case lb == rb:
		return lp.precedence(l, r)
	}
	if c := cmp.Compare(len(rb.pending), len(lb.pending)); c != 0 {
		return c
	}
	return cmp.Compare(lb.index, rb.index)
}

// score is the node's score for the pod (see the package comment).
func (p *plugin) score(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	plan := p.plans[task.Job]
	if plan == nil {
		return 0, nil
	}
	b := plan.of[task.UID]
	if b == nil {
		return 0, nil
	}
	room := node.Idle.Clone().Add(node.Releasing)
	if !task.Resreq.LessEqual(room, api.MissingAsZero) {
		return 0, nil
	}
	score := b.onNode[node.Name] + plan.rules.attraction(task.TaskRole, plan.onNode[node.Name], true) + len(b.pending)
	if !b.request.LessEqual(room, api.MissingAsZero) {
		score -= leftOut(b, task, room)
	}
	return float64(score*p.weight) * maxNodeScore / float64(plan.largest), nil
}

// leftOut is how many of the bucket's other pending pods must stay off a node with room for
// the rest to fit there with task, taking the largest out first.
func leftOut(b *bucket, task *api.TaskInfo, room *api.Resource) int {
	others := make([]*api.TaskInfo, 0, len(b.pending))
	for _, t := range b.pending {
		if t.UID != task.UID {
			others = append(others, t)
		}
	}
	slices.SortFunc(others, func(l, r *api.TaskInfo) int {
		if c := cmp.Compare(size(r.Resreq), size(l.Resreq)); c != 0 {
			return c
		}
		return cmp.Compare(l.UID, r.UID)
	})
	rest := b.request.Clone()
	for i, t := range others {
		rest.Sub(t.Resreq)
		if rest.LessEqual(room, api.MissingAsZero) {
			return i + 1
		}
	}
	return len(others)
}
