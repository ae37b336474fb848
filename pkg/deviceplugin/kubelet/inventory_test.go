package kubelet

import (
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

func notified(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestInventoryNotifiesOnlyOnChange(t *testing.T) {
	gpus := []nvml.GPU{{UUID: uuidA, MemoryMiB: 10, Healthy: true}}
	tests := []struct {
		name       string
		change     func(v *Inventory)
		wantNotify bool
		wantGPUs   []nvml.GPU
	}{
		{"same list", func(v *Inventory) { v.Replace(gpus) }, false, gpus},
		{"GPU added", func(v *Inventory) { v.Replace(gpusWith(gpus, nvml.GPU{UUID: uuidB, Healthy: true})) },
			true, gpusWith(gpus, nvml.GPU{UUID: uuidB, Healthy: true})},
		{"GPU turns unhealthy", func(v *Inventory) { v.SetHealth(nvml.HealthEvent{UUID: uuidA, Reason: "XID 79"}) },
			true, []nvml.GPU{{UUID: uuidA, MemoryMiB: 10, Healthy: false, UnhealthyReason: "XID 79"}}},
		{"healthy report for a healthy GPU", func(v *Inventory) { v.SetHealth(nvml.HealthEvent{UUID: uuidA, Healthy: true}) },
			false, gpus},
		{"report for an unknown GPU", func(v *Inventory) { v.SetHealth(nvml.HealthEvent{UUID: uuidB, Reason: "XID 79"}) },
			false, gpus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewInventory(gpus)
			_, changed := v.snapshot()
			tt.change(v)
			if got := notified(changed); got != tt.wantNotify {
				t.Errorf("notified %v, want %v", got, tt.wantNotify)
			}
			got := v.GPUs()
			if len(got) != len(tt.wantGPUs) {
				t.Fatalf("GPUs %v, want %v", got, tt.wantGPUs)
			}
			for i := range got {
				if got[i] != tt.wantGPUs[i] {
					t.Errorf("GPU %d = %+v, want %+v", i, got[i], tt.wantGPUs[i])
				}
			}
		})
	}
}

func gpusWith(gpus []nvml.GPU, more ...nvml.GPU) []nvml.GPU {
	return append(append([]nvml.GPU(nil), gpus...), more...)
}
