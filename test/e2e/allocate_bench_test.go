//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/apiclient"
	assign "github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/assignment"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/kubelet"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// podsOnNode is the condition of the Allocate latency target (p99 <= 20 ms with 100 pods on
// the node; the README's in-process benchmark table).
const podsOnNode = 100

// BenchmarkAllocate measures the device plugin's Allocate, the wait it adds to every vGPU
// container's start, against the local cluster's API server with podsOnNode pods on the
// node: each call lists the node's pods, picks the one being admitted and patches it. The
// node is an API object only (no kubelet), so the pods stay Pending as they are while a real
// kubelet admits them. Run with -benchtime=Nx; it reports p50 and p99 in milliseconds.
func BenchmarkAllocate(b *testing.B) {
	// Allocate logs each container it serves; on the benchmark's output those lines would
	// split the result line that make bench parses.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	b.Cleanup(func() { klog.LogToStderr(true) })
	cs := client(b)
	ns := namespace(b, cs)
	// The plugin's own client, as cmd/vgpu-device-plugin builds it.
	pluginClient, err := apiclient.New(kubeconfigPath())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	node := "bench-allocate-" + ns
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}) })

	hook := b.TempDir()
	for _, name := range []string{"libvgpu.so", "ld.so.preload"} {
		if err := os.WriteFile(filepath.Join(hook, name), []byte("stand-in\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gpus := []nvml.GPU{{UUID: nvml.FakeUUID(node, 0), Name: "NVIDIA H200", MemoryMiB: 143771, Healthy: true}}
	allocator, err := assign.NewVGPU(pluginClient, assign.Config{NodeName: node, Names: vgpu.DefaultResourceNames(), MemoryFactor: 1,
		HookPath: hook, LockDir: b.TempDir(), GPUs: kubelet.NewInventory(gpus)})
	if err != nil {
		b.Fatal(err)
	}
	device := vgpu.ContainerDevice{UUID: gpus[0].UUID, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 10}
	create := func(name string, phase string) *corev1.Pod {
		pod := tinyPod(ns, name, "")
		pod.Spec.NodeName = node
		pod.Spec.Containers = []corev1.Container{vgpuContainer("main", int64(device.UsedMemory), int64(device.UsedCores))}
		pod.Annotations = assignment(vgpu.PodDevices{{device}})
		pod.Annotations[vgpu.AssignedNodeAnnotation] = node
		pod.Annotations[vgpu.BindPhaseAnnotation] = phase
		created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return created
	}
	// The pods already served: Allocate reads them on every call and must pass them by.
	for i := 0; i < podsOnNode-1; i++ {
		create(fmt.Sprintf("served-%03d", i), vgpu.BindPhaseSuccess)
	}

	zero := int64(0)
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pod := create(fmt.Sprintf("admitted-%05d", i), vgpu.BindPhaseAllocating)
		b.StartTimer()
		start := time.Now()
		resp, err := allocator.Allocate(ctx, &pluginapi.ContainerAllocateRequest{DevicesIds: []string{"any"}})
		latencies = append(latencies, time.Since(start))
		b.StopTimer()
		if err != nil {
			b.Fatalf("Allocate for %s: %v", pod.Name, err)
		}
		if got := resp.Envs["NVIDIA_VISIBLE_DEVICES"]; got != device.UUID {
			b.Fatalf("Allocate for %s: NVIDIA_VISIBLE_DEVICES=%q, want %q", pod.Name, got, device.UUID)
		}
		// Keep the node at podsOnNode pods; with no kubelet only a forced delete removes one.
		if err := cs.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	ms := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
