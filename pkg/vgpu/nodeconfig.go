package vgpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// NodeConfigFile is config.json, the data of the NodeConfigMapName ConfigMap that the device
// plugin reads: settings for individual nodes.
type NodeConfigFile struct {
	NodeConfig []NodeConfig `json:"nodeconfig"`
}

// NodeConfig overrides the device config on the node called Name. Zero values mean "not set"
// (upstream applies a number only when it is above 0 and a list only when it is not empty).
type NodeConfig struct {
	Name string `json:"name"`
	// OperatingMode is ModeHAMiCore (the default), ModeMIG or ModeMPS.
	OperatingMode       string  `json:"operatingmode,omitempty"`
	DeviceMemoryScaling float64 `json:"devicememoryscaling,omitempty"`
	DeviceCoreScaling   float64 `json:"devicecorescaling,omitempty"`
	DeviceSplitCount    int32   `json:"devicesplitcount,omitempty"`
	// MIGStrategy is NVIDIA's notion: "none", "single" or "mixed".
	MIGStrategy   string         `json:"migstrategy,omitempty"`
	FilterDevices *FilterDevices `json:"filterdevices,omitempty"`
}

// FilterDevices are GPUs the device plugin must not register on the node, by UUID or by NVML
// index.
type FilterDevices struct {
	UUID  []string `json:"uuid"`
	Index []int    `json:"index"`
}

// MIG strategies accepted in NodeConfig.MIGStrategy.
const (
	MIGStrategyNone   = "none"
	MIGStrategySingle = "single"
	MIGStrategyMixed  = "mixed"
)

// ParseNodeConfig reads config.json and validates it. Unlike device-config.yaml, unknown
// fields are an error: only the device plugin reads this file, and a misspelt field that is
// silently ignored is exactly how upstream users lost their per-node settings.
func ParseNodeConfig(data []byte) (NodeConfigFile, error) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var file NodeConfigFile
	if err := decoder.Decode(&file); err != nil {
		if errors.Is(err, io.EOF) {
			return NodeConfigFile{}, &ConfigError{File: NodeConfigKey, Reason: "empty"}
		}
		return NodeConfigFile{}, syntaxConfigError(NodeConfigKey, err)
	}
	if _, err := decoder.Token(); err != io.EOF {
		return NodeConfigFile{}, &ConfigError{File: NodeConfigKey, Reason: "unexpected data after the JSON object"}
	}
	if err := file.Validate(); err != nil {
		return NodeConfigFile{}, err
	}
	return file, nil
}

// Lookup returns the entry for the node with exactly this name.
func (f NodeConfigFile) Lookup(node string) (NodeConfig, bool) {
	for _, entry := range f.NodeConfig {
		if entry.Name == node {
			return entry, true
		}
	}
	return NodeConfig{}, false
}

// Validate reports the first field that cannot work, as a *ConfigError.
func (f NodeConfigFile) Validate() error {
	seen := make(map[string]int)
	for i, entry := range f.NodeConfig {
		invalid := func(field, value, reason string) error {
			return &ConfigError{File: NodeConfigKey, Field: fmt.Sprintf("nodeconfig[%d].%s", i, field), Value: value, Reason: reason}
		}
		if entry.Name == "" {
			return invalid("name", "", "empty")
		}
		if first, dup := seen[entry.Name]; dup {
			return invalid("name", entry.Name, fmt.Sprintf("same node as nodeconfig[%d]", first))
		}
		seen[entry.Name] = i
		if entry.OperatingMode != "" && checkMode(entry.OperatingMode) != nil {
			return invalid("operatingmode", entry.OperatingMode, fmt.Sprintf("want %s, %s or %s", ModeHAMiCore, ModeMIG, ModeMPS))
		}
		switch {
		case !nonNegativeFinite(entry.DeviceMemoryScaling):
			return invalid("devicememoryscaling", ftoa(entry.DeviceMemoryScaling), "must not be negative")
		case !nonNegativeFinite(entry.DeviceCoreScaling):
			return invalid("devicecorescaling", ftoa(entry.DeviceCoreScaling), "must not be negative")
		case entry.DeviceSplitCount < 0:
			return invalid("devicesplitcount", itoa(entry.DeviceSplitCount), "must not be negative")
		}
		switch entry.MIGStrategy {
		case "", MIGStrategyNone, MIGStrategySingle, MIGStrategyMixed:
		default:
			return invalid("migstrategy", entry.MIGStrategy,
				fmt.Sprintf("want %s, %s or %s", MIGStrategyNone, MIGStrategySingle, MIGStrategyMixed))
		}
		if entry.FilterDevices == nil {
			continue
		}
		for j, uuid := range entry.FilterDevices.UUID {
			if checkUUID("uuid", uuid) != nil {
				return invalid(fmt.Sprintf("filterdevices.uuid[%d]", j), uuid, "not a GPU UUID")
			}
		}
		for j, index := range entry.FilterDevices.Index {
			if index < 0 {
				return invalid(fmt.Sprintf("filterdevices.index[%d]", j), fmt.Sprint(index), "must not be negative")
			}
		}
	}
	return nil
}

func nonNegativeFinite(f float64) bool {
	return f >= 0 && !math.IsInf(f, 1)
}
