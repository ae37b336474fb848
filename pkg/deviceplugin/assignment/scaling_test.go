package assignment

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/register"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestScaledMemoryBookingIsServed: with deviceMemoryScaling other than 1 the node publishes
// its GPUs' memory scaled, and the scheduler books a whole GPU or a percentage of that
// published memory; the plugin must serve what its own scheduler books. An H200 of 143,771
// MiB at scaling 2 and factor 1 publishes 287,542 units: a whole-GPU pod books all of them,
// a 50 % pod 143,771.
func TestScaledMemoryBookingIsServed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		scaling float64
		factor  int32
		// published is the GPU's memory in the register annotation; whole and half what the
		// scheduler books for a whole GPU and for 50 %.
		published, whole, half int32
	}{
		{name: "scaling 1", scaling: 1, factor: 1, published: 143771, whole: 143771, half: 71885},
		{name: "scaling 2", scaling: 2, factor: 1, published: 287542, whole: 287542, half: 143771},
		{name: "scaling 2, factor 5", scaling: 2, factor: 5, published: 57508, whole: 57508, half: 28754},
		{name: "scaling 1.5, factor 2", scaling: 1.5, factor: 2, published: 107828, whole: 107828, half: 53914},
		{name: "scaling 0.5", scaling: 0.5, factor: 1, published: 71885, whole: 71885, half: 35942},
	} {
		t.Run(tt.name, func(t *testing.T) {
			device := vgpu.DefaultNvidiaConfig()
			device.DeviceMemoryScaling, device.GPUMemoryFactor = tt.scaling, tt.factor
			cfg := settings.Config{Node: testNode, Device: device, Mode: vgpu.ModeHAMiCore}
			value, err := register.NodeDevices(cfg, testGPUs()[:1])
			if err != nil {
				t.Fatal(err)
			}
			published, err := vgpu.DecodeNodeDevices(value)
			if err != nil {
				t.Fatal(err)
			}
			if got := published[0].Memory; got != tt.published {
				t.Fatalf("GPU publishes %d units, want %d", got, tt.published)
			}
			for _, c := range []struct {
				container corev1.Container
				want      int32
			}{{ctr("main", 1, 0, 0), tt.whole}, {percentCtr("main", 50), tt.half}} {
				spec := corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c.container}}}
				requests, err := vgpu.PodRequests(&spec, names)
				if err != nil {
					t.Fatal(err)
				}
				// What deviceshare books on the GPU (fit.go, deriver.go): no context reserve
				// for a share of the GPU.
				booked := requests[0].BookedOn(published[0].Memory, 0)
				if booked != c.want {
					t.Fatalf("%d %%: the scheduler books %d units, want %d", requests[0].MemoryPercentage, booked, c.want)
				}
				// Served through Allocate by an allocator configured as the device plugin's
				// command configures it (cmd/vgpu-device-plugin).
				pod := assigned("p", 1, []corev1.Container{c.container}, vgpu.PodDevices{{dev(gpuA, booked, 0)}})
				env := newTestEnv(t, tt.factor, &pod, lockedNode())
				env.alloc.cfg.MemoryScaling = cfg.Device.DeviceMemoryScaling
				got, err := env.allocate(1)
				if err != nil {
					t.Errorf("%d %% booked as %d units: refused: %v", requests[0].MemoryPercentage, booked, err)
					continue
				}
				if limit, want := got.Envs["CUDA_DEVICE_MEMORY_LIMIT_0"], fmt.Sprintf("%dm", int64(booked)*int64(tt.factor)); limit != want {
					t.Errorf("%d %%: limit %s, want %s", requests[0].MemoryPercentage, limit, want)
				}
			}
		})
	}
}

// TestZeroBookingGetsThePublishedGPU: an older scheduler books 0 for a whole GPU; the
// container's limit is then the GPU as the node publishes it, its 143,771 MiB times
// deviceMemoryScaling rounded down to a MiB, as the limit of a whole GPU our scheduler books.
func TestZeroBookingGetsThePublishedGPU(t *testing.T) {
	for _, tt := range []struct {
		scaling float64
		want    string
	}{{0, "143771m"}, {1, "143771m"}, {2, "287542m"}, {1.5, "215656m"}, {0.5, "71885m"}} {
		t.Run(fmt.Sprint(tt.scaling), func(t *testing.T) {
			pod := assigned("p", 1, []corev1.Container{ctr("main", 1, 0, 0)}, vgpu.PodDevices{{dev(gpuA, 0, 0)}})
			env := newTestEnv(t, 2, &pod, lockedNode())
			env.alloc.cfg.MemoryScaling = tt.scaling
			got, err := env.allocate(1)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if limit := got.Envs["CUDA_DEVICE_MEMORY_LIMIT_0"]; limit != tt.want {
				t.Errorf("limit %s, want %s", limit, tt.want)
			}
		})
	}
}
