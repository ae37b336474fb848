package api

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// VolumeChecks are the volume predicates a configuration switches on
// (predicate.VolumeBindingEnable, predicate.VolumeZoneEnable, predicate.NodeVolumeLimitsEnable).
type VolumeChecks struct {
	Binding, Zone, Limits bool
}

// Any: at least one volume predicate is on.
func (c VolumeChecks) Any() bool { return c.Binding || c.Zone || c.Limits }

// VolumeSource builds kube-scheduler's volume plugins for the predicates plugin
// (pkg/scheduler/volumes, which only vc-scheduler links: the plugin's package, and every
// package that tests with it, need not link kube-scheduler). Their informers start the first
// time a configuration switches a check on, so a scheduler whose configuration has none
// watches no storage object.
type VolumeSource interface {
	// Volumes returns the checks' plugins, nil when none is on; VolumeBinding waits up to
	// bindTimeout for the PV controller to bind a pod's claims (0: it does not wait).
	Volumes(checks VolumeChecks, bindTimeout time.Duration) (VolumePlugins, error)
}

// VolumePlugins decide pods' volumes as kube-scheduler's volume plugins do: VolumeBinding (the
// claims), VolumeZone, NodeVolumeLimits (CSI attach limits) and VolumeRestrictions
// (ReadWriteOncePod claims in use, and inline disks that cannot be shared).
type VolumePlugins interface {
	// PreFilter reads the pod's volumes once per placement attempt, nodes being the session's
	// (a ReadWriteOncePod claim one of their pods already uses refuses it): nil for a pod none
	// of the plugins looks at; a status when no node can serve it.
	PreFilter(ctx context.Context, pod *corev1.Pod, nodes []*NodeInfo) (PodVolumes, *Status)
	// Filter says whether node, with the pods the session has there, can serve the volumes.
	Filter(ctx context.Context, v PodVolumes, node *NodeInfo) *Status
	// Reserve takes the PVs the claims are matched to on node for this placement, and returns
	// the pre-bind step that binds them (nil when there is nothing to bind).
	Reserve(ctx context.Context, v PodVolumes, node string) (PreBindStep, error)
	// Unreserve gives back what Reserve took.
	Unreserve(ctx context.Context, v PodVolumes, node string)
}

// PodVolumes is a VolumePlugins' state for one placement attempt of a pod, its own to read.
type PodVolumes any

// SchedulingVolume: kube-scheduler's volume plugins read v (a claim, an ephemeral claim, or an
// inline disk that counts against attach limits or cannot be shared); no other kind of volume
// rules a node out.
func SchedulingVolume(v *corev1.Volume) bool {
	s := &v.VolumeSource
	return s.PersistentVolumeClaim != nil || s.Ephemeral != nil ||
		s.GCEPersistentDisk != nil || s.AWSElasticBlockStore != nil || s.AzureDisk != nil || s.AzureFile != nil ||
		s.Cinder != nil || s.PortworxVolume != nil || s.VsphereVolume != nil || s.RBD != nil || s.ISCSI != nil
}

// HasSchedulingVolumes: the pod has a volume SchedulingVolume names; other pods need not reach
// the volume plugins.
func HasSchedulingVolumes(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if SchedulingVolume(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}
