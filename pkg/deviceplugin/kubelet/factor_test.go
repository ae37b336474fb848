package kubelet

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// h200MiB is an H200's NVML v1 total, floored to MiB.
const h200MiB = 143771

func gpusOf(mib ...uint64) []nvml.GPU {
	uuids := []string{
		"GPU-00000000-0000-0000-0000-000000000000", "GPU-11111111-1111-1111-1111-111111111111",
		"GPU-22222222-2222-2222-2222-222222222222", "GPU-33333333-3333-3333-3333-333333333333",
		"GPU-44444444-4444-4444-4444-444444444444", "GPU-55555555-5555-5555-5555-555555555555",
		"GPU-66666666-6666-6666-6666-666666666666", "GPU-77777777-7777-7777-7777-777777777777",
	}
	gpus := make([]nvml.GPU, len(mib))
	for i, m := range mib {
		gpus[i] = nvml.GPU{UUID: uuids[i], MemoryMiB: m, Healthy: true}
	}
	return gpus
}

// measuredSize builds the real memory list, every device unhealthy, and
// returns its protobuf size: what kubelet would receive at worst.
func measuredSize(gpus []nvml.GPU, factor int32) int {
	sick := make([]nvml.GPU, len(gpus))
	for i, g := range gpus {
		g.Healthy = false
		sick[i] = g
	}
	devices := memoryResource("", factor, plainUnits, nil).devices(sick)
	return proto.Size(&pluginapi.ListAndWatchResponse{Devices: devices})
}

func TestMemoryListSizeMatchesTheRealList(t *testing.T) {
	for _, gpus := range [][]nvml.GPU{gpusOf(), gpusOf(1), gpusOf(9, 10, 11), gpusOf(31004), gpusOf(h200MiB, 80000)} {
		for _, factor := range []int32{1, 3, 7} {
			if got, want := memoryListSize(gpus, factor, plainUnits), measuredSize(gpus, factor); got != want {
				t.Errorf("%d GPUs at factor %d: computed %d bytes, the real list has %d", len(gpus), factor, got, want)
			}
		}
	}
}

func TestChooseMemoryFactorAutomatic(t *testing.T) {
	eightH200 := gpusOf(h200MiB, h200MiB, h200MiB, h200MiB, h200MiB, h200MiB, h200MiB, h200MiB)
	tests := []struct {
		name string
		gpus []nvml.GPU
		want int32
	}{
		{"no GPUs", nil, 1},
		{"one 16 GiB GPU", gpusOf(16384), 1},
		// 31003 devices take 2,097,094 bytes, just within the budget of
		// 2,097,152; one more device (70 bytes with its 5-digit number)
		// is over it.
		{"largest list that fits at factor 1", gpusOf(31003), 1},
		{"one device more needs factor 2", gpusOf(31004), 2},
		{"one H200", gpusOf(h200MiB), 5},
		{"eight H200", eightH200, 37},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseMemoryFactor(0, tt.gpus, plainUnits)
			if err != nil {
				t.Fatalf("ChooseMemoryFactor: %v", err)
			}
			if got != tt.want {
				t.Errorf("factor %d, want %d", got, tt.want)
			}
			if size := measuredSize(tt.gpus, got); size > memoryListBudget {
				t.Errorf("at factor %d the list takes %d bytes, over the budget of %d", got, size, memoryListBudget)
			}
			if got > 1 {
				if size := measuredSize(tt.gpus, got-1); size <= memoryListBudget {
					t.Errorf("factor %d would do (%d bytes): %d is not the smallest", got-1, size, got)
				}
			}
		})
	}
}

func TestChooseMemoryFactorConfigured(t *testing.T) {
	tests := []struct {
		name    string
		factor  int32
		gpus    []nvml.GPU
		want    int32
		wantErr []string
	}{
		{name: "fits easily", factor: 1024, gpus: gpusOf(h200MiB), want: 1024},
		{name: "over the budget but within kubelet's limit is kept", factor: 3, gpus: gpusOf(h200MiB), want: 3},
		{
			name: "over kubelet's limit is refused with the factor that fits", factor: 2, gpus: gpusOf(h200MiB),
			wantErr: []string{"memory factor 2 MiB", "1 GPUs would take 4877070 bytes", "more than the 4194304 bytes kubelet accepts",
				"use a factor of at least 3, or 0 to choose one automatically"},
		},
		{name: "negative", factor: -1, gpus: gpusOf(1), wantErr: []string{"memory factor -1: want 0 (automatic) or a number of MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseMemoryFactor(tt.factor, tt.gpus, plainUnits)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("factor %d accepted, want an error", got)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ChooseMemoryFactor: %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if size := measuredSize(gpusOf(h200MiB), 2); size <= kubeletMessageLimit {
		t.Errorf("test premise: factor 2 on an H200 takes %d bytes, not over kubelet's limit", size)
	}
	if size := measuredSize(gpusOf(h200MiB), 3); size <= memoryListBudget || size > kubeletMessageLimit {
		t.Errorf("test premise: factor 3 on an H200 takes %d bytes, not between the budget and the limit", size)
	}
}
