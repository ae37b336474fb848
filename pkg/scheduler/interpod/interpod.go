// Package interpod decides where a pod may go by where other pods are, as kube-scheduler
// does, by running the PreFilter and Filter of its InterPodAffinity and PodTopologySpread
// plugins (k8s.io/kubernetes/pkg/scheduler/framework/plugins: interpodaffinity,
// podtopologyspread) at the points our scheduler has for them: once per task before its nodes
// are tried, and per node. So a pod's required affinity and anti-affinity, the required
// anti-affinity of the pods already placed, and its DoNotSchedule topology spread constraints
// (minDomains, nodeAffinityPolicy, nodeTaintsPolicy and matchLabelKeys included) refuse a node
// in kube-scheduler's words.
//
// The same plugins' PreScore, Score and NormalizeScore rank the nodes a pod may go to, for the
// nodeorder plugin (Scores): its preferred affinity and anti-affinity, the affinity terms of
// the pods already placed that select it, and its ScheduleAnyway spread constraints.
//
// The plugins read the cluster as kube-scheduler's snapshot of nodes and their pods; here that
// is the session's nodes with the tasks the session has on them, tentative placements
// included, read when the task's nodes are about to be tried: a gang's earlier pods count for
// its later ones, and a placement the session undoes is gone from the next count. A pod the
// session evicts is gone from the counts at once, those of the attempt under way included
// (the plugins' RemovePod, as kube-scheduler's preemption uses it), so a preemptor that a
// victim's presence kept off a node passes there once the victim is evicted. A node's
// pods, once listed, are kept for the session's later pods until the session tells of a change
// there (NodeChanged), as kube-scheduler's snapshot is updated node by node.
package interpod

import (
	"context"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	// The feature gates the plugins consult, at Kubernetes v1.35's defaults.
	_ "k8s.io/kubernetes/pkg/features"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Source gives each session the plugins its configuration switches on (an
// api.InterPodSource and an api.InterPodScoreSource).
type Source struct {
	ctx      context.Context
	factory  informers.SharedInformerFactory
	features feature.Features

	once   sync.Once
	synced func() bool
}

var (
	_ api.InterPodSource      = (*Source)(nil)
	_ api.InterPodScoreSource = (*Source)(nil)
)

// NewSource starts nothing yet: see Start.
func NewSource() *Source {
	return &Source{features: feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)}
}

// Start makes the cache's informer factory the plugins': InterPodAffinity's namespace informer
// is added to it, and started until ctx ends, when a configuration first switches pod
// affinity on (its filter or its score), so a scheduler that starts with it on lists the
// namespaces with the rest of its cache. InterPod and InterPodScores are not called before:
// the scheduler loads its configuration once its components have started.
func (s *Source) Start(ctx context.Context, cache framework.ComponentCache) {
	s.ctx, s.factory = ctx, cache.Informers()
}

// watchNamespaces starts the namespace informer, the first time pod affinity is switched on.
func (s *Source) watchNamespaces() {
	s.once.Do(func() {
		s.synced = s.factory.Core().V1().Namespaces().Informer().HasSynced
		s.factory.Start(s.ctx.Done())
	})
}

// InterPod returns the plugins checks switch on for one session, nil when none is.
func (s *Source) InterPod(checks api.InterPodChecks) api.InterPodPlugins {
	if !checks.Any() {
		return nil
	}
	if checks.Affinity {
		s.watchNamespaces()
	}
	p := &Plugins{source: s, checks: checks, pods: podInfos{}, views: views{}, evicted: evictedPods{}}
	if checks.Spread {
		p.kinds = append(p.kinds, spread)
	}
	if checks.Affinity {
		p.kinds = append(p.kinds, affinity)
	}
	return p
}
