package interpod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/kubestatus"
)

// Scores are the scores one session's nodeorder weights switch on (an api.InterPodScores).
// They keep their own views of the nodes, as Plugins do, followed by NodeChanged.
type Scores struct {
	source  *Source
	weights api.InterPodWeights
	pods    podInfos
	views   views
	// scoring indexes the nodes that hold pods with scoring terms: all that InterPodAffinity
	// reads for a pod without preferred terms, and, when there is none, why it is skipped.
	scoring *api.NodesHolding
	// list is the candidates' scores for one plugin, reused from pod to pod.
	list fwk.NodeScoreList
}

var _ api.InterPodScores = (*Scores)(nil)

// scorer is a plugin's PreScore, Score and NormalizeScore, as kube-scheduler's framework
// calls them.
type scorer interface {
	fwk.PreScorePlugin
	fwk.ScorePlugin
}

// InterPodScores returns the scores weights switch on, nil when none is.
func (s *Source) InterPodScores(weights api.InterPodWeights) api.InterPodScores {
	if !weights.Any() {
		return nil
	}
	if weights.Affinity > 0 {
		s.watchNamespaces()
	}
	return &Scores{source: s, weights: weights, pods: podInfos{}, views: views{}, scoring: api.NewNodesHolding(api.HasScoringTerms)}
}

// Score runs, for each plugin the pod gives something to score, its PreScore over the nodes it
// reads, Score on each candidate and NormalizeScore over the candidates, and adds the result
// times its weight. The plugins are built for each pod, as for PreFilter, over the nodes as
// they are now. What kube-scheduler's PreScore would skip is not built: PodTopologySpread for
// a pod without ScheduleAnyway constraints (there are no default constraints), and
// InterPodAffinity for a pod without preferred terms when no node holds a pod with scoring
// terms.
func (s *Scores) Score(ctx context.Context, pod *corev1.Pod, nodes, candidates []*api.NodeInfo, scores []float64) *api.Status {
	withSpread := s.weights.Spread > 0 && api.HasScheduleAnywaySpread(pod)
	preferred := api.HasPreferredPodTerms(pod)
	affinityNodes := nodes
	if s.weights.Affinity > 0 && !preferred {
		if !s.scoring.Built() {
			s.scoring.Build(nodes)
		}
		affinityNodes = s.scoring.Nodes()
	}
	withAffinity := s.weights.Affinity > 0 && len(affinityNodes) > 0
	if !withSpread && !withAffinity {
		return nil
	}
	if withAffinity && !s.source.synced() {
		return &api.Status{Code: api.Unschedulable, Reasons: []string{ErrNotSynced}, Plugin: interpodaffinity.Name}
	}
	cycle := framework.NewCycleState()
	if withSpread {
		if status := s.run(ctx, cycle, spread, s.weights.Spread, pod, nodes, candidates, scores); status != nil {
			return status
		}
	}
	if withAffinity {
		return s.run(ctx, cycle, affinity, s.weights.Affinity, pod, affinityNodes, candidates, scores)
	}
	return nil
}

// run adds one plugin's normalized scores of the candidates times weight, its PreScore
// reading nodes. A plugin whose PreScore skips the pod adds nothing, as in kube-scheduler.
func (s *Scores) run(ctx context.Context, cycle *framework.CycleState, k kind, weight float64, pod *corev1.Pod,
	nodes, candidates []*api.NodeInfo, scores []float64) *api.Status {
	h := handle{factory: s.source.factory, lister: s.views.snapshot(nodes, s.pods, nil)}
	built, err := k.build(ctx, k.args, h, s.source.features)
	if err != nil {
		return &api.Status{Code: api.Error, Reasons: []string{err.Error()}, Plugin: k.name}
	}
	pl := built.(scorer)
	views := s.views.snapshot(candidates, s.pods, nil).nodes
	status := pl.PreScore(ctx, cycle, pod, views)
	switch {
	case status.IsSkip():
		return nil
	case !status.IsSuccess():
		return kubestatus.Convert(status, k.name)
	}
	s.list = s.list[:0]
	for _, v := range views {
		score, status := pl.Score(ctx, cycle, pod, v)
		if !status.IsSuccess() {
			return kubestatus.Convert(status, k.name)
		}
		s.list = append(s.list, fwk.NodeScore{Name: v.Node().Name, Score: score})
	}
	if status := pl.ScoreExtensions().NormalizeScore(ctx, cycle, pod, s.list); !status.IsSuccess() {
		return kubestatus.Convert(status, k.name)
	}
	for i, ns := range s.list {
		scores[i] += weight * float64(ns.Score)
	}
	return nil
}

// NodeChanged forgets the node's view, and counts its pods with scoring terms again.
func (s *Scores) NodeChanged(node *api.NodeInfo) {
	delete(s.views, node)
	s.scoring.Recount(node)
}
