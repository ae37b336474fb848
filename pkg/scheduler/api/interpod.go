package api

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// InterPodChecks are the checks between pods a configuration switches on
// (predicate.PodAffinityEnable, predicate.PodTopologySpreadEnable).
type InterPodChecks struct {
	Affinity, Spread bool
}

// Any: at least one of them is on.
func (c InterPodChecks) Any() bool { return c.Affinity || c.Spread }

// InterPodSource builds kube-scheduler's InterPodAffinity and PodTopologySpread filters for the
// predicates plugin (pkg/scheduler/interpod, which only vc-scheduler links, as
// pkg/scheduler/volumes). InterPodAffinity reads namespaces' labels (a term's
// namespaceSelector): their informer starts the first time a configuration switches it on.
type InterPodSource interface {
	// InterPod returns the checks' plugins, nil when none is on.
	InterPod(InterPodChecks) InterPodPlugins
}

// InterPodPlugins decide where a pod may go by where other pods are, as kube-scheduler's
// filters do: its required pod affinity and anti-affinity, the required anti-affinity of the
// pods already placed (which keeps away pods that have no constraint of their own), and its
// DoNotSchedule topology spread constraints (with minDomains, nodeAffinityPolicy and
// nodeTaintsPolicy).
type InterPodPlugins interface {
	// PreFilter counts, over nodes and the pods the session has on them (its tentative
	// placements included, so a gang's earlier pods count for its later ones), the pods that
	// the pod's terms and constraints select and those whose anti-affinity selects the pod:
	// nil when nothing is left to check; a status when no node can take it. For a pod without
	// constraints of its own (HasPodConstraints false) only the nodes that hold a pod with
	// required anti-affinity matter, and they are all it needs to be given.
	PreFilter(ctx context.Context, pod *corev1.Pod, nodes []*NodeInfo) (InterPodState, *Status)
	// Filter says whether node takes the pod by those counts.
	Filter(ctx context.Context, s InterPodState, node *NodeInfo) *Status
	// NodeChanged says the session put a task on node or took one off it (a placement or its
	// undo): what the plugins keep of the node's pods is read again.
	NodeChanged(node *NodeInfo)
	// Evicted says the session evicts pod from node. Its task stays there, releasing, until
	// the pod is gone, but what the session places meanwhile goes where the pod will no longer
	// be: no later count includes it, and s (the counts of the attempt under way, nil for
	// none) loses it at once, by the plugins' own RemovePod, as kube-scheduler's preemption
	// takes a victim off its node and out of the pod's PreFilter state before it filters the
	// node again. A status only when a plugin fails.
	Evicted(ctx context.Context, s InterPodState, pod *corev1.Pod, node *NodeInfo) *Status
	// Unevicted undoes Evicted: the pod counts again, in s at once (AddPod).
	Unevicted(ctx context.Context, s InterPodState, pod *corev1.Pod, node *NodeInfo) *Status
}

// InterPodState is an InterPodPlugins' counts for one placement attempt of a pod, its own to
// read.
type InterPodState any

// HasPodConstraints: the pod has required pod affinity or anti-affinity, or a DoNotSchedule
// topology spread constraint, so the nodes it may go to depend on where other pods are. Its
// preferred terms and ScheduleAnyway constraints only score nodes.
func HasPodConstraints(pod *corev1.Pod) bool {
	for i := range pod.Spec.TopologySpreadConstraints {
		if pod.Spec.TopologySpreadConstraints[i].WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		return true
	}
	return HasRequiredAntiAffinity(pod)
}

// HasRequiredAntiAffinity: the pod has required anti-affinity terms, which keep the pods they
// select out of its topology domains whether or not those pods have constraints themselves.
func HasRequiredAntiAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// InterPodWeights are nodeorder's weights for kube-scheduler's InterPodAffinity and
// PodTopologySpread scores (podaffinity.weight, podtopologyspread.weight); 0 turns one off.
type InterPodWeights struct {
	Affinity, Spread float64
}

// Any: at least one of them is on.
func (w InterPodWeights) Any() bool { return w.Affinity > 0 || w.Spread > 0 }

// InterPodScoreSource builds kube-scheduler's InterPodAffinity and PodTopologySpread scores
// for the nodeorder plugin (pkg/scheduler/interpod, as InterPodSource).
type InterPodScoreSource interface {
	// InterPodScores returns the scores weights switch on, nil when none is.
	InterPodScores(InterPodWeights) InterPodScores
}

// InterPodScores rank nodes by where other pods are, as kube-scheduler's score plugins do:
// the pod's preferred pod affinity and anti-affinity, the affinity terms of the pods already
// placed that select it, and its ScheduleAnyway topology spread constraints.
type InterPodScores interface {
	// Score adds to scores[i] the weighted scores of candidates[i] for the pod, each
	// normalized over the candidates (0–100 before its weight), counted over nodes and the
	// pods the session has on them, its tentative placements included. For a pod without
	// preferred terms or ScheduleAnyway constraints it adds nothing, at the cost of a look at
	// an index, unless a placed pod has affinity terms that score others (HasScoringTerms).
	Score(ctx context.Context, pod *corev1.Pod, nodes, candidates []*NodeInfo, scores []float64) *Status
	// NodeChanged says the session put a task on node or took one off it.
	NodeChanged(node *NodeInfo)
}

// HasScoringTerms: the pod has pod affinity terms that score nodes for the pods they select,
// which kube-scheduler's InterPodAffinity reads for every pod it scores: required affinity
// (at its hard pod affinity weight), preferred affinity and preferred anti-affinity. Required
// anti-affinity only filters.
func HasScoringTerms(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	if pa := a.PodAffinity; pa != nil && (len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || len(pa.PreferredDuringSchedulingIgnoredDuringExecution) > 0) {
		return true
	}
	return a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0
}

// HasPreferredPodTerms: the pod has preferred pod affinity or anti-affinity.
func HasPreferredPodTerms(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
}

// HasScheduleAnywaySpread: the pod has a ScheduleAnyway topology spread constraint.
func HasScheduleAnywaySpread(pod *corev1.Pod) bool {
	for i := range pod.Spec.TopologySpreadConstraints {
		if pod.Spec.TopologySpreadConstraints[i].WhenUnsatisfiable == corev1.ScheduleAnyway {
			return true
		}
	}
	return false
}

// NodesHolding indexes a session's nodes by how many of their tasks' pods it selects: the
// nodes a pod without constraints of its own need be looked at for (those holding pods with
// required anti-affinity for the filters, with scoring terms for the scores). It is built on
// first need from the nodes' tasks, then kept current by Recount on every placement and its
// undo, and read only between placements.
type NodesHolding struct {
	selects func(*corev1.Pod) bool
	count   map[*NodeInfo]int
	// list is count's nodes, nil since count last changed.
	list []*NodeInfo
	// some: count is not empty.
	some bool
}

// NewNodesHolding is an index, not yet built, of the nodes holding pods that selects selects.
func NewNodesHolding(selects func(*corev1.Pod) bool) *NodesHolding {
	return &NodesHolding{selects: selects}
}

// Built: Build was called.
func (h *NodesHolding) Built() bool { return h.count != nil }

// Build counts the selected pods of the nodes' tasks.
func (h *NodesHolding) Build(nodes []*NodeInfo) {
	h.count = map[*NodeInfo]int{}
	for _, n := range nodes {
		h.Recount(n)
	}
}

// Recount counts the node's selected pods again, once the index is built. An eviction
// leaves its task on the node (releasing) until the pod is gone, and so in the count.
func (h *NodesHolding) Recount(node *NodeInfo) {
	if h.count == nil {
		return
	}
	n := 0
	for _, t := range node.Tasks {
		if h.selects(t.Pod) {
			n++
		}
	}
	if n == h.count[node] {
		return
	}
	if n == 0 {
		delete(h.count, node)
	} else {
		h.count[node] = n
	}
	h.list, h.some = nil, len(h.count) > 0
}

// Some: some node holds a selected pod.
func (h *NodesHolding) Some() bool { return h.some }

// Nodes are the nodes that hold a selected pod.
func (h *NodesHolding) Nodes() []*NodeInfo {
	if h.list == nil && len(h.count) > 0 {
		h.list = make([]*NodeInfo, 0, len(h.count))
		for n := range h.count {
			h.list = append(h.list, n)
		}
	}
	return h.list
}
