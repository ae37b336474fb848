//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// A plain pod asking volcano.sh/vgpu-memory-percentage 50 and no vgpu-memory, on the real
// kubelet node with vgpu-device-plugin (one fake 80 GiB GPU, memory factor 2 MiB) and
// vc-scheduler with lab 8's scheduler.conf: the kubelet advertises 100 of the percentage
// resource, the stand-in's PodGroup (whose minResources holds the percentage) is enqueued,
// the pod is bound with 40,960 MiB of the GPU booked (20,480 units) and runs with that limit.
// Before the device plugin advertised the resource the pod stayed Pending: "pod group is not
// ready ... 1 Unschedulable", Insufficient volcano.sh/vgpu-memory-percentage.
func TestMemoryPercentageEndToEnd(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	hook := hookDir(t)
	gpu := nvml.FakeUUID(realNode, 0)
	plugin := start(t, "vgpu-device-plugin", "--kubeconfig", kubeconfigPath(), "--node-name", realNode, "--nvml", "fake",
		"--fake-gpus", "1xNVIDIA A100-SXM4-80GB:81920", "--gpu-memory-factor", "2", "--hook-path", hook,
		"--metrics-address", pluginMetrics, "--node-config", filepath.Join(hook, "absent-config.json"),
		"--scheduler-name", e.name, "-v", "2")
	want := map[corev1.ResourceName]int64{vgpu.DefaultCountResource: 10, vgpu.DefaultMemoryResource: 40960,
		vgpu.DefaultCoresResource: 100, vgpu.DefaultMemoryPercentageResource: 100}
	eventually(t, 90*time.Second, "kubelet advertises the 80 GiB GPU and 100 of the percentage", func(ctx context.Context) (bool, string, error) {
		node, err := e.cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for name, v := range want {
			if q := node.Status.Allocatable[name]; q.Value() != v {
				return false, fmt.Sprintf("%s=%s (want %d); plugin log: %s", name, q.String(), v, tail(plugin.log.String(), 3)), nil
			}
		}
		return node.Annotations[vgpu.NodeMemoryFactorAnnotation] == "2", "memory factor " + node.Annotations[vgpu.NodeMemoryFactorAnnotation], nil
	})
	e.claimRealNode()
	e.scheduler(seedConf(t))

	pod := tinyPod(e.ns, "half", "")
	pod.Spec.SchedulerName = e.name
	pod.Spec.Containers = []corev1.Container{{Name: "main", Image: tinyImage, Args: []string{"printenv"}, ImagePullPolicy: corev1.PullNever,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			vgpu.DefaultCountResource:            resource.MustParse("1"),
			vgpu.DefaultMemoryPercentageResource: resource.MustParse("50"),
		}}}}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := podPhase(t, e.cs, e.ns, "half", corev1.PodRunning, 90*time.Second)
	assigned, err := vgpu.DecodePodDevices(running.Annotations[vgpu.AssignedDevicesAnnotation])
	if err != nil || len(assigned) != 1 || len(assigned[0]) != 1 || assigned[0][0].UUID != gpu || assigned[0][0].UsedMemory != 20480 {
		t.Errorf("assignment %q (%v), want 20480 units of 2 MiB (40,960 MiB) on %s",
			running.Annotations[vgpu.AssignedDevicesAnnotation], err, gpu)
	}
	wantLines(t, "half", containerLog(t, e.cs, e.ns, "half", "main"), "NVIDIA_VISIBLE_DEVICES="+gpu,
		"CUDA_DEVICE_MEMORY_LIMIT_0=40960m", "CUDA_DEVICE_SM_LIMIT=0")
}
