package volumes

import (
	"context"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// StepName names the pre-bind step in logs.
const StepName = "volumebinding"

// step is the pre-bind step of a placement Reserve took on node: it writes the claims'
// bindings (or their selected node) and waits for the PV controller; its undo, or its own
// failure, gives the reservation back, and so does Unreserve when the binder drops the bind
// before the step ran (api.ReservingStep). It waits for the PV controller, so the binder runs
// it apart from its bind workers (api.WaitingStep).
type step struct {
	p    *Plugins
	v    *podVolumes
	node string
}

func (s *step) Name() string { return StepName }

func (s *step) MayWait() {}

var (
	_ api.WaitingStep   = (*step)(nil)
	_ api.ReservingStep = (*step)(nil)
)

// Unreserve gives back the PVs and claims Reserve took in VolumeBinding's assume cache.
func (s *step) Unreserve(ctx context.Context) { s.p.Unreserve(ctx, s.v, s.node) }

// PreBind hands VolumeBinding the pod as it will be bound (spec.nodeName set), as
// kube-scheduler's assumed pod: its wait for the PV controller reads the node from it.
func (s *step) PreBind(ctx context.Context, r *api.PreBindRequest) (api.Undo, error) {
	assumed := *r.Pod
	assumed.Spec.NodeName = s.node
	if err := s.p.binding.PreBind(ctx, s.v.state, &assumed, s.node).AsError(); err != nil {
		s.p.Unreserve(ctx, s.v, s.node)
		return nil, err
	}
	return func(ctx context.Context) error { s.p.Unreserve(ctx, s.v, s.node); return nil }, nil
}
