package deviceshare

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// nodeLock is the pre-bind step of a vGPU placement under deviceshare.NodeLockEnable: the
// bind takes upstream's node lock (vgpu.NodeLockAnnotation) first. The device plugin removes
// the lock once it has served the pod, so binds of vGPU pods to one node go one at a time,
// which is what lets upstream's device plugin, which serves the oldest pending pod of its
// node, tell them apart.
type nodeLock struct{}

// nodeLockStep is the one step value a placement adds and its undo takes back.
var nodeLockStep api.PreBindStep = nodeLock{}

func (nodeLock) Name() string { return PluginName }

// PreBind takes the lock: a lock still held (vgpu.NodeLockHeld) is someone else's and refuses
// the bind, with upstream's message; an expired one was left behind and is taken over. The
// write is a merge patch conditioned on the resourceVersion read, so two schedulers (or two
// bind workers) cannot both take a free lock; a conflict reads the node again. Its undo
// releases the lock, so that a refused Binding does not block the node's other vGPU pods
// until the lock expires.
func (nodeLock) PreBind(ctx context.Context, r *api.PreBindRequest) (api.Undo, error) {
	var taken string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, r.Node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := r.Clock.Now()
		if held, ok := n.Annotations[vgpu.NodeLockAnnotation]; ok && vgpu.NodeLockHeld(held, now) {
			return vgpu.NodeLockedError(r.Node)
		}
		taken = vgpu.NodeLockValue(now)
		return patchLock(ctx, r, n.ResourceVersion, &taken)
	})
	if err != nil {
		return nil, fmt.Errorf("node %s locked for %s/%s %s lockname %w", r.Node, r.Pod.Namespace, r.Pod.Name, vgpu.NodeLockAnnotation, err)
	}
	return func(ctx context.Context) error { return releaseLock(ctx, r, taken) }, nil
}

// releaseLock removes the node's lock if it is still the one this bind took (value taken):
// once it has expired, another bind may hold a lock of its own there, which is left, whether
// seen on reading the node or by the patch (the API server refuses it as invalid).
func releaseLock(ctx context.Context, r *api.PreBindRequest, taken string) error {
	n, err := r.Client.CoreV1().Nodes().Get(ctx, r.Node, metav1.GetOptions{})
	if err != nil || n.Annotations[vgpu.NodeLockAnnotation] != taken {
		return err
	}
	_, err = r.Client.CoreV1().Nodes().Patch(ctx, r.Node, types.JSONPatchType, vgpu.NodeLockReleasePatch(taken), metav1.PatchOptions{})
	if apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// patchLock sets the node's lock to value, conditioned on resourceVersion.
func patchLock(ctx context.Context, r *api.PreBindRequest, resourceVersion string, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion,
		"annotations":     map[string]*string{vgpu.NodeLockAnnotation: value},
	}})
	if err != nil {
		return err
	}
	_, err = r.Client.CoreV1().Nodes().Patch(ctx, r.Node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
