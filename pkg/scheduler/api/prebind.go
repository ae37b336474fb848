package api

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// PreBindStep is work against the API server that a plugin's placement of a task needs done
// before the task's Binding is sent, as kube-scheduler's PreBind: upstream's node lock taken,
// a claim's volume bound or its selected-node written. A plugin adds its steps to the task
// (AddPreBind) when the placement is made in a session and takes them back if it is undone;
// the cache's bind worker runs them in order, outside any session. The first error fails the
// bind: nothing more is sent, the steps done so far are undone in reverse order (each one's
// Undo, as kube-scheduler's Unreserve), the placement is undone in the cache and the error is
// reported on the pod; a refused Binding undoes every step the same way. A step is a value
// the plugin builds, with whatever long-lived state it needs; the cache knows none of them.
type PreBindStep interface {
	// Name says whose step it is (the plugin), for logs.
	Name() string
	// PreBind does the work for one bind. What it returns undoes that work, should a later
	// step or the Binding fail (nil: nothing to undo); it is not called when PreBind fails.
	PreBind(ctx context.Context, r *PreBindRequest) (Undo, error)
}

// WaitingStep is a PreBindStep that may wait long for another controller (volume binding
// waits for the PV controller, up to its bind timeout). The binder runs a task with such a
// step apart from its bind workers, so that the binds of other pods do not queue behind it.
type WaitingStep interface {
	PreBindStep
	// MayWait marks the step; it is never called.
	MayWait()
}

// ReservingStep is a PreBindStep whose placement took something the scheduler holds in memory
// before the step runs (kube-scheduler's VolumeBinding assumes the PVs a pod's claims are
// matched to, so that no other placement takes them). Undone placements give it back through
// their plugin, a failed PreBind and a step's Undo do so themselves; Unreserve is for a bind
// the binder drops before the step ran: the pod was deleted, or bound by another scheduler,
// while its Binding waited. The binder calls it at most once for a placement, and never once
// PreBind has been called.
type ReservingStep interface {
	PreBindStep
	// Unreserve gives back what the placement reserved for the step.
	Unreserve(ctx context.Context)
}

// Undo takes back what one PreBind did against the API server; its error is only logged,
// the bind having failed already.
type Undo func(ctx context.Context) error

// PreBindRequest is what a PreBindStep works with: the binder's API client and clock, the
// pod as the cache holds it and the node it is being bound to.
type PreBindRequest struct {
	Client kubernetes.Interface
	Clock  clock.PassiveClock
	Pod    *corev1.Pod
	Node   string
}

// AddPreBind adds step to the task's steps, once.
func (t *TaskInfo) AddPreBind(step PreBindStep) {
	if !slices.Contains(t.PreBind, step) {
		t.PreBind = append(slices.Clip(t.PreBind), step)
	}
}

// RemovePreBind takes step back from the task's steps.
func (t *TaskInfo) RemovePreBind(step PreBindStep) {
	if i := slices.Index(t.PreBind, step); i >= 0 {
		t.PreBind = slices.Delete(slices.Clone(t.PreBind), i, i+1)
	}
	if len(t.PreBind) == 0 {
		t.PreBind = nil
	}
}
