package register

import (
	"fmt"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// NodeDevices renders the GPUs as the vgpu.NodeDevicesAnnotation value.
//
// The order is the device minor number, then the NVML index, whatever
// order gpus come in: upstream schedulers take a GPU's position in the
// list as its identity, so the same GPUs must always produce the same
// string (upstream v1.12 used map order and reshuffled it on every
// refresh).
func NodeDevices(cfg settings.Config, gpus []nvml.GPU) (string, error) {
	if cfg.Device.GPUMemoryFactor < 1 {
		return "", fmt.Errorf("node %s: vGPU memory factor %d is not settled; choose it before publishing GPUs",
			cfg.Node, cfg.Device.GPUMemoryFactor)
	}
	sorted := append([]nvml.GPU(nil), gpus...)
	nvml.SortGPUs(sorted)
	devices := make([]vgpu.NodeDevice, len(sorted))
	for i, gpu := range sorted {
		devices[i] = vgpu.NodeDevice{
			UUID:    gpu.UUID,
			Count:   cfg.Device.DeviceSplitCount,
			Memory:  cfg.GPUMemory(gpu.MemoryMiB),
			Type:    vgpu.DeviceTypeForModel(gpu.Name),
			Healthy: gpu.Healthy,
			Mode:    cfg.Mode,
		}
	}
	value, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", vgpu.NodeDevicesAnnotation, err)
	}
	return value, nil
}
