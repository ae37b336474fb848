package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output")

// The cluster every case reads unless it says otherwise: node gpu-a has two GPUs, the second
// unhealthy, and memory factor 1 (no factor annotation, as upstream plugins); gpu-b has one
// GPU in units of 5 MiB; cpu-1 has none; broken's register annotation does not decode.
// team-a/done finished on GPU 0 of gpu-a and must not count; team-b/waiting is not bound yet;
// team-b/stale books a GPU its node no longer advertises; team-b/web asks for no vGPU.
func cluster(t *testing.T) []runtime.Object {
	t.Helper()
	const h200 = "NVIDIA-NVIDIA H200"
	return []runtime.Object{
		namespace("team-a"), namespace("team-b"),
		gpuNode(t, "gpu-a", "", vgpu.NodeDevice{UUID: "GPU-a0", Count: 4, Memory: 8192, Type: "NVIDIA-NVIDIA GeForce RTX 3070 Ti", Healthy: true, Mode: vgpu.ModeHAMiCore},
			vgpu.NodeDevice{UUID: "GPU-a1", Count: 4, Memory: 8192, Type: "NVIDIA-NVIDIA GeForce RTX 3070 Ti", Healthy: false, Mode: vgpu.ModeHAMiCore}),
		gpuNode(t, "gpu-b", "5", vgpu.NodeDevice{UUID: "GPU-b0", Count: 10, Memory: 28000, Type: h200, Healthy: true, Mode: vgpu.ModeHAMiCore}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "broken", Annotations: map[string]string{vgpu.NodeDevicesAnnotation: "GPU-x,10:"}}},
		vgpuPod(t, "team-a", "train-0", "gpu-a", corev1.PodRunning, vgpu.PodDevices{{{UUID: "GPU-a0", Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 2000, UsedCores: 30}}}, asks("main", 1, 2000, 30)),
		vgpuPod(t, "team-a", "train-1", "gpu-a", corev1.PodRunning, vgpu.PodDevices{{
			{UUID: "GPU-a0", Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000},
			{UUID: "GPU-a1", Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000},
		}}, asks("main", 2, 1000, 0)),
		vgpuPod(t, "team-a", "done", "gpu-a", corev1.PodSucceeded, vgpu.PodDevices{{{UUID: "GPU-a0", Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 4000, UsedCores: 50}}}, asks("main", 1, 4000, 50)),
		vgpuPod(t, "team-b", "infer", "gpu-b", corev1.PodRunning, vgpu.PodDevices{{{UUID: "GPU-b0", Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 20}}},
			corev1.Container{Name: "proxy"}, asks("model", 1, 1000, 20)),
		vgpuPod(t, "team-b", "stale", "gpu-b", corev1.PodRunning, vgpu.PodDevices{{{UUID: "GPU-gone", Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 100}}}, asks("main", 1, 100, 0)),
		vgpuPod(t, "team-b", "waiting", "", corev1.PodPending, nil, asksShare("main", 2, 50, 10)),
		vgpuPod(t, "team-b", "web", "cpu-1", corev1.PodRunning, nil, corev1.Container{Name: "nginx"}),
	}
}

// goldenCase runs "kubectl vgpu ARGS" against fake clientsets holding objects (core) and
// volcano (Queues, PodGroups), after react, and compares what it prints with
// testdata/NAME.golden.
type goldenCase struct {
	name    string
	args    string
	objects []runtime.Object
	volcano []runtime.Object
	react   func(kube, volcano *k8stesting.Fake)
}

// goldenNow is the time the cases run at, which Events' ages count from.
var goldenNow = time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)

func runGolden(t *testing.T, tt goldenCase) {
	t.Helper()
	kube, volcano := fake.NewClientset(tt.objects...), vcfake.NewClientset(tt.volcano...)
	if tt.react != nil {
		tt.react(&kube.Fake, &volcano.Fake)
	}
	newClient := func(options) (clients, error) {
		return clients{kube: kube, volcano: volcano, namespace: "team-a"}, nil
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), strings.Fields(tt.args), &stdout, &stderr, newClient, goldenNow)
	got := fmt.Sprintf("$ kubectl vgpu %s\n%s", tt.args, stdout.String())
	if stderr.Len() > 0 {
		got += "--- stderr\n" + stderr.String()
	}
	if err != nil {
		got += "--- error\n" + err.Error() + "\n"
	}
	path := filepath.Join("testdata", tt.name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// forbid makes the API server refuse verb on resource to the user, as RBAC words it.
func forbid(verb, resource, namespace string) func(kube, volcano *k8stesting.Fake) {
	group := ""
	if resource == "queues" || resource == "podgroups" {
		group = "scheduling.volcano.sh"
	}
	where := "at the cluster scope"
	if namespace != "" {
		where = fmt.Sprintf("in the namespace %q", namespace)
	}
	refuse := func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "",
			fmt.Errorf(`User "alice" cannot %s resource %q in API group %q %s`, verb, resource, group, where))
	}
	return func(kube, volcano *k8stesting.Fake) {
		kube.PrependReactor(verb, resource, refuse)
		volcano.PrependReactor(verb, resource, refuse)
	}
}

func TestGolden(t *testing.T) {
	tests := []goldenCase{
		{name: "nodes", args: "nodes"},
		{name: "nodes-wide", args: "nodes -o wide"},
		{name: "nodes-json", args: "nodes -o json"},
		{name: "nodes-yaml", args: "nodes --output=yaml"},
		{name: "pods-all-namespaces", args: "pods -A"},
		{name: "pods-namespace", args: "pods -n team-b -o wide"},
		{name: "pods-context-namespace", args: "pods"},
		{name: "pods-json", args: "pods -A -o json"},
		{name: "error-no-vgpu-nodes", args: "nodes", objects: []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-1"}}}},
		{name: "error-namespace-not-found", args: "pods -n nope"},
		{name: "error-forbidden-nodes", args: "nodes", react: forbid("list", "nodes", "")},
		{name: "error-forbidden-pods", args: "pods -n team-a", react: forbid("list", "pods", "team-a")},
		{name: "pods-nodes-forbidden", args: "pods -n team-a", react: forbid("list", "nodes", "")},
		{name: "error-bad-output", args: "nodes -o name"},
		{name: "error-unknown-command", args: "gpus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.objects == nil {
				tt.objects = cluster(t)
			}
			runGolden(t, tt)
		})
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func gpuNode(t *testing.T, name, memoryFactor string, gpus ...vgpu.NodeDevice) *corev1.Node {
	t.Helper()
	value, err := vgpu.EncodeNodeDevices(gpus)
	if err != nil {
		t.Fatal(err)
	}
	annotations := map[string]string{vgpu.NodeDevicesAnnotation: value}
	if memoryFactor != "" {
		annotations[vgpu.NodeMemoryFactorAnnotation] = memoryFactor
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

// vgpuPod is a pod as vc-scheduler leaves it: bound with its assignment, when it has one.
func vgpuPod(t *testing.T, ns, name, node string, phase corev1.PodPhase, assigned vgpu.PodDevices, containers ...corev1.Container) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: containers},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if assigned != nil {
		value, err := assigned.Encode()
		if err != nil {
			t.Fatal(err)
		}
		pod.Annotations = map[string]string{vgpu.AssignedDevicesAnnotation: value, vgpu.AssignedNodeAnnotation: node}
	}
	return pod
}

func asks(name string, count, memory, cores int64) corev1.Container {
	return vgpuContainer(name, corev1.ResourceList{
		vgpu.DefaultCountResource:  *resource.NewQuantity(count, resource.DecimalSI),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(memory, resource.DecimalSI),
		vgpu.DefaultCoresResource:  *resource.NewQuantity(cores, resource.DecimalSI),
	})
}

func asksShare(name string, count, percent, cores int64) corev1.Container {
	return vgpuContainer(name, corev1.ResourceList{
		vgpu.DefaultCountResource:            *resource.NewQuantity(count, resource.DecimalSI),
		vgpu.DefaultMemoryPercentageResource: *resource.NewQuantity(percent, resource.DecimalSI),
		vgpu.DefaultCoresResource:            *resource.NewQuantity(cores, resource.DecimalSI),
	})
}

func vgpuContainer(name string, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}
}
