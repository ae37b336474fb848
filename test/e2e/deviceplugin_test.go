//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// devicePlugin runs vgpu-device-plugin for the real kubelet's node with n fake 8 GiB GPUs
// (split 10), and waits until the kubelet advertises what it registered.
func devicePlugin(t *testing.T, cs kubernetes.Interface, n int) (gpus []string) {
	t.Helper()
	hook := t.TempDir()
	for name, content := range map[string]string{"libvgpu.so": "not a real library\n", "ld.so.preload": "/usr/local/vgpu/libvgpu.so\n"} {
		if err := os.WriteFile(filepath.Join(hook, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start(t, "vgpu-device-plugin", "--kubeconfig", kubeconfigPath(), "--node-name", realNode, "--nvml", "fake",
		"--fake-gpus", fmt.Sprintf("%dxNVIDIA GeForce RTX 3070 Ti:8192", n), "--hook-path", hook, "--metrics-address", "127.0.0.1:19394",
		"--node-config", filepath.Join(hook, "absent-config.json"))
	for i := 0; i < n; i++ {
		gpus = append(gpus, nvml.FakeUUID(realNode, i))
	}
	want := map[corev1.ResourceName]int64{vgpu.DefaultCountResource: int64(10 * n), vgpu.DefaultMemoryResource: int64(8192 * n),
		vgpu.DefaultCoresResource: int64(100 * n)}
	eventually(t, 60*time.Second, "kubelet advertises the vGPU resources", func(ctx context.Context) (bool, string, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for name, v := range want {
			q := n.Status.Allocatable[name]
			if q.Value() != v {
				return false, fmt.Sprintf("%s=%s (want %d)", name, q.String(), v), nil
			}
		}
		reg := n.Annotations[vgpu.NodeDevicesAnnotation]
		return strings.Count(reg, ":") == len(gpus) && strings.Contains(reg, gpus[len(gpus)-1]), "register=" + reg, nil
	})
	return gpus
}

// vgpuContainer asks for one vGPU with the memory and cores.
func vgpuContainer(name string, memMiB, cores int64) corev1.Container {
	return corev1.Container{Name: name, Image: tinyImage, Args: []string{"printenv"}, ImagePullPolicy: corev1.PullNever,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			vgpu.DefaultCountResource:  resource.MustParse("1"),
			vgpu.DefaultMemoryResource: *resource.NewQuantity(memMiB, resource.DecimalSI),
			vgpu.DefaultCoresResource:  *resource.NewQuantity(cores, resource.DecimalSI),
		}}}
}

// assignment is what vc-scheduler puts in the Binding for the devices.
func assignment(devices vgpu.PodDevices) map[string]string {
	enc, err := devices.Encode()
	if err != nil {
		panic(err)
	}
	now := vgpu.FormatUnixSeconds(time.Now())
	return map[string]string{
		vgpu.AssignedNodeAnnotation: realNode, vgpu.AssignedTimeAnnotation: now, vgpu.BindTimeAnnotation: now,
		vgpu.AssignedDevicesAnnotation: enc, vgpu.DevicesToAllocateAnnotation: enc, vgpu.BindPhaseAnnotation: vgpu.BindPhaseAllocating,
	}
}

// containerLog waits for the container's printenv output.
func containerLog(t *testing.T, cs kubernetes.Interface, ns, pod, container string) string {
	t.Helper()
	var out string
	eventually(t, 30*time.Second, "log of "+pod+"/"+container, func(ctx context.Context) (bool, string, error) {
		b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		out = string(b)
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Contains(out, "mount "), out, nil
	})
	return out
}

func wantLines(t *testing.T, what, log string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		found := false
		for _, got := range strings.Split(log, "\n") {
			if got == l || (strings.HasSuffix(l, "*") && strings.HasPrefix(got, strings.TrimSuffix(l, "*"))) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no line %q in\n%s", what, l, log)
		}
	}
}

// The device plugin registers with the real kubelet, and a pod carrying a scheduler
// assignment starts with HAMi-core's settings: with a non-GPU container first and two vGPU
// containers, each vGPU container gets its own GPU and limits (upstream mixes them up).
func TestDevicePluginAllocatesPerContainer(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	gpus := devicePlugin(t, cs, 2)
	ctx := context.Background()

	pod := tinyPod(ns, "two-vgpu-containers", "")
	pod.Spec.Containers = []corev1.Container{
		{Name: "plain", Image: tinyImage, ImagePullPolicy: corev1.PullNever},
		vgpuContainer("first", 1000, 20),
		vgpuContainer("second", 3000, 50),
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, cs, ns, pod.Name, realNode, assignment(vgpu.PodDevices{
		{{UUID: gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 20}},
		{{UUID: gpus[1], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 3000, UsedCores: 50}},
	}))
	got := podPhase(t, cs, ns, pod.Name, corev1.PodRunning, 90*time.Second)

	common := []string{"CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu/*", "mount /tmp/vgpu rw", "mount /tmp/vgpulock rw",
		"mount /usr/local/vgpu/libvgpu.so ro", "mount /etc/ld.so.preload ro"}
	wantLines(t, "first", containerLog(t, cs, ns, pod.Name, "first"), append(common,
		"NVIDIA_VISIBLE_DEVICES="+gpus[0], "CUDA_DEVICE_MEMORY_LIMIT_0=1000m", "CUDA_DEVICE_SM_LIMIT=20")...)
	wantLines(t, "second", containerLog(t, cs, ns, pod.Name, "second"), append(common,
		"NVIDIA_VISIBLE_DEVICES="+gpus[1], "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50")...)
	if got.Annotations[vgpu.BindPhaseAnnotation] != vgpu.BindPhaseSuccess {
		t.Errorf("bind-phase = %q, want %q", got.Annotations[vgpu.BindPhaseAnnotation], vgpu.BindPhaseSuccess)
	}
	if got.Annotations[vgpu.DevicesToAllocateAnnotation] != "" && got.Annotations[vgpu.DevicesToAllocateAnnotation] != ";" {
		t.Errorf("devices-to-allocate not consumed: %q", got.Annotations[vgpu.DevicesToAllocateAnnotation])
	}
}
