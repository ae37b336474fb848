package api

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// VolumeBinder decides pods' PersistentVolumeClaims for the predicates plugin, as
// kube-scheduler's VolumeBinding does (pkg/scheduler/volumes, which only vc-scheduler links:
// the plugin's package, and every package that tests with it, need not link kube-scheduler).
type VolumeBinder interface {
	// PreFilter reads the pod's claims once per placement attempt: nil for a pod without
	// any; a status when no node can serve it (a claim missing, or Immediate and unbound).
	PreFilter(ctx context.Context, pod *corev1.Pod) (PodClaims, *Status)
	// Filter says whether node can serve the claims.
	Filter(ctx context.Context, c PodClaims, node *corev1.Node) *Status
	// Reserve takes the PVs the claims are matched to on node for this placement.
	Reserve(ctx context.Context, c PodClaims, node string) error
	// Unreserve gives back what Reserve took.
	Unreserve(ctx context.Context, c PodClaims, node string)
	// Step is the pre-bind step that binds the claims Reserve matched on node.
	Step(c PodClaims, node string) PreBindStep
}

// PodClaims is a VolumeBinder's state for one placement attempt of a pod, its own to read.
type PodClaims any

// HasClaims: the pod has a persistentVolumeClaim or an ephemeral volume, the only volumes a
// VolumeBinder looks at; other pods need not reach it.
func HasClaims(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}
