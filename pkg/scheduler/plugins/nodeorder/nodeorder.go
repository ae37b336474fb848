// Package nodeorder scores nodes the way kube-scheduler's default score plugins do: each
// score is 0–100, multiplied by its weight, and the weighted scores are summed.
//
//   - leastrequested: how much cpu and memory stays free once the task is placed;
//   - mostrequested: the opposite, how full the node gets (off by default);
//   - balancedresource: how close the cpu and memory fractions in use are to each other;
//   - nodeaffinity: the weight of the pod's preferred node affinity terms the node matches;
//   - tainttoleration: how few PreferNoSchedule taints the pod does not tolerate;
//   - imagelocality: how much of the pod's images the node already holds, by kube-scheduler's
//     ImageLocality (pkg/scheduler/images), over the images the session's nodes list.
//
// kube-scheduler rescales nodeaffinity and tainttoleration over the nodes it scores. A
// NodeOrderFn sees one node, so here they are rescaled over what is known in advance:
// nodeaffinity by the total weight of the pod's preferred terms, tainttoleration by the
// most PreferNoSchedule taints any node of the session carries. The order of nodes is the
// same; only the top score can fall short of 100.
//
// Where other pods are is scored by kube-scheduler's InterPodAffinity and PodTopologySpread
// (an api.InterPodScores, pkg/scheduler/interpod), each normalized over the nodes being
// chosen among, as kube-scheduler does, then multiplied by its weight (a BatchNodeOrderFn):
//
//   - podaffinity: the pod's preferred pod affinity and anti-affinity, and the affinity terms
//     of the pods already placed that select it;
//   - podtopologyspread: how few of the pods its ScheduleAnyway constraints select are in the
//     node's domain.
//
// They count the session's tentative placements, so a gang's earlier pods count for its later
// ones. A pod with none of these and no placed pod with scoring terms costs a look at an index.
package nodeorder

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/images"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/nodeselector"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "nodeorder"

// Weight arguments, upstream's names.
const (
	LeastRequestedWeight    = "leastrequested.weight"
	MostRequestedWeight     = "mostrequested.weight"
	BalancedResourceWeight  = "balancedresource.weight"
	NodeAffinityWeight      = "nodeaffinity.weight"
	TaintTolerationWeight   = "tainttoleration.weight"
	PodAffinityWeight       = "podaffinity.weight"
	PodTopologySpreadWeight = "podtopologyspread.weight"
	ImageLocalityWeight     = "imagelocality.weight"
)

// ArgumentKeys are the arguments New reads: every weight upstream has.
var ArgumentKeys = conf.ArgumentKeys{LeastRequestedWeight, MostRequestedWeight, BalancedResourceWeight,
	NodeAffinityWeight, TaintTolerationWeight, PodAffinityWeight, PodTopologySpreadWeight, ImageLocalityWeight}

// MaxNodeScore is the best score of one scorer, before its weight.
const MaxNodeScore = 100

type weights struct {
	leastRequested, mostRequested, balancedResource, nodeAffinity, taintToleration, imageLocality float64
	interPod                                                                                      api.InterPodWeights
}

// perNode: some score of one node at a time is on.
func (w weights) perNode() bool {
	return w.leastRequested != 0 || w.mostRequested != 0 || w.balancedResource != 0 ||
		w.nodeAffinity != 0 || w.taintToleration != 0 || w.imageLocality != 0
}

type nodeOrderPlugin struct {
	weights weights
	logger  klog.Logger
	// images scores the session's nodes' image locality; nil when its weight is 0.
	images *images.Locality
	// maxPreferNoSchedule is the most PreferNoSchedule taints on any node of the session:
	// the worst count a pod can meet, which tainttoleration scores 0.
	maxPreferNoSchedule int
	// lastFacts is the most recent task's facts (see facts).
	lastFacts atomic.Pointer[taskFacts]

	// interPod are kube-scheduler's inter-pod scores the weights turn on, nil when none is
	// (or in a scheduler without them); nodes are the session's, which they count over.
	interPod api.InterPodScores
	nodes    []*api.NodeInfo
}

// New is NewBuilder without kube-scheduler's inter-pod scores.
func New(args conf.Arguments) (framework.Plugin, error) { return NewBuilder(nil)(args) }

// NewBuilder builds the plugin from its <scorer>.weight arguments, scoring where other pods
// are with the scores interPod gives (nil: not at all). A weight that is not a whole number,
// or is negative, is an error naming the argument.
func NewBuilder(interPod api.InterPodScoreSource) framework.PluginBuilder {
	return func(args conf.Arguments) (framework.Plugin, error) { return build(args, interPod) }
}

func build(args conf.Arguments, interPod api.InterPodScoreSource) (framework.Plugin, error) {
	p := &nodeOrderPlugin{logger: klog.Background()}
	for _, w := range []struct {
		key string
		to  *float64
		def int
	}{
		{LeastRequestedWeight, &p.weights.leastRequested, 1},
		{MostRequestedWeight, &p.weights.mostRequested, 0},
		{BalancedResourceWeight, &p.weights.balancedResource, 1},
		{NodeAffinityWeight, &p.weights.nodeAffinity, 2},
		{TaintTolerationWeight, &p.weights.taintToleration, 3},
		{PodAffinityWeight, &p.weights.interPod.Affinity, 2},
		{PodTopologySpreadWeight, &p.weights.interPod.Spread, 2},
		{ImageLocalityWeight, &p.weights.imageLocality, 1},
	} {
		v, err := readWeight(args, w.key, w.def)
		if err != nil {
			return nil, err
		}
		*w.to = float64(v)
	}
	if interPod != nil {
		p.interPod = interPod.InterPodScores(p.weights.interPod)
	}
	return p, nil
}

func readWeight(args conf.Arguments, key string, def int) (int, error) {
	w := def
	if err := args.GetInt(&w, key); err != nil {
		return 0, err
	}
	if w < 0 {
		return 0, conf.InvalidArgument(key, w, fmt.Sprintf("weight %d is negative", w))
	}
	return w, nil
}

func (p *nodeOrderPlugin) Name() string { return PluginName }

func (p *nodeOrderPlugin) OnSessionOpen(ssn *framework.Session) {
	if p.interPod != nil {
		p.nodes = ssn.NodeList
		ssn.AddBatchNodeOrderFn(PluginName, p.interPodScores)
		nodeChanged := func(e *framework.Event) { p.interPod.NodeChanged(e.Node) }
		ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: nodeChanged, DeallocateFunc: nodeChanged})
	}
	if !p.weights.perNode() {
		return
	}
	if p.weights.imageLocality != 0 {
		p.images = images.New(ssn.NodeList)
	}
	if p.weights.taintToleration != 0 {
		for _, n := range ssn.NodeList {
			if n.Node != nil {
				p.maxPreferNoSchedule = max(p.maxPreferNoSchedule, countPreferNoSchedule(n.Node.Spec.Taints))
			}
		}
	}
	ssn.AddNodeOrderFn(PluginName, p.score)
}

func (p *nodeOrderPlugin) OnSessionClose(*framework.Session) {}

// score is the weighted sum of the enabled scorers for the task on the node.
func (p *nodeOrderPlugin) score(task *api.TaskInfo, node *api.NodeInfo) (float64, error) {
	w := &p.weights
	cpu := usage{requested: node.Used.MilliCPU + task.Resreq.MilliCPU, allocatable: node.Allocatable.MilliCPU}
	mem := usage{requested: node.Used.Memory + task.Resreq.Memory, allocatable: node.Allocatable.Memory}
	var total float64
	if w.leastRequested != 0 {
		total += w.leastRequested * (cpu.leastRequested() + mem.leastRequested()) / 2
	}
	if w.mostRequested != 0 {
		total += w.mostRequested * (cpu.mostRequested() + mem.mostRequested()) / 2
	}
	if w.balancedResource != 0 {
		total += w.balancedResource * balancedResource(cpu, mem)
	}
	if node.Node == nil {
		return total, nil
	}
	if w.nodeAffinity != 0 {
		total += w.nodeAffinity * p.facts(task).nodeAffinity(node.Node)
	}
	if w.taintToleration != 0 {
		total += w.taintToleration * p.taintToleration(task.Pod, node.Node)
	}
	if w.imageLocality != 0 {
		total += w.imageLocality * float64(p.images.Score(task.Pod, node))
	}
	return total, nil
}

// interPodScores adds the weighted inter-pod scores of the nodes. A failure (the namespaces
// not yet listed, a term that cannot be parsed) leaves the nodes unranked by them, and is
// logged with the pod's name.
func (p *nodeOrderPlugin) interPodScores(task *api.TaskInfo, nodes []*api.NodeInfo, scores []float64) {
	if status := p.interPod.Score(context.Background(), task.Pod, p.nodes, nodes, scores); status != nil {
		klog.InfoS("Nodes not ranked by inter-pod scores", "pod", klog.KObj(task.Pod), "plugin", status.Plugin, "reason", status.Reasons)
	}
}

// usage is one resource of a node with the task placed: requested = used + the task's request.
type usage struct{ requested, allocatable float64 }

// leastRequested: the free share, 0 when the node has none of the resource or is overfull.
func (u usage) leastRequested() float64 {
	if u.allocatable <= 0 || u.requested > u.allocatable {
		return 0
	}
	return (u.allocatable - u.requested) * MaxNodeScore / u.allocatable
}

// mostRequested: the used share, 100 when full or overfull, 0 when the node has none.
func (u usage) mostRequested() float64 {
	if u.allocatable <= 0 {
		return 0
	}
	return min(u.requested, u.allocatable) * MaxNodeScore / u.allocatable
}

// balancedResource is 100 minus the spread of the used fractions (each capped at 1). With
// two fractions their standard deviation is half their difference. A resource the node
// does not have is left out, and one fraction alone is perfectly balanced.
func balancedResource(cpu, mem usage) float64 {
	if cpu.allocatable <= 0 || mem.allocatable <= 0 {
		return MaxNodeScore
	}
	fc := min(cpu.requested/cpu.allocatable, 1)
	fm := min(mem.requested/mem.allocatable, 1)
	return (1 - math.Abs(fc-fm)/2) * MaxNodeScore
}

// taintToleration is 100 × (1 − untolerated / the session's worst count) for the node's
// PreferNoSchedule taints.
func (p *nodeOrderPlugin) taintToleration(pod *corev1.Pod, node *corev1.Node) float64 {
	if p.maxPreferNoSchedule == 0 {
		return MaxNodeScore
	}
	untolerated := 0
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule &&
			!corev1helpers.TolerationsTolerateTaint(p.logger, pod.Spec.Tolerations, t, false) {
			untolerated++
		}
	}
	return MaxNodeScore * (1 - float64(untolerated)/float64(p.maxPreferNoSchedule))
}

func countPreferNoSchedule(taints []corev1.Taint) int {
	n := 0
	for i := range taints {
		if taints[i].Effect == corev1.TaintEffectPreferNoSchedule {
			n++
		}
	}
	return n
}

// facts returns the task's facts, computing them when the task is not the last one scored.
// Nodes are scored task after task, so a recomputation is rare.
func (p *nodeOrderPlugin) facts(task *api.TaskInfo) *taskFacts {
	if f := p.lastFacts.Load(); f != nil && f.task == task {
		return f
	}
	f := newTaskFacts(task)
	p.lastFacts.Store(f)
	return f
}

// taskFacts is what the pod-dependent scorers need, worked out once per task.
type taskFacts struct {
	task *api.TaskInfo
	// preferred are the pod's preferred node affinity terms; nil when it has none or they
	// cannot be parsed.
	preferred *nodeselector.Preferred
}

func newTaskFacts(task *api.TaskInfo) *taskFacts {
	f := &taskFacts{task: task}
	pod := task.Pod
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		preferred, err := nodeselector.NewPreferred(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			klog.V(3).InfoS("Ignoring preferred node affinity that cannot be parsed", "pod", klog.KObj(pod), "err", err)
		}
		f.preferred = preferred
	}
	return f
}

// nodeAffinity is the matched share of the pod's preferred term weight, 0–100.
func (f *taskFacts) nodeAffinity(node *corev1.Node) float64 {
	if f.preferred == nil || f.preferred.TotalWeight() <= 0 {
		return 0
	}
	return float64(f.preferred.Score(node)) * MaxNodeScore / float64(f.preferred.TotalWeight())
}
