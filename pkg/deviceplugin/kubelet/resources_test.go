package kubelet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

const (
	uuidA = "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1"
	uuidB = "GPU-8f2c0a71-1b2d-4c3e-9f40-5a6b7c8d9e0f"
)

// plainUnits is upstream's rule: MiB divided by the factor, rounded down.
func plainUnits(totalMiB uint64, factor int32) int32 {
	return int32(totalMiB / uint64(factor))
}

func testResources(factor int32) Resources {
	return Resources{
		Names:        vgpu.DefaultResourceNames(),
		SplitCount:   3,
		CoreScaling:  1,
		MemoryFactor: factor,
		MemoryUnits:  plainUnits,
	}
}

// summary renders a device list as "ID=health" lines, health shortened to
// H or U, for readable diffs.
func summary(devices []*pluginapi.Device) []string {
	out := make([]string, len(devices))
	for i, d := range devices {
		out[i] = d.ID + "=" + d.Health[:1]
	}
	return out
}

func TestDevicesPerResource(t *testing.T) {
	gpus := []nvml.GPU{
		{UUID: uuidA, MemoryMiB: 5, Healthy: true},
		{UUID: uuidB, MemoryMiB: 4, Healthy: false, UnhealthyReason: "XID 79"},
	}
	tests := []struct {
		name      string
		resources Resources
		resource  int
		socket    string
		want      []string
	}{
		{
			name:      "vgpu-number: split count per GPU",
			resources: testResources(1),
			resource:  0,
			socket:    "nvidia-vgpu-number.sock",
			want:      []string{uuidA + "-0=H", uuidA + "-1=H", uuidA + "-2=H", uuidB + "-0=U", uuidB + "-1=U", uuidB + "-2=U"},
		},
		{
			name:      "vgpu-memory: MiB over the factor, rounded down",
			resources: testResources(2),
			resource:  1,
			socket:    "nvidia-vgpu-memory.sock",
			want:      []string{uuidA + "-memory-0=H", uuidA + "-memory-1=H", uuidB + "-memory-0=U", uuidB + "-memory-1=U"},
		},
		{
			name: "vgpu-cores: 100 x scaling per GPU",
			resources: func() Resources {
				r := testResources(1)
				r.CoreScaling = 0.02
				return r
			}(),
			resource: 2,
			socket:   "nvidia-vgpu-cores.sock",
			want:     []string{uuidA + "-core-0=H", uuidA + "-core-1=H", uuidB + "-core-0=U", uuidB + "-core-1=U"},
		},
		{
			name:      "vgpu-memory-percentage: 100 per GPU, whatever the scaling",
			resources: func() Resources { r := testResources(7); r.CoreScaling = 0.02; return r }(),
			resource:  3,
			socket:    "nvidia-vgpu-memory-percentage.sock",
			want: func() []string {
				var ids []string
				for _, g := range []string{uuidA + "-percent-%d=H", uuidB + "-percent-%d=U"} {
					for i := range PercentPerGPU {
						ids = append(ids, fmt.Sprintf(g, i))
					}
				}
				return ids
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.resources.list(Allocators{})[tt.resource]
			if diff := cmp.Diff(tt.want, summary(res.devices(gpus))); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
			if got := res.socketName(); got != tt.socket {
				t.Errorf("socket %q, want %q", got, tt.socket)
			}
		})
	}
}

// TestNoPercentageNameNoPercentageServer: a device ConfigMap without a memory percentage name
// turns the resource off, and no server is made for it.
func TestNoPercentageNameNoPercentageServer(t *testing.T) {
	r := testResources(1)
	if n := len(r.list(Allocators{})); n != 4 {
		t.Errorf("%d resources with a percentage name, want 4", n)
	}
	r.Names.MemoryPercentage = ""
	if n := len(r.list(Allocators{})); n != 3 {
		t.Errorf("%d resources without one, want 3", n)
	}
}

func TestCoresPerGPURoundsScaling(t *testing.T) {
	for scaling, want := range map[float64]int{1: 100, 0.29: 29, 1.1: 110, 2.5: 250} {
		if got := coresPerGPU(scaling); got != want {
			t.Errorf("coresPerGPU(%g) = %d, want %d", scaling, got, want)
		}
	}
}

func TestDeviceIDsFitKubeletLimit(t *testing.T) {
	// Kubelet refuses device IDs longer than 63 characters; the longest is
	// a memory device of a GPU with millions of units.
	res := memoryResource("", 1, plainUnits, nil)
	if id := res.deviceID(uuidA, 9_999_999); len(id) > 63 {
		t.Errorf("device ID %q is %d characters, kubelet accepts 63", id, len(id))
	}
}

func TestResourcesValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Resources)
		wantErr string
	}{
		{"valid", func(*Resources) {}, ""},
		{"split count 0", func(r *Resources) { r.SplitCount = 0 }, "split count 0"},
		{"core scaling 0", func(r *Resources) { r.CoreScaling = 0 }, "core scaling 0"},
		{"core scaling rounding to no device", func(r *Resources) { r.CoreScaling = 0.001 }, "core scaling 0.001"},
		{"memory factor unresolved", func(r *Resources) { r.MemoryFactor = 0 }, "memory factor 0"},
		{"no memory rule", func(r *Resources) { r.MemoryUnits = nil }, "no memory unit rule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testResources(1)
			tt.edit(&r)
			err := r.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("validate: %v, want %q", err, tt.wantErr)
			}
		})
	}
}
