package volumes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumerestrictions"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/kubestatus"
)

// Plugins are the volume plugins one configuration switches on (an api.VolumePlugins).
// VolumeRestrictions has no switch of its own upstream: it runs whenever any of the others does.
type Plugins struct {
	*plugins
	checks api.VolumeChecks
	nodes  nodeInfos
}

var _ api.VolumePlugins = (*Plugins)(nil)

// filter is a plugin's PreFilter and Filter, as kube-scheduler's framework calls them.
type filter interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
}

// podVolumes is one placement attempt of a pod: the plugins' cycle state, and the plugins that
// did not skip the pod, in kube-scheduler's filter order.
type podVolumes struct {
	state   *framework.CycleState
	pod     *corev1.Pod
	filters []filter
	// binds: VolumeBinding has claims of the pod to bind.
	binds bool
}

// ErrNotSynced is the reason a pod with volumes waits while the storage informers list.
const ErrNotSynced = "the scheduler has not yet listed the cluster's storage objects"

// PreFilter reads the pod's volumes: nil for a pod that every plugin skips; a status when no
// node can serve it (a claim missing or being deleted, an Immediate claim not yet bound, a
// ReadWriteOncePod claim a pod on nodes already uses).
func (p *Plugins) PreFilter(ctx context.Context, pod *corev1.Pod, nodes []*api.NodeInfo) (api.PodVolumes, *api.Status) {
	if !p.ready() {
		return nil, &api.Status{Code: api.Unschedulable, Reasons: []string{ErrNotSynced}, Plugin: "VolumeBinding"}
	}
	h := p.handle
	h.lister = claimsInUse{nodes: nodes, self: pod.UID}
	restrictions, err := volumerestrictions.New(ctx, nil, h, p.features)
	if err != nil {
		return nil, &api.Status{Code: api.Error, Reasons: []string{err.Error()}, Plugin: volumerestrictions.Name}
	}
	candidates := []filter{restrictions.(filter)}
	if p.checks.Limits {
		candidates = append(candidates, p.limits)
	}
	if p.checks.Binding {
		candidates = append(candidates, p.binding)
	}
	if p.checks.Zone {
		candidates = append(candidates, p.zone)
	}
	v := &podVolumes{state: framework.NewCycleState(), pod: pod}
	for _, pl := range candidates {
		_, s := pl.PreFilter(ctx, v.state, pod, nil)
		switch {
		case s.IsSkip():
			continue
		case !s.IsSuccess():
			return nil, kubestatus.Convert(s, pl.Name())
		}
		v.filters = append(v.filters, pl)
		v.binds = v.binds || pl == filter(p.binding)
	}
	if len(v.filters) == 0 {
		return nil, nil
	}
	return v, nil
}

// Filter says whether node can serve the volumes: no unshareable disk of the pod in use there,
// the node's CSI attach limits not exceeded, bound PVs reaching it and in its zone, and each
// unbound claim with an available PV there or provisionable there.
func (p *Plugins) Filter(ctx context.Context, pv api.PodVolumes, node *api.NodeInfo) *api.Status {
	v := pv.(*podVolumes)
	ni := newNodeView(p.nodes.get(node.Node), node)
	for _, pl := range v.filters {
		if s := pl.Filter(ctx, v.state, v.pod, ni); !s.IsSuccess() {
			return kubestatus.Convert(s, pl.Name())
		}
	}
	return nil
}

// Reserve takes, in VolumeBinding's assume cache, the PVs the claims are matched to on node,
// so that the next pod's Filter does not count them available, and returns the step that
// binds them: none when every claim is bound already.
func (p *Plugins) Reserve(ctx context.Context, pv api.PodVolumes, node string) (api.PreBindStep, error) {
	v := pv.(*podVolumes)
	if !v.binds {
		return nil, nil
	}
	if err := p.binding.Reserve(ctx, v.state, v.pod, node).AsError(); err != nil {
		return nil, err
	}
	if s := p.binding.PreBindPreFlight(ctx, v.state, v.pod, node); s.IsSkip() {
		return nil, nil
	}
	return &step{p: p, v: v, node: node}, nil
}

// Unreserve gives back what Reserve took.
func (p *Plugins) Unreserve(ctx context.Context, pv api.PodVolumes, node string) {
	if v := pv.(*podVolumes); v.binds {
		p.binding.Unreserve(ctx, v.state, v.pod, node)
	}
}
