package cache

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// lockNode takes the node lock named lock (an annotation whose value pkg/vgpu defines) for
// one bind, as upstream's scheduler does with deviceshare.NodeLockEnable: a lock still held
// (vgpu.NodeLockHeld) is someone else's and refuses the bind; an expired one was left behind
// and is taken over. The device plugin removes the
// lock once it has served the pod, so binds of vGPU pods to one node go one at a time, which
// is what lets upstream's device plugin, which serves the oldest pending pod of its node,
// tell them apart.
//
// The write is a merge patch conditioned on the resourceVersion read, so two schedulers (or
// two bind workers) cannot both take a free lock; a conflict reads the node again.
func (sc *SchedulerCache) lockNode(ctx context.Context, node, lock string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := sc.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := sc.clock.Now()
		if held, ok := n.Annotations[lock]; ok && vgpu.NodeLockHeld(held, now) {
			return vgpu.NodeLockedError(node)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": n.ResourceVersion,
			"annotations":     map[string]string{lock: vgpu.NodeLockValue(now)},
		}})
		if err != nil {
			return err
		}
		_, err = sc.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
