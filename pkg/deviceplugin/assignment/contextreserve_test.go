package assignment

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// h200Reserve is a device ConfigMap's context reserve for the test GPUs (all H200s).
var h200Reserve = vgpu.ContextReserves{{Models: []string{"H200"}, ContextReserveMiB: 518}}

// percentCtr is a container asking one vGPU of percent of its GPU's memory.
func percentCtr(name string, percent int64) corev1.Container {
	c := ctr(name, 1, 0, 0)
	c.Resources.Limits[names.MemoryPercentage] = *resource.NewQuantity(percent, resource.DecimalSI)
	return c
}

// TestMatchRequestWithContextReserve: a memory request may book up to its GPU model's
// reserve on top, in units of the factor rounded up (our scheduler books all of it, an
// upstream scheduler none); a share of the GPU books none.
func TestMatchRequestWithContextReserve(t *testing.T) {
	for _, tt := range []struct {
		name      string
		container corev1.Container
		factor    int32
		reserves  vgpu.ContextReserves
		booked    int32
		wantErr   string
	}{
		{name: "request + reserve", container: ctr("main", 1, 2000, 0), factor: 1, reserves: h200Reserve, booked: 2518},
		{name: "an upstream scheduler's booking", container: ctr("main", 1, 2000, 0), factor: 1, reserves: h200Reserve, booked: 2000},
		{name: "a smaller reserve (the scheduler read an older ConfigMap)", container: ctr("main", 1, 2000, 0), factor: 1,
			reserves: h200Reserve, booked: 2300},
		{name: "factor 5: 104 units of reserve", container: ctr("main", 1, 400, 0), factor: 5, reserves: h200Reserve, booked: 504},
		{name: "more than request + reserve", container: ctr("main", 1, 2000, 0), factor: 1, reserves: h200Reserve, booked: 2519,
			wantErr: "device 0 books 2519 memory units, the container asks 2000, and 2518 with the GPU's context reserve"},
		{name: "less than the request", container: ctr("main", 1, 2000, 0), factor: 1, reserves: h200Reserve, booked: 1999,
			wantErr: "device 0 books 1999 memory units, the container asks 2000, and 2518 with the GPU's context reserve"},
		{name: "no reserve configured", container: ctr("main", 1, 2000, 0), factor: 1, booked: 2518,
			wantErr: "device 0 books 2518 memory units, the container asks 2000"},
		{name: "another model's reserve", container: ctr("main", 1, 2000, 0), factor: 1,
			reserves: vgpu.ContextReserves{{Models: []string{"A100"}, ContextReserveMiB: 518}}, booked: 2518,
			wantErr: "device 0 books 2518 memory units, the container asks 2000"},
		{name: "a percentage books its share only", container: percentCtr("main", 50), factor: 1, reserves: h200Reserve, booked: 71885},
		{name: "a percentage with a reserve on top", container: percentCtr("main", 50), factor: 1, reserves: h200Reserve, booked: 72403,
			wantErr: "device 0 books 72403 memory units, the container asks 71885"},
		{name: "never more than the GPU has", container: ctr("main", 1, 143700, 0), factor: 1, reserves: h200Reserve, booked: 143772,
			wantErr: "device 0 books 143772 memory units, the container asks 143700, and 144218 with the GPU's context reserve"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := assigned("p", 1, []corev1.Container{tt.container}, vgpu.PodDevices{{dev(gpuA, tt.booked, 0)}})
			picked, err := pick([]corev1.Pod{pod}, 1)
			if err != nil {
				t.Fatalf("pick: %v", err)
			}
			_, err = containerFor(picked, Config{Names: names, MemoryFactor: tt.factor, ContextReserves: tt.reserves}, testGPUs())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || err.Error() != `pod ns/p container "main", entry 0 in volcano.sh/devices-to-allocate: `+tt.wantErr):
				t.Fatalf("error %v, want one ending %q", err, tt.wantErr)
			}
		})
	}
}

// TestAllocateLimitIncludesTheReserve: the container's HAMi-core limit is the memory its
// assignment books, the reserve included, so its request is what it can allocate.
func TestAllocateLimitIncludesTheReserve(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 400, 0)}, vgpu.PodDevices{{dev(gpuA, 504, 0)}})
	env := newTestEnv(t, 5, &pod, lockedNode())
	env.alloc.cfg.ContextReserves = h200Reserve
	got, err := env.allocate(1)
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	// 400 units of 5 MiB asked, 104 units of reserve: 2,520 MiB, of which 2,000 usable after
	// a 518 MiB context.
	if limit := got.Envs["CUDA_DEVICE_MEMORY_LIMIT_0"]; limit != "2520m" {
		t.Errorf("limit %s, want 2520m", limit)
	}
}

// TestCountRequiredForPercentage: the memory percentage server, like the memory and cores
// ones, refuses a container that asks a percentage without a vGPU count (nobody would give
// it a limit), and answers one with a count with an empty response.
func TestCountRequiredForPercentage(t *testing.T) {
	uncounted := percentCtr("gpu", 50)
	delete(uncounted.Resources.Limits, names.Count)
	for _, tc := range []struct {
		name      string
		container corev1.Container
		wantErr   string
	}{
		{"without a count", uncounted, `pod ns/p container "gpu" requests 50 volcano.sh/vgpu-memory-percentage but no volcano.sh/vgpu-number`},
		{"with a count", percentCtr("gpu", 50), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guard := NewCountRequired(fake.NewClientset(nodePod("p", 1, corev1.PodPending, testNode, nil, []corev1.Container{tc.container})),
				testNode, names.Count, names.MemoryPercentage)
			response, err := guard.Allocate(context.Background(), &pluginapi.ContainerAllocateRequest{DevicesIds: make([]string, 50)})
			switch {
			case tc.wantErr == "" && (err != nil || len(response.Envs) != 0):
				t.Fatalf("Allocate: %v, %v; want an empty response", response, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Allocate: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
