//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
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

// mallory is the hostile pod author: bound to the edit ClusterRole in the test's namespace
// and nothing else.
const mallory = "mallory"

// podAuthor is a client acting as mallory, whose RoleBinding it makes on first use.
func podAuthor(t *testing.T, e *schedulerEnv) kubernetes.Interface {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: mallory + "-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: mallory}}}
	if _, err := e.cs.RbacV1().RoleBindings(e.ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cs := impersonating(t, mallory, []string{"system:authenticated"}, nil)
	// The API server's authorizer learns of a new RoleBinding from its own watch, a moment
	// after the create returns: until then mallory is refused by RBAC, not by the policies.
	eventually(t, 30*time.Second, "mallory's RoleBinding in effect", func(ctx context.Context) (bool, string, error) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: e.ns, Verb: "create", Resource: "pods"}}}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return got.Status.Allowed, got.Status.Reason, nil
	})
	return cs
}

// attackAssignments plays a hostile pod author, who may create and edit pods in their own
// namespace and nothing else, against the chart's admission policy: forging a vGPU assignment
// on create, or changing one on update, is refused with the keys named; an ordinary pod passes.
func attackAssignments(t *testing.T, e *schedulerEnv) {
	ctx := context.Background()
	mallory := podAuthor(t, e)
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

// controlEnvRefusal is the message both the admission policy and the device plugin give for a
// container that sets variable.
func controlEnvRefusal(ns, pod string, kind vgpu.ContainerKind, container, variable string) string {
	return (&vgpu.EnvRefusal{Namespace: ns, Pod: pod, Kind: kind, Container: container, Variable: variable}).Error()
}

// attackControlEnv plays mallory against the chart's control-variable policy (its default
// values: CUDA_DISABLE_CONTROL refused, envFrom prefixed). A vGPU pod whose container or init
// container sets a variable of its slice is refused on create, and an ephemeral container that
// sets one is refused when added, each with the device plugin's words; ordinary env, envFrom
// with a safe prefix, and LD_PRELOAD in a pod without vGPU pass; envFrom without a prefix, or
// with one a digit completes into CUDA_DEVICE_MEMORY_LIMIT_<n>, is refused; so is a mount over
// HAMi-core's paths.
func attackControlEnv(t *testing.T, e *schedulerEnv) {
	ctx := context.Background()
	pods := podAuthor(t, e).CoreV1().Pods(e.ns)
	vgpuPod := func(name string) *corev1.Pod {
		pod := tinyPod(e.ns, name, "")
		pod.Spec.Containers = []corev1.Container{vgpuContainer("main", 1000, 10)}
		return pod
	}
	create := func(pod *corev1.Pod) error {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	names := append(vgpu.ControlEnvNames(), vgpu.MemoryLimitEnv(0), vgpu.SMLimitEnv(1))
	envWith := func(name string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: name, Value: "0"}}
	}
	for i, name := range names {
		pod := vgpuPod(fmt.Sprintf("env-%d", i))
		pod.Spec.Containers[0].Env = envWith(name)
		forbidden(t, name+" in a container", create(pod), controlEnvRefusal(e.ns, pod.Name, vgpu.AppContainer, "main", name))

		pod = vgpuPod(fmt.Sprintf("init-env-%d", i))
		pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: tinyImage, ImagePullPolicy: corev1.PullNever, Env: envWith(name)}}
		forbidden(t, name+" in an init container", create(pod), controlEnvRefusal(e.ns, pod.Name, vgpu.InitContainer, "setup", name))
	}

	// Allowed: ordinary variables (CUDA_VISIBLE_DEVICES among them) and envFrom with a prefix no
	// control variable starts with.
	fromConfigMap := func(prefix string) []corev1.EnvFromSource {
		return []corev1.EnvFromSource{{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	}
	ordinary := vgpuPod("ordinary-env")
	ordinary.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: "CUDA_VISIBLE_DEVICES", Value: "0"}}
	ordinary.Spec.Containers[0].EnvFrom = fromConfigMap("APP_")
	if err := create(ordinary); err != nil {
		t.Errorf("a vGPU pod with ordinary env and envFrom prefixed APP_ was refused: %v", err)
	}
	noVGPU := tinyPod(e.ns, "no-vgpu-preload", "")
	noVGPU.Spec.Containers[0].Env = []corev1.EnvVar{{Name: vgpu.EnvPreload, Value: "/lib/libfoo.so"},
		{Name: "NVIDIA_VISIBLE_DEVICES", Value: "void"}}
	if err := create(noVGPU); err != nil {
		t.Errorf("a pod without vGPU that sets LD_PRELOAD and NVIDIA_VISIBLE_DEVICES=void was refused: %v", err)
	}
	// A pod without vGPU that names every GPU for the NVIDIA container toolkit is refused.
	allGPUs := tinyPod(e.ns, "no-vgpu-all-gpus", "")
	allGPUs.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
	forbidden(t, "NVIDIA_VISIBLE_DEVICES=all without a GPU", create(allGPUs),
		`pod `+e.ns+`/no-vgpu-all-gpus container "main" sets NVIDIA_VISIBLE_DEVICES but asks for no GPU`)
	for i, prefix := range []string{"", "CUDA_DEVICE_MEMORY_LIMIT_1"} {
		pod := vgpuPod(fmt.Sprintf("envfrom-%d", i))
		pod.Spec.Containers[0].EnvFrom = fromConfigMap(prefix)
		want := (&vgpu.EnvRefusal{Namespace: e.ns, Pod: pod.Name, Kind: vgpu.AppContainer, Container: "main",
			Source: `ConfigMap "settings"`, Prefix: prefix, Mode: vgpu.EnvFromPrefixed}).Error()
		forbidden(t, fmt.Sprintf("envFrom with prefix %q", prefix), create(pod), want)
	}

	// Ephemeral containers come through pods/ephemeralcontainers, which edit does not grant;
	// clusters that allow kubectl debug do, as here.
	debugRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: mallory + "-debug"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/ephemeralcontainers"}, Verbs: []string{"get", "update", "patch"}}}}
	if _, err := e.cs.RbacV1().Roles(e.ns).Create(ctx, debugRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: mallory + "-debug"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: debugRole.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: mallory}}}
	if _, err := e.cs.RbacV1().RoleBindings(e.ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addEphemeral := func(container string, env []corev1.EnvVar) error {
		pod, err := pods.Get(ctx, ordinary.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: container, Image: tinyImage, ImagePullPolicy: corev1.PullNever, Env: env}})
		_, err = pods.UpdateEphemeralContainers(ctx, ordinary.Name, pod, metav1.UpdateOptions{})
		return err
	}
	for i, name := range names {
		container := fmt.Sprintf("debug-%d", i)
		forbidden(t, name+" in an ephemeral container", addEphemeral(container, envWith(name)),
			controlEnvRefusal(e.ns, ordinary.Name, vgpu.EphemeralContainer, container, name))
	}
	if err := addEphemeral("debug", []corev1.EnvVar{{Name: "HOME", Value: "/root"}}); err != nil {
		t.Errorf("an ephemeral container with ordinary env was refused: %v", err)
	}

	// A ConfigMap file mounted with subPath over each of HAMi-core's paths, or a volume over a
	// folder above one, is refused with the device plugin's words; ordinary mounts, /tmp among
	// them, pass.
	withMount := func(name, path, subPath string) *corev1.Pod {
		pod := vgpuPod(name)
		pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: path, SubPath: subPath}}
		return pod
	}
	for i, path := range []string{vgpu.ContainerPreloadPath, vgpu.ContainerLibraryPath, vgpu.OverrideEnvPath,
		vgpu.ContainerCachePath, vgpu.ContainerLockPath, "/etc", "/usr/local"} {
		pod := withMount(fmt.Sprintf("mount-%d", i), path, "file")
		forbidden(t, "a mount at "+path, create(pod), vgpu.CheckMounts(pod).Error())
	}
	created := []string{ordinary.Name, noVGPU.Name}
	for i, path := range []string{"/data", "/etc/myapp", "/tmp"} {
		pod := withMount(fmt.Sprintf("ordinary-mount-%d", i), path, "")
		if err := create(pod); err != nil {
			t.Errorf("a vGPU pod that mounts a volume at %s was refused: %v", path, err)
		}
		created = append(created, pod.Name)
	}
	for _, name := range created {
		_ = e.cs.CoreV1().Pods(e.ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
}
