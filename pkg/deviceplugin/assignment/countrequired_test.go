package assignment

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// memoryOnly is a container that limits vGPU memory without a count.
func memoryOnly(name string, memory int64) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		names.Memory: *resource.NewQuantity(memory, resource.DecimalSI),
	}}}
}

func nodePod(name string, created int64, phase corev1.PodPhase, node string, init, containers []corev1.Container) *corev1.Pod {
	return st.MakePod().Namespace("ns").Name(name).Created(int(created)).Node(node).Phase(phase).
		InitContainers(init...).Containers(containers...).Obj()
}

func TestCountRequired(t *testing.T) {
	tests := []struct {
		name   string
		pods   []runtime.Object
		memory int
		// wantErr is the exact error; empty means an empty response.
		wantErr string
	}{
		{
			name:    "memory without count is refused, naming pod, container and the missing resource",
			pods:    []runtime.Object{nodePod("p", 1, corev1.PodPending, testNode, nil, []corev1.Container{ctr("plain", -1, 0, 0), memoryOnly("gpu", 3000)})},
			memory:  3000,
			wantErr: `pod ns/p container "gpu" requests 3000 volcano.sh/vgpu-memory but no volcano.sh/vgpu-number: vGPU memory and cores are only assigned and enforced for containers that request volcano.sh/vgpu-number; add a volcano.sh/vgpu-number limit`,
		},
		{
			name:    "init container without count",
			pods:    []runtime.Object{nodePod("p", 1, corev1.PodPending, testNode, []corev1.Container{memoryOnly("setup", 500)}, []corev1.Container{ctr("main", -1, 0, 0)})},
			memory:  500,
			wantErr: `pod ns/p container "setup" requests 500 volcano.sh/vgpu-memory but no volcano.sh/vgpu-number: vGPU memory and cores are only assigned and enforced for containers that request volcano.sh/vgpu-number; add a volcano.sh/vgpu-number limit`,
		},
		{
			name: "the oldest pod is named",
			pods: []runtime.Object{
				nodePod("newer", 20, corev1.PodPending, testNode, nil, []corev1.Container{memoryOnly("gpu", 100)}),
				nodePod("older", 10, corev1.PodPending, testNode, nil, []corev1.Container{memoryOnly("gpu", 100)}),
			},
			memory:  100,
			wantErr: `pod ns/older container "gpu" requests 100 volcano.sh/vgpu-memory but no volcano.sh/vgpu-number: vGPU memory and cores are only assigned and enforced for containers that request volcano.sh/vgpu-number; add a volcano.sh/vgpu-number limit`,
		},
		{
			name:   "a container with count and memory",
			pods:   []runtime.Object{nodePod("p", 1, corev1.PodPending, testNode, nil, []corev1.Container{ctr("gpu", 1, 3000, 0)})},
			memory: 3000,
		},
		{
			name: "a counted container asking the same amount may be the one kubelet admits",
			pods: []runtime.Object{
				nodePod("wrong", 1, corev1.PodPending, testNode, nil, []corev1.Container{memoryOnly("gpu", 3000)}),
				nodePod("right", 2, corev1.PodPending, testNode, nil, []corev1.Container{ctr("gpu", 1, 3000, 0)}),
			},
			memory: 3000,
		},
		{
			name:   "memory-only container asking another amount",
			pods:   []runtime.Object{nodePod("p", 1, corev1.PodPending, testNode, nil, []corev1.Container{memoryOnly("gpu", 3000)})},
			memory: 2000,
		},
		{
			name:   "memory-only pod already running",
			pods:   []runtime.Object{nodePod("p", 1, corev1.PodRunning, testNode, nil, []corev1.Container{memoryOnly("gpu", 3000)})},
			memory: 3000,
		},
		{
			name:   "memory-only pod on another node",
			pods:   []runtime.Object{nodePod("p", 1, corev1.PodPending, "node-b", nil, []corev1.Container{memoryOnly("gpu", 3000)})},
			memory: 3000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			guard := NewCountRequired(fake.NewClientset(tt.pods...), testNode, names.Count, names.Memory)
			response, err := guard.Allocate(context.Background(), &pluginapi.ContainerAllocateRequest{DevicesIds: make([]string, tt.memory)})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Allocate: %v\nwant: %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if len(response.Envs) != 0 || len(response.Mounts) != 0 || len(response.Devices) != 0 {
				t.Errorf("response %v, want an empty one", response)
			}
		})
	}
}

func TestCountRequiredAllowsWhenPodsCannotBeListed(t *testing.T) {
	client := fake.NewClientset(nodePod("p", 1, corev1.PodPending, testNode, nil, []corev1.Container{memoryOnly("gpu", 10)}))
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("API server unavailable")
	})
	guard := NewCountRequired(client, testNode, names.Count, names.Memory)
	if _, err := guard.Allocate(context.Background(), &pluginapi.ContainerAllocateRequest{DevicesIds: make([]string, 10)}); err != nil {
		t.Fatalf("Allocate: %v, want the container allowed when the check cannot run", err)
	}
}

func TestCountRequiredForCores(t *testing.T) {
	coresOnly := corev1.Container{Name: "gpu", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		names.Cores: *resource.NewQuantity(50, resource.DecimalSI),
	}}}
	guard := NewCountRequired(fake.NewClientset(nodePod("p", 1, corev1.PodPending, testNode, nil, []corev1.Container{coresOnly})),
		testNode, names.Count, names.Cores)
	_, err := guard.Allocate(context.Background(), &pluginapi.ContainerAllocateRequest{DevicesIds: make([]string, 50)})
	if err == nil || !strings.Contains(err.Error(), `container "gpu" requests 50 volcano.sh/vgpu-cores but no volcano.sh/vgpu-number`) {
		t.Fatalf("Allocate: %v, want a refusal for cores without count", err)
	}
}
