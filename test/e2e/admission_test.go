//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// impersonating is a client that acts as user (with groups and extra), through the admin's
// impersonation right: the API server authorizes and admits its requests as that user's.
func impersonating(t *testing.T, user string, groups []string, extra map[string][]string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate.UserName, cfg.Impersonate.Groups, cfg.Impersonate.Extra = user, groups, extra
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// forbidden fails unless err is the API server refusing the request with a message holding
// every want.
func forbidden(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil || !(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) {
		t.Errorf("%s: got %v, want the API server to refuse it", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: refusal %q does not say %q", what, err, w)
		}
	}
}

// attackAssignments plays a hostile pod author, who may create and edit pods in their own
// namespace and nothing else, against the chart's admission policy: forging a vGPU assignment
// on create, or changing one on update, is refused with the keys named; an ordinary pod passes.
func attackAssignments(t *testing.T, e *schedulerEnv) {
	ctx := context.Background()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "mallory-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "mallory"}}}
	if _, err := e.cs.RbacV1().RoleBindings(e.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mallory := impersonating(t, "mallory", []string{"system:authenticated"}, nil)
	forged := tinyPod(e.ns, "forged", "")
	forged.Spec.NodeName = realNode
	forged.Annotations = map[string]string{
		vgpu.AssignedDevicesAnnotation:   "GPU-victim,NVIDIA,999999,0:;",
		vgpu.DevicesToAllocateAnnotation: "GPU-victim,NVIDIA,999999,0:;",
		vgpu.BindPhaseAnnotation:         vgpu.BindPhaseAllocating,
		vgpu.AssignedTimeAnnotation:      "1",
	}
	_, err := mallory.CoreV1().Pods(e.ns).Create(ctx, forged, metav1.CreateOptions{})
	forbidden(t, "a pod created with a forged assignment", err, "pod "+e.ns+"/forged",
		vgpu.AssignedDevicesAnnotation, vgpu.DevicesToAllocateAnnotation, vgpu.BindPhaseAnnotation, vgpu.AssignedTimeAnnotation)

	plain := tinyPod(e.ns, "plain", "")
	plain.Annotations = map[string]string{"example.com/note": "harmless"}
	if _, err := mallory.CoreV1().Pods(e.ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatalf("an ordinary pod was refused: %v", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, vgpu.BindPhaseAnnotation, vgpu.BindPhaseAllocating)
	_, err = mallory.CoreV1().Pods(e.ns).Patch(ctx, "plain", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	forbidden(t, "re-arming bind-phase on an existing pod", err, vgpu.BindPhaseAnnotation)
	_, err = mallory.CoreV1().Pods(e.ns).Patch(ctx, "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Errorf("an ordinary edit was refused: %v", err)
	}
}

// attackFromDevicePlugin uses the device plugin's identity (its ServiceAccount, and the node its
// pod-bound token names) to write another node and a pod on another node: both refused, while
// its own node is still writable.
func attackFromDevicePlugin(t *testing.T, e *schedulerEnv, release string) {
	ctx := context.Background()
	other := kwokNode(e.name+"-other", "", 0, 0, 0)
	if _, err := e.cs.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(context.Background(), other.Name, metav1.DeleteOptions{}) })
	elsewhere := tinyPod(e.ns, "elsewhere", "")
	elsewhere.Spec.NodeName = other.Name
	elsewhere.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists}}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, elsewhere, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := fmt.Sprintf("system:serviceaccount:%s:%s-device-plugin", chartNamespace, release)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + chartNamespace, "system:authenticated"}
	plugin := impersonating(t, sa, groups, map[string][]string{"authentication.kubernetes.io/node-name": {realNode}})
	note := []byte(`{"metadata":{"annotations":{"e2e.volcano-vgpu/probe":"x"}}}`)
	if _, err := plugin.CoreV1().Nodes().Patch(ctx, realNode, types.MergePatchType, note, metav1.PatchOptions{}); err != nil {
		t.Errorf("the device plugin could not patch its own node: %v", err)
	}
	_, err := plugin.CoreV1().Nodes().Patch(ctx, other.Name, types.MergePatchType, note, metav1.PatchOptions{})
	forbidden(t, "the device plugin patching another node", err, "node "+realNode, "nodes "+other.Name)
	_, err = plugin.CoreV1().Pods(e.ns).Patch(ctx, "elsewhere", types.MergePatchType, note, metav1.PatchOptions{})
	forbidden(t, "the device plugin patching a pod on another node", err, "pods "+e.ns+"/elsewhere")
	anonymous := impersonating(t, sa, groups, nil)
	_, err = anonymous.CoreV1().Nodes().Patch(ctx, realNode, types.MergePatchType, note, metav1.PatchOptions{})
	forbidden(t, "the device plugin's account without a node-bound token", err, "(unknown)")
	unnote := []byte(`{"metadata":{"annotations":{"e2e.volcano-vgpu/probe":null}}}`)
	_, _ = e.cs.CoreV1().Nodes().Patch(ctx, realNode, types.MergePatchType, unnote, metav1.PatchOptions{})
}
