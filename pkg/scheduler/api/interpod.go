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
	// NodeChanged says the session put a task on node or took one off it (a placement, its
	// undo, an eviction): what the plugins keep of the node's pods is read again.
	NodeChanged(node *NodeInfo)
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
