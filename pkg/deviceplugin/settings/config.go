// Package settings works out the device plugin's configuration for one node
// from its four sources, highest precedence first:
//
//  1. the node's entry in config.json (the volcano-vgpu-node-config
//     ConfigMap), numbers applied when above 0, lists when not empty,
//     strings when not empty;
//  2. flags given on the command line (never their defaults);
//  3. device-config.yaml (the volcano-vgpu-device-config ConfigMap, which
//     the scheduler reads too);
//  4. the values of the upstream shipped device ConfigMap.
//
// Upstream v1.12 and later use the same order; releases up to v1.11 let
// flag defaults win over config.json, the most reported configuration
// problem. Unlike upstream, every field of config.json
// takes effect here, devicememoryscaling and migstrategy included.
package settings

import (
	"fmt"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Config is the configuration in force on one node.
type Config struct {
	// Node is the node it applies to.
	Node string
	// Device is the device ConfigMap's nvidia section with the flags and
	// the node's entry applied: DeviceSplitCount, DeviceMemoryScaling,
	// DeviceCoreScaling and GPUMemoryFactor hold the values in force.
	// Resource names and MIG geometries only ever come from the ConfigMap,
	// because the scheduler reads them there and both must agree.
	Device vgpu.NvidiaConfig
	// Mode is how the node's GPUs are shared: vgpu.ModeHAMiCore unless the
	// node's entry says otherwise.
	Mode string
	// MIGStrategy is NVIDIA's MIG strategy (vgpu.MIGStrategyNone by default).
	MIGStrategy string
	// Filter lists the GPUs the node must not register.
	Filter vgpu.FilterDevices
	// Origins say which source set the numbers in force, so that an error
	// can say where to change one.
	Origins Origins
	// DeviceSource names the device ConfigMap the Device values came from,
	// e.g. "ConfigMap kube-system/volcano-vgpu-device-config"; empty when
	// they are the shipped defaults.
	DeviceSource string
}

// Resolve applies flags and the node's entry in nodeConfig over device (a
// parsed device-config.yaml, or vgpu.DefaultNvidiaConfig when there is
// none). flags may be nil. The error names the flag that is wrong; the two
// files were validated when they were parsed.
func Resolve(node string, device vgpu.NvidiaConfig, flags *Flags, nodeConfig vgpu.NodeConfigFile) (Config, error) {
	c := Config{Node: node, Device: device, Mode: vgpu.ModeHAMiCore, MIGStrategy: vgpu.MIGStrategyNone}
	if err := flags.apply(&c); err != nil {
		return Config{}, err
	}
	if entry, ok := nodeConfig.Lookup(node); ok {
		c.applyNodeEntry(entry)
	} else {
		klog.V(2).InfoS("No entry for this node in the node config; using device config and flags", "node", node, "file", vgpu.NodeConfigKey)
	}
	return c, nil
}

// applyNodeEntry writes the fields the entry sets over c. Zero means "not
// set", as upstream reads the file.
func (c *Config) applyNodeEntry(entry vgpu.NodeConfig) {
	if entry.OperatingMode != "" {
		c.Mode = entry.OperatingMode
	}
	if entry.DeviceSplitCount > 0 {
		c.Device.DeviceSplitCount = entry.DeviceSplitCount
		c.Origins.SplitCount = FromNodeConfig
	}
	if entry.DeviceMemoryScaling > 0 {
		c.Device.DeviceMemoryScaling = entry.DeviceMemoryScaling
		c.Origins.MemoryScaling = FromNodeConfig
	}
	if entry.DeviceCoreScaling > 0 {
		c.Device.DeviceCoreScaling = entry.DeviceCoreScaling
		c.Origins.CoreScaling = FromNodeConfig
	}
	if entry.MIGStrategy != "" {
		c.MIGStrategy = entry.MIGStrategy
	}
	if f := entry.FilterDevices; f != nil {
		if len(f.UUID) > 0 {
			c.Filter.UUID = f.UUID
		}
		if len(f.Index) > 0 {
			c.Filter.Index = f.Index
		}
	}
}

// GPUMemory is the memory a GPU with totalMiB MiB registers, in units of
// the vGPU memory resource: vgpu.GPUMemory at the DeviceMemoryScaling and
// GPUMemoryFactor in force. With the default scaling of 1 this is exactly
// upstream's figure; a scaling above 1 oversubscribes memory, which
// HAMi-core can only back when the container is allowed to spill to host
// memory. The allocator checks assignments against the same figure
// (assignment.Config.MemoryScaling).
func (c Config) GPUMemory(totalMiB uint64) int32 {
	return vgpu.GPUMemory(totalMiB, c.Device.DeviceMemoryScaling, c.Device.GPUMemoryFactor)
}

// RegisteredGPUs returns the GPUs of gpus that the node's filter does not
// exclude (by UUID or by NVML index), in the order given.
func (c Config) RegisteredGPUs(gpus []nvml.GPU) []nvml.GPU {
	if len(c.Filter.UUID) == 0 && len(c.Filter.Index) == 0 {
		return gpus
	}
	kept := make([]nvml.GPU, 0, len(gpus))
	for _, gpu := range gpus {
		if c.excludes(gpu) {
			continue
		}
		kept = append(kept, gpu)
	}
	return kept
}

func (c Config) excludes(gpu nvml.GPU) bool {
	for _, uuid := range c.Filter.UUID {
		if uuid == gpu.UUID {
			return true
		}
	}
	for _, index := range c.Filter.Index {
		if index == gpu.Index {
			return true
		}
	}
	return false
}

// String summarises the values in force for a log line.
func (c Config) String() string {
	return fmt.Sprintf("node %s: mode %s, split %d, memory factor %d MiB, memory scaling %g, core scaling %g, MIG strategy %s, "+
		"resources %s/%s/%s, filtered uuids %v, filtered indexes %v",
		c.Node, c.Mode, c.Device.DeviceSplitCount, c.Device.GPUMemoryFactor, c.Device.DeviceMemoryScaling,
		c.Device.DeviceCoreScaling, c.MIGStrategy, c.Device.ResourceCountName, c.Device.ResourceMemoryName,
		c.Device.ResourceCoreName, c.Filter.UUID, c.Filter.Index)
}
