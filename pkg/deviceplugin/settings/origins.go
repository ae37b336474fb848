package settings

import (
	"fmt"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Origin is the source that set one value of a Config.
type Origin int

const (
	// FromDeviceConfig: device-config.yaml of the device ConfigMap, or the
	// shipped default when there is none (Config.DeviceSource says which).
	FromDeviceConfig Origin = iota
	// FromFlag: a flag given on the command line.
	FromFlag
	// FromNodeConfig: the node's entry in config.json.
	FromNodeConfig
)

// Origins say where each number that sizes a kubelet device list came from.
type Origins struct {
	SplitCount, CoreScaling, MemoryFactor, MemoryScaling Origin
}

// setting names one value in each source that can set it; an empty name
// means that source cannot.
type setting struct {
	flag, nodeField, deviceField string
}

var (
	splitCountSetting    = setting{flag: FlagDeviceSplitCount, nodeField: "devicesplitcount", deviceField: "deviceSplitCount"}
	coreScalingSetting   = setting{flag: FlagDeviceCoresScaling, nodeField: "devicecorescaling", deviceField: "deviceCoreScaling"}
	memoryFactorSetting  = setting{flag: FlagGPUMemoryFactor, deviceField: "gpuMemoryFactor"}
	memoryScalingSetting = setting{nodeField: "devicememoryscaling", deviceField: "deviceMemoryScaling"}
)

// where says where a value of s that came from origin is written, as an
// operator would look for it.
func (c Config) where(s setting, origin Origin) string {
	switch origin {
	case FromFlag:
		return "flag --" + s.flag
	case FromNodeConfig:
		return fmt.Sprintf("%s of node %s in %s (ConfigMap %s)", s.nodeField, c.Node, vgpu.NodeConfigKey, vgpu.NodeConfigMapName)
	}
	if c.DeviceSource == "" {
		// The shipped default: there is no device ConfigMap to edit, so name
		// every place that can set the value.
		places := "nvidia." + s.deviceField + " in " + vgpu.DeviceConfigKey + " of the device ConfigMap " + vgpu.DeviceConfigMapName
		if s.flag != "" {
			places = "flag --" + s.flag + " or " + places
		}
		return "the shipped default (set " + places + ")"
	}
	return fmt.Sprintf("nvidia.%s in %s of %s", s.deviceField, vgpu.DeviceConfigKey, c.DeviceSource)
}
