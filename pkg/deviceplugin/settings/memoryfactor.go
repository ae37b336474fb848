package settings

import (
	"fmt"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/kubelet"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// SettleMemoryFactor replaces a configured GPUMemoryFactor of 0 with the smallest factor the
// kubelet can take for gpus, and checks a configured one against the same limit
// (kubelet.ChooseMemoryFactor). The error names the node and where the factor and the
// memory scaling were set.
func (c *Config) SettleMemoryFactor(gpus []nvml.GPU) error {
	factor, err := kubelet.ChooseMemoryFactor(c.Device.GPUMemoryFactor, gpus, c.MemoryUnits())
	if err != nil {
		return fmt.Errorf("node %s: gpu memory factor from %s, memory scaling %g from %s: %w", c.Node,
			c.where(memoryFactorSetting, c.Origins.MemoryFactor), c.Device.DeviceMemoryScaling,
			c.where(memoryScalingSetting, c.Origins.MemoryScaling), err)
	}
	c.Device.GPUMemoryFactor = factor
	return nil
}

// MemoryUnits is the node's rule for a GPU's vgpu-memory units at a factor (GPUMemory with
// that factor), shared by the kubelet's device list and the node annotation so that they
// always agree.
func (c Config) MemoryUnits() kubelet.MemoryUnits {
	return func(totalMiB uint64, factor int32) int32 {
		at := c
		at.Device.GPUMemoryFactor = factor
		return at.GPUMemory(totalMiB)
	}
}
