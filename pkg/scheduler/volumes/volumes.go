// Package volumes decides pods' PersistentVolumeClaims as kube-scheduler does, by running its
// VolumeBinding plugin (k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding) at
// the points our scheduler has for them: once per task before its nodes are tried
// (PreFilter), per node (Filter), when a placement is made or undone in a session (Reserve,
// Unreserve), and in the bind worker before the Binding (PreBind, undone by Unreserve should
// the Binding fail). A claim of a WaitForFirstConsumer class is thereby matched to an
// available PersistentVolume that the chosen node can reach, or marked for provisioning
// there (volume.kubernetes.io/selected-node), and the pod is bound only once
// kube-controller-manager's PV controller has bound it, within the bind timeout.
//
// One Binding lives as long as the process: the plugin's assume cache of PVs and PVCs must
// see every session's choices until the PV controller's own writes come back.
package volumes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"

	// The feature gates VolumeBinding consults, at Kubernetes v1.35's defaults.
	_ "k8s.io/kubernetes/pkg/features"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// BindTimeout is how long PreBind waits for the PV controller to bind a pod's claims, as
// kube-scheduler's default (VolumeBindingArgs.BindTimeoutSeconds).
const BindTimeout = 600

// Binding is kube-scheduler's VolumeBinding plugin for the life of the process.
type Binding struct {
	pl *volumebinding.VolumeBinding
}

// handle gives the plugin what it asks of kube-scheduler's framework when it is built: the
// informers (PVs, PVCs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, pods
// and nodes) and the client its PreBind writes with. Nothing else is called; the embedded
// interface is left nil.
type handle struct {
	fwk.Handle
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
}

func (h handle) ClientSet() kubernetes.Interface                        { return h.client }
func (h handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }

// New builds the plugin on factory's informers, which the caller starts (the scheduler
// cache's: the pods and nodes it watches are the same informers).
func New(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Binding, error) {
	args := &config.VolumeBindingArgs{BindTimeoutSeconds: BindTimeout}
	pl, err := volumebinding.New(ctx, args, handle{client: client, factory: factory},
		feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's volume binding: %w", err)
	}
	return &Binding{pl: pl.(*volumebinding.VolumeBinding)}, nil
}

// Binding is the api.VolumeBinder of vc-scheduler.
var _ api.VolumeBinder = (*Binding)(nil)

// claims is one placement attempt of a pod that has claims: the plugin's cycle state.
type claims struct {
	state *framework.CycleState
	pod   *corev1.Pod
}

// PreFilter reads the pod's claims: nil for a pod without any (the plugin skips it); a status
// when no node can serve it (a claim missing or being deleted, an Immediate claim not yet
// bound). Callers ask only for pods api.HasClaims says have some.
func (b *Binding) PreFilter(ctx context.Context, pod *corev1.Pod) (api.PodClaims, *api.Status) {
	c := &claims{state: framework.NewCycleState(), pod: pod}
	_, s := b.pl.PreFilter(ctx, c.state, pod, nil)
	switch {
	case s.IsSkip():
		return nil, nil
	case !s.IsSuccess():
		return nil, convert(s)
	}
	return c, nil
}

// Filter says whether node can serve the claims: their bound PVs reach it, and each unbound
// claim has an available PV there or can be provisioned there.
func (b *Binding) Filter(ctx context.Context, pc api.PodClaims, node *corev1.Node) *api.Status {
	c := pc.(*claims)
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return convert(b.pl.Filter(ctx, c.state, c.pod, ni))
}

// Reserve takes, in the plugin's assume cache, the PVs the claims are matched to on node,
// so that the next pod's Filter does not count them available.
func (b *Binding) Reserve(ctx context.Context, pc api.PodClaims, node string) error {
	c := pc.(*claims)
	return b.pl.Reserve(ctx, c.state, c.pod, node).AsError()
}

// Unreserve gives back what Reserve took.
func (b *Binding) Unreserve(ctx context.Context, pc api.PodClaims, node string) {
	c := pc.(*claims)
	b.pl.Unreserve(ctx, c.state, c.pod, node)
}

// Step is the pre-bind step of a placement Reserve took on node: it writes the claims'
// bindings (or their selected node) and waits for the PV controller; its undo, or its own
// failure, gives the reservation back.
func (b *Binding) Step(pc api.PodClaims, node string) api.PreBindStep {
	return &step{b: b, c: pc.(*claims), node: node}
}

type step struct {
	b    *Binding
	c    *claims
	node string
}

// StepName names the step in logs.
const StepName = "volumebinding"

func (s *step) Name() string { return StepName }

// PreBind hands the plugin the pod as it will be bound (spec.nodeName set), as
// kube-scheduler's assumed pod: its wait for the PV controller reads the node from it.
func (s *step) PreBind(ctx context.Context, r *api.PreBindRequest) (api.Undo, error) {
	assumed := *r.Pod
	assumed.Spec.NodeName = s.node
	if err := s.b.pl.PreBind(ctx, s.c.state, &assumed, s.node).AsError(); err != nil {
		s.b.Unreserve(ctx, s.c, s.node)
		return nil, err
	}
	return func(ctx context.Context) error { s.b.Unreserve(ctx, s.c, s.node); return nil }, nil
}

// convert turns the plugin's status into the scheduler's, with its reasons as
// kube-scheduler words them ("node(s) didn't find available persistent volumes to bind").
func convert(s *fwk.Status) *api.Status {
	if s.IsSuccess() {
		return nil
	}
	code := api.Error
	switch s.Code() {
	case fwk.Unschedulable:
		code = api.Unschedulable
	case fwk.UnschedulableAndUnresolvable:
		code = api.UnschedulableAndUnresolvable
	}
	reasons := s.Reasons()
	if len(reasons) == 0 {
		reasons = []string{s.Message()}
	}
	return &api.Status{Code: code, Reasons: reasons, Plugin: "VolumeBinding"}
}
