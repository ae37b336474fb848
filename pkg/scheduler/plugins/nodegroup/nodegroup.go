// Package nodegroup keeps each queue's pods on the node groups its Queue names, as upstream's
// plugin of that name: a node's group is the value of its volcano.sh/nodegroup-name label, and
// a Queue's spec.affinity lists groups under nodeGroupAffinity and nodeGroupAntiAffinity, each
// required and preferred.
//
// Which nodes a queue's pods may use (the predicate):
//   - a group its required or preferred affinity lists, or its preferred anti-affinity lists
//     (upstream's guide: pods fall back to those groups when the preferred ones are full);
//   - never a group its required anti-affinity lists. Upstream admits such a group when the
//     preferred anti-affinity lists it too; here the required list always wins;
//   - a node without the label only when the queue names no group and strict is false.
//
// A queue that names no group (no spec.affinity, or only empty lists) may use no labelled
// node, and, with strict (the default), no unlabelled node either, so its pods stay Pending:
// that is upstream v1.15's behaviour as its user guide states it ("When strict: true (the
// default), tasks are only allowed to be scheduled on nodes that have a
// volcano.sh/nodegroup-name label", https://github.com/volcano-sh/volcano/blob/v1.15.1/docs/user-guide/how_to_use_nodegroup_plugin.md),
// together with its predicate refusing a labelled node to a queue without affinity. A
// cluster where only some queues name groups sets strict: false, so that the other queues'
// pods run on the unlabelled nodes.
//
// How nodes rank (the score, upstream's values): 100 for a group of the required affinity,
// plus 50 for a group of the preferred affinity (with enablePreferredOrder, 50 × (n-i)/n for
// the i-th of n preferred groups, so the list's order is the order of preference); a group of
// the preferred anti-affinity scores -1 whatever else lists it; an unlabelled node scores 0.
//
// With enableHierarchy, a queue without spec.affinity takes that of its nearest ancestor that
// has one (the root included), as upstream.
package nodegroup

import (
	"fmt"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "nodegroup"

// LabelKey is the node label whose value names the node's group (upstream's key).
const LabelKey = "volcano.sh/nodegroup-name"

// Arguments, upstream's names.
const (
	// StrictArgument: a queue that names no node group may not use unlabelled nodes either
	// (default true).
	StrictArgument = "strict"
	// PreferredOrderArgument: earlier preferred groups score more (default false).
	PreferredOrderArgument = "enablePreferredOrder"
)

// ArgumentKeys are the arguments New reads.
var ArgumentKeys = conf.ArgumentKeys{StrictArgument, PreferredOrderArgument}

// Scores, upstream's values.
const (
	// RequiredScore is a required affinity group's score.
	RequiredScore = 100
	// PreferredScore is a preferred affinity group's score (the first one's, with
	// enablePreferredOrder).
	PreferredScore = RequiredScore / 2
	// AvoidedScore is a preferred anti-affinity group's score, whatever else lists it.
	AvoidedScore = -1
)

// Upstream's predicate reasons; each refusal starts with one of them, then says which queue
// and group.
const (
	reasonLabelNotFound    = "node group label not found"
	reasonAffinityNotFound = "node group affinity not specified"
	reasonUnsatisfied      = "node does not satisfy the node group affinity"
)

type nodeGroupPlugin struct {
	strict         bool
	preferredOrder bool
	// rules are the session's queues' node group rules, by queue; nil for a queue that
	// names no group.
	rules map[api.QueueID]*rules
	// refusals memoizes the statuses per queue and group, which the predicate returns for
	// every node of the group a task is refused.
	refusals map[refusalKey]*api.Status
}

// rules are one queue's node groups.
type rules struct {
	required, preferred, antiRequired, antiPreferred map[string]bool
	// rank is each preferred group's place in its list, duplicates left out.
	rank map[string]int
}

type refusalKey struct {
	queue    api.QueueID
	group    string
	labelled bool
}

// New reads strict and enablePreferredOrder; a value that is not a bool is an error naming it.
func New(args conf.Arguments) (framework.Plugin, error) {
	p := &nodeGroupPlugin{strict: true}
	if err := args.GetBool(&p.strict, StrictArgument); err != nil {
		return nil, err
	}
	if err := args.GetBool(&p.preferredOrder, PreferredOrderArgument); err != nil {
		return nil, err
	}
	return p, nil
}

func (*nodeGroupPlugin) Name() string { return PluginName }

func (p *nodeGroupPlugin) OnSessionOpen(ssn *framework.Session) {
	own := make(map[api.QueueID]*rules, len(ssn.Queues))
	for id, q := range ssn.Queues {
		own[id] = rulesOf(q)
	}
	p.rules = make(map[api.QueueID]*rules, len(own))
	hierarchy := ssn.QueueTree != nil && ssn.HierarchyEnabled(PluginName)
	for id, q := range ssn.Queues {
		r := own[id]
		if hierarchy && q.Queue.Spec.Affinity == nil {
			for _, ancestor := range ssn.QueueTree.Ancestors(id) {
				if anc := ssn.Queues[ancestor]; anc != nil && anc.Queue.Spec.Affinity != nil {
					r = own[ancestor]
					break
				}
			}
		}
		p.rules[id] = r
	}
	p.refusals = map[refusalKey]*api.Status{}
	ssn.AddPredicateFn(PluginName, func(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
		return p.predicate(ssn, task, node)
	})
	ssn.AddSamePredicatesFn(PluginName, func(a, b *api.TaskInfo) bool {
		// The predicate reads a task's queue alone.
		qa, oka := queueOf(ssn, a)
		qb, okb := queueOf(ssn, b)
		return oka == okb && qa == qb
	})
	ssn.AddNodeOrderFn(PluginName, func(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
		return p.score(ssn, task, node), nil
	})
}

func (*nodeGroupPlugin) OnSessionClose(*framework.Session) {}

// rulesOf reads the queue's spec.affinity; nil when it lists no group at all.
func rulesOf(q *api.QueueInfo) *rules {
	a := q.Queue.Spec.Affinity
	if a == nil {
		return nil
	}
	r := &rules{required: map[string]bool{}, preferred: map[string]bool{}, antiRequired: map[string]bool{},
		antiPreferred: map[string]bool{}, rank: map[string]int{}}
	if in := a.NodeGroupAffinity; in != nil {
		addAll(r.required, in.RequiredDuringSchedulingIgnoredDuringExecution)
		addAll(r.preferred, in.PreferredDuringSchedulingIgnoredDuringExecution)
		for _, g := range in.PreferredDuringSchedulingIgnoredDuringExecution {
			if _, seen := r.rank[g]; !seen {
				r.rank[g] = len(r.rank)
			}
		}
	}
	if out := a.NodeGroupAntiAffinity; out != nil {
		addAll(r.antiRequired, out.RequiredDuringSchedulingIgnoredDuringExecution)
		addAll(r.antiPreferred, out.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if len(r.required)+len(r.preferred)+len(r.antiRequired)+len(r.antiPreferred) == 0 {
		return nil
	}
	return r
}

func addAll(set map[string]bool, groups []string) {
	for _, g := range groups {
		set[g] = true
	}
}

// queueOf is the task's queue; false for a task whose job is not in the session.
func queueOf(ssn *framework.Session, task *api.TaskInfo) (api.QueueID, bool) {
	job := ssn.JobFor(task)
	if job == nil {
		return "", false
	}
	return job.Queue, true
}

// groupOf is the node's group and whether it has the label.
func groupOf(node *api.NodeInfo) (string, bool) {
	if node.Node == nil {
		return "", false
	}
	g, ok := node.Node.Labels[LabelKey]
	return g, ok
}

// predicate refuses the node when the task's queue may not use its group (see the package
// comment), as unresolvable: no eviction changes a node's label.
func (p *nodeGroupPlugin) predicate(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	queue, ok := queueOf(ssn, task)
	if !ok {
		return nil
	}
	r := p.rules[queue]
	group, labelled := groupOf(node)
	if !labelled {
		if r == nil && !p.strict {
			return nil
		}
		return p.refusal(refusalKey{queue: queue}, func() string { return labelNotFound(queue, r != nil) })
	}
	if r == nil {
		return p.refusal(refusalKey{queue: queue, group: group, labelled: true}, func() string {
			return fmt.Sprintf("%s: queue %s names no node group, so its pods may not use node group %q", reasonAffinityNotFound, queue, group)
		})
	}
	if r.antiRequired[group] {
		return p.refusal(refusalKey{queue: queue, group: group, labelled: true}, func() string {
			return fmt.Sprintf("%s: queue %s's required node group anti-affinity lists node group %q", reasonUnsatisfied, queue, group)
		})
	}
	if !r.required[group] && !r.preferred[group] && !r.antiPreferred[group] {
		return p.refusal(refusalKey{queue: queue, group: group, labelled: true}, func() string {
			return fmt.Sprintf("%s: queue %s's node group affinity does not list node group %q", reasonUnsatisfied, queue, group)
		})
	}
	return nil
}

// labelNotFound is the reason of an unlabelled node: the queue names groups (named), or it
// names none and strict mode keeps it off unlabelled nodes.
func labelNotFound(queue api.QueueID, named bool) string {
	if named {
		return fmt.Sprintf("%s: queue %s names node groups, and the node has no %s label", reasonLabelNotFound, queue, LabelKey)
	}
	return fmt.Sprintf("%s: queue %s names no node group, and the nodegroup plugin's %s mode (the default) keeps its pods off nodes without a %s label",
		reasonLabelNotFound, queue, StrictArgument, LabelKey)
}

// refusal is the memoized status of a queue's refusal of a group (or of unlabelled nodes),
// its reason made by reason the first time.
func (p *nodeGroupPlugin) refusal(key refusalKey, reason func() string) *api.Status {
	s, ok := p.refusals[key]
	if !ok {
		s = api.NewStatus(api.UnschedulableAndUnresolvable, reason())
		p.refusals[key] = s
		klog.V(4).InfoS("Node group refused to queue", "queue", key.queue, "nodeGroup", key.group, "reason", s.Reasons[0])
	}
	return s
}

// score ranks the node's group for the task's queue (see the package comment).
func (p *nodeGroupPlugin) score(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) float64 {
	queue, ok := queueOf(ssn, task)
	if !ok {
		return 0
	}
	r := p.rules[queue]
	group, labelled := groupOf(node)
	if r == nil || !labelled {
		return 0
	}
	if r.antiPreferred[group] {
		return AvoidedScore
	}
	var score float64
	if r.required[group] {
		score += RequiredScore
	}
	if i, ok := r.rank[group]; ok {
		if p.preferredOrder {
			n := len(r.rank)
			score += PreferredScore * float64(n-i) / float64(n)
		} else {
			score += PreferredScore
		}
	}
	return score
}
