//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestRealNodeReady: the kubelet on containerd registered its node and reports Ready.
func TestRealNodeReady(t *testing.T) {
	cs := client(t)
	eventually(t, 60*time.Second, "node "+realNode+" Ready", func(ctx context.Context) (bool, string, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s (%s)", c.Status, c.Message), nil
			}
		}
		return false, "no Ready condition", nil
	})
}

// TestBindingCarriesAnnotations checks the primitive the scheduler's atomic hand-off rests on:
// annotations inside a Binding object are merged into the pod by the API server in the same
// write that sets spec.nodeName, and the real kubelet then runs the pod.
func TestBindingCarriesAnnotations(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	pod := tinyPod(ns, "bound-with-annotations", "printenv")
	pod.Annotations = map[string]string{"user": "kept"}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	assignment := map[string]string{
		vgpu.AssignedNodeAnnotation:      realNode,
		vgpu.BindPhaseAnnotation:         vgpu.BindPhaseAllocating,
		vgpu.DevicesToAllocateAnnotation: "GPU-e2e-0,NVIDIA,2000,30:",
	}
	bind(t, cs, ns, pod.Name, realNode, assignment)

	got := podPhase(t, cs, ns, pod.Name, corev1.PodRunning, 90*time.Second)
	if got.Spec.NodeName != realNode {
		t.Errorf("spec.nodeName = %q, want %q", got.Spec.NodeName, realNode)
	}
	for k, v := range assignment {
		if got.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q (from the Binding)", k, got.Annotations[k], v)
		}
	}
	if got.Annotations["user"] != "kept" {
		t.Errorf("the pod's own annotation was lost: %v", got.Annotations)
	}
}

// TestKwokVGPUNodeRunsBoundPod: a kwok node that advertises the three vGPU resources and the
// device plugin's register annotation accepts a vGPU pod bound to it, which reaches Running.
func TestKwokVGPUNodeRunsBoundPod(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	nodeName := "kwok-gpu-" + ns
	register, err := vgpu.EncodeNodeDevices([]vgpu.NodeDevice{
		{UUID: "GPU-" + ns + "-0", Count: 10, Memory: 8192, Type: vgpu.DeviceTypeForModel("NVIDIA GeForce RTX 3070 Ti"), Healthy: true, Mode: vgpu.ModeHAMiCore},
	})
	if err != nil {
		t.Fatal(err)
	}
	node := kwokNode(nodeName, register, 10, 8192, 100)
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	eventually(t, 30*time.Second, "kwok node Ready", func(ctx context.Context) (bool, string, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("conditions=%v", n.Status.Conditions), nil
	})
	n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Annotations[vgpu.NodeDevicesAnnotation]; got != register {
		t.Errorf("register annotation = %q, want %q", got, register)
	}
	if q := n.Status.Allocatable[vgpu.DefaultMemoryResource]; q.Value() != 8192 {
		t.Errorf("allocatable %s = %s, want 8192", vgpu.DefaultMemoryResource, q.String())
	}

	pod := tinyPod(ns, "vgpu-on-kwok", "")
	pod.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		vgpu.DefaultCountResource:  resource.MustParse("1"),
		vgpu.DefaultMemoryResource: resource.MustParse("2000"),
		vgpu.DefaultCoresResource:  resource.MustParse("30"),
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	bind(t, cs, ns, pod.Name, nodeName, map[string]string{vgpu.AssignedNodeAnnotation: nodeName})
	podPhase(t, cs, ns, pod.Name, corev1.PodRunning, 30*time.Second)
}

// bind assigns the pod to the node through the pods/binding subresource.
func bind(t *testing.T, cs kubernetes.Interface, ns, pod, node string, annotations map[string]string) {
	t.Helper()
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns, Annotations: annotations},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := cs.CoreV1().Pods(ns).Bind(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind pod %s/%s to %s: %v", ns, pod, node, err)
	}
}

// tinyPod is a one-container pod of the local tiny image that no scheduler picks up.
func tinyPod(ns, name, arg string) *corev1.Pod {
	var args []string
	if arg != "" {
		args = []string{arg}
	}
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulerName:                 noScheduler,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "main", Image: tinyImage, Args: args, ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

// kwokNode is a simulated node with vGPU allocatable and the device plugin's annotation.
func kwokNode(name, register string, number, memoryMiB, cores int64) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:         resource.MustParse("32"),
		corev1.ResourceMemory:      resource.MustParse("256Gi"),
		corev1.ResourcePods:        resource.MustParse("110"),
		vgpu.DefaultCountResource:  *resource.NewQuantity(number, resource.DecimalSI),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(memoryMiB, resource.DecimalSI),
		vgpu.DefaultCoresResource:  *resource.NewQuantity(cores, resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokAnnotation: "fake", vgpu.NodeDevicesAnnotation: register},
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux"},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}
