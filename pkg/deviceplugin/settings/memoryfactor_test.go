package settings

import (
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

func TestMemoryUnits(t *testing.T) {
	c := Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig()}
	c.Device.DeviceMemoryScaling = 1.5
	c.Device.GPUMemoryFactor = 1
	units := c.MemoryUnits()
	if got := units(80000, 1); got != 120000 {
		t.Errorf("units(80000 MiB, factor 1) = %d, want 120000 (scaled 1.5)", got)
	}
	if got := units(80000, 1000); got != 120 {
		t.Errorf("units(80000 MiB, factor 1000) = %d, want 120", got)
	}
	if c.Device.GPUMemoryFactor != 1 {
		t.Errorf("MemoryUnits changed the configuration's factor to %d", c.Device.GPUMemoryFactor)
	}
}

func TestSettleMemoryFactor(t *testing.T) {
	h200 := []nvml.GPU{{UUID: "GPU-a", MemoryMiB: 143771, Healthy: true}, {UUID: "GPU-b", MemoryMiB: 143771, Healthy: true}}
	auto := Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig()}
	auto.Device.GPUMemoryFactor = 0
	if err := auto.SettleMemoryFactor(h200); err != nil {
		t.Fatal(err)
	}
	if auto.Device.GPUMemoryFactor < 1 {
		t.Errorf("automatic factor %d, want one of at least 1", auto.Device.GPUMemoryFactor)
	}
	small := Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig()}
	small.Device.GPUMemoryFactor = 1
	err := small.SettleMemoryFactor(h200)
	if err == nil || !strings.Contains(err.Error(), "node "+testNode) {
		t.Errorf("factor 1 for two H200s: error %v, want a refusal naming the node", err)
	}
	explicit := Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig()}
	explicit.Device.GPUMemoryFactor = 1024
	if err := explicit.SettleMemoryFactor(h200); err != nil || explicit.Device.GPUMemoryFactor != 1024 {
		t.Errorf("factor 1024: %v, factor now %d; want it kept", err, explicit.Device.GPUMemoryFactor)
	}
}
