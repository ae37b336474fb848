//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Resource names the test's device ConfigMap gives instead of the shipped ones.
const (
	sliceCount  corev1.ResourceName = "example.com/gpu-slices"
	sliceMemory corev1.ResourceName = "example.com/gpu-slice-memory"
	sliceCores  corev1.ResourceName = "example.com/gpu-slice-cores"
)

// A device ConfigMap named by the deviceshare arguments renames the vGPU resources: a pod
// asking for the new names is bound with its device assignment. The ConfigMap then turns
// malformed: a Warning Event on it says why, and the last good names stay in force.
func TestDeviceConfigMapRenamesResources(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "gpu-slices"},
		Data: map[string]string{vgpu.DeviceConfigKey: fmt.Sprintf("nvidia:\n  resourceCountName: %s\n  resourceMemoryName: %s\n  resourceCoreName: %s\n",
			sliceCount, sliceMemory, sliceCores)},
	}
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// One GPU of 8192 MiB split 4, advertised under the ConfigMap's names.
	nodeName := e.name + "-slices"
	gpu := vgpu.NodeDevice{UUID: nvml.FakeUUID(nodeName, 0), Count: 4, Memory: 8192,
		Type: "NVIDIA-NVIDIA GeForce RTX 3070 Ti", Healthy: true, Mode: vgpu.ModeHAMiCore}
	register, err := vgpu.EncodeNodeDevices([]vgpu.NodeDevice{gpu})
	if err != nil {
		t.Fatal(err)
	}
	node := kwokNode(nodeName, register, 0, 0, 0)
	node.Labels[envLabel] = e.name
	res := node.Status.Allocatable
	delete(res, vgpu.DefaultCountResource)
	delete(res, vgpu.DefaultMemoryResource)
	delete(res, vgpu.DefaultCoresResource)
	res[sliceCount], res[sliceMemory], res[sliceCores] = resource.MustParse("4"), resource.MustParse("8192"), resource.MustParse("100")
	if _, err := e.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })

	grantConfigMapRead(t, e.cs, schedulerAccount, e.ns, cm.Name)
	queue := e.queue("slices", nil)
	e.scheduler(fmt.Sprintf(`actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.KnownGeometriesCMName: gpu-slices
      deviceshare.KnownGeometriesCMNamespace: %s
  - name: predicates
  - name: proportion
  - name: nodeorder
`, e.ns))

	e.slicePod("slices-0", queue)
	e.waitBound("slices-0", 1, 60*time.Second)
	e.checkSliceAssignment(ctx, "slices-0", gpu.UUID)

	cm.Data[vgpu.DeviceConfigKey] = "nvidia:\n  resourceCountName: not a resource name\n"
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e.cs, 60*time.Second, e.ns, "involvedObject.name=gpu-slices", "a Warning Event on the malformed ConfigMap",
		func(ev corev1.Event) bool {
			return ev.Type == corev1.EventTypeWarning && ev.Reason == devicewatch.InvalidReason &&
				strings.Contains(ev.Message, "nvidia.resourceCountName")
		})
	e.slicePod("slices-1", queue)
	e.waitBound("slices-1", 1, 60*time.Second)
	e.checkSliceAssignment(ctx, "slices-1", gpu.UUID)
}

// slicePod creates a one-pod PodGroup whose pod asks for one vGPU of 1000 MiB under the
// ConfigMap's names.
func (e *schedulerEnv) slicePod(name, queue string) {
	e.t.Helper()
	e.gangWith(name, queue, "", 1, 1, "", nil, nil, func(_ int, pod *corev1.Pod) {
		pod.Name = name
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			sliceCount: resource.MustParse("1"), sliceMemory: resource.MustParse("1000"),
		}
	})
}

// checkSliceAssignment checks that the pod carries an assignment of 1000 MiB on the GPU.
func (e *schedulerEnv) checkSliceAssignment(ctx context.Context, name, uuid string) {
	e.t.Helper()
	p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	assigned, err := vgpu.DecodePodDevices(p.Annotations[vgpu.AssignedDevicesAnnotation])
	if err != nil || len(assigned) != 1 || len(assigned[0]) != 1 || assigned[0][0].UUID != uuid || assigned[0][0].UsedMemory != 1000 {
		e.t.Errorf("pod %s: assignment %q (%v), want 1000 MiB on %s", name, p.Annotations[vgpu.AssignedDevicesAnnotation], err, uuid)
	}
}
