package vgpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// NvidiaConfig is the "nvidia:" section of device-config.yaml, the data of the
// DeviceConfigMapName ConfigMap that scheduler and device plugin both read.
type NvidiaConfig struct {
	ResourceCountName            corev1.ResourceName `json:"resourceCountName"`
	ResourceMemoryName           corev1.ResourceName `json:"resourceMemoryName"`
	ResourceCoreName             corev1.ResourceName `json:"resourceCoreName"`
	ResourceMemoryPercentageName corev1.ResourceName `json:"resourceMemoryPercentageName"`
	// ResourcePriorityName is parsed for compatibility; upstream does not act on it.
	ResourcePriorityName corev1.ResourceName `json:"resourcePriorityName,omitempty"`
	OverwriteEnv         bool                `json:"overwriteEnv"`
	// DefaultMemory, DefaultCores and DefaultGPUNum are kept from upstream's format; the
	// scheduler does not apply them to requests.
	DefaultMemory int32 `json:"defaultMemory"`
	DefaultCores  int32 `json:"defaultCores"`
	DefaultGPUNum int32 `json:"defaultGPUNum"`
	// DeviceSplitCount is how many vGPUs may share one GPU.
	DeviceSplitCount int32 `json:"deviceSplitCount"`
	// DeviceMemoryScaling would oversubscribe memory; upstream parses it and never uses it.
	DeviceMemoryScaling float64 `json:"deviceMemoryScaling"`
	// DeviceCoreScaling multiplies the vgpu-cores each GPU advertises (100 x scaling).
	DeviceCoreScaling float64 `json:"deviceCoreScaling"`
	// DisableCoreLimit asks for vgpu-cores not to be enforced; upstream never acts on it.
	DisableCoreLimit bool `json:"disableCoreLimit"`
	// GPUMemoryFactor is how many MiB one unit of vgpu-memory is; 0 lets each device plugin
	// choose the smallest factor its kubelet can take (upstream has no such value and
	// defaults to 1, which advertises no memory at all on large GPUs).
	GPUMemoryFactor    int32           `json:"gpuMemoryFactor"`
	KnownMIGGeometries []MIGGeometries `json:"knownMigGeometries"`
	PassDeviceSpecs    bool            `json:"passDeviceSpecs,omitempty"`
	// ContextReserves are the MiB each GPU model's CUDA context takes out of a HAMi-core
	// memory limit (contextreserve.go); none by default, which is upstream's behaviour.
	// Upstream components ignore the key.
	ContextReserves ContextReserves `json:"contextReserves,omitempty"`
}

// MIGGeometries are the ways GPUs of the listed models may be partitioned.
type MIGGeometries struct {
	// Models are matched as substrings of a GPU's type, e.g. "A100-SXM4-80GB".
	Models []string `json:"models"`
	// AllowedGeometries are alternatives: a GPU uses one group at a time.
	AllowedGeometries []MIGGeometryGroup `json:"allowedGeometries"`
}

// MIGGeometryGroup is one way to partition a GPU; MIGSlot positions count its instances in
// the order listed.
type MIGGeometryGroup struct {
	Group      string        `json:"group"`
	Geometries []MIGGeometry `json:"geometries"`
}

// MIGGeometry is Count instances of one MIG profile.
type MIGGeometry struct {
	// Name is the MIG profile, e.g. "1g.10gb".
	Name string `json:"name"`
	// Memory of one instance in MiB (not in gpuMemoryFactor units).
	Memory int32 `json:"memory"`
	Count  int32 `json:"count"`
}

// deviceConfigFile is the YAML document; other top-level sections (other vendors, in newer
// Volcano) are ignored.
type deviceConfigFile struct {
	Nvidia *NvidiaConfig `json:"nvidia"`
}

// DefaultNvidiaConfig returns the values of the upstream shipped ConfigMap, MIG geometries
// included; it is what runs when no ConfigMap exists.
func DefaultNvidiaConfig() NvidiaConfig {
	c := NvidiaConfig{KnownMIGGeometries: defaultMIGGeometries()}
	c.applyDefaults()
	return c
}

// applyDefaults fills the fields that upstream leaves at zero when the ConfigMap omits them,
// where zero would mean a broken setup (no resource names, no vGPUs, a division by zero).
// The MIG geometries are left as written: an omitted list means no MIG.
func (c *NvidiaConfig) applyDefaults() {
	names := DefaultResourceNames()
	fill := func(field *corev1.ResourceName, value corev1.ResourceName) {
		if *field == "" {
			*field = value
		}
	}
	fill(&c.ResourceCountName, names.Count)
	fill(&c.ResourceMemoryName, names.Memory)
	fill(&c.ResourceCoreName, names.Cores)
	fill(&c.ResourceMemoryPercentageName, names.MemoryPercentage)
	if c.DefaultGPUNum == 0 {
		c.DefaultGPUNum = 1
	}
	if c.DeviceSplitCount == 0 {
		c.DeviceSplitCount = 10
	}
	if c.DeviceMemoryScaling == 0 {
		c.DeviceMemoryScaling = 1
	}
	if c.DeviceCoreScaling == 0 {
		c.DeviceCoreScaling = 1
	}
	// "contextReserves: []" means none, as leaving the key out does.
	if len(c.ContextReserves) == 0 {
		c.ContextReserves = nil
	}
}

// ParseDeviceConfig reads device-config.yaml: it decodes the "nvidia:" section, fills the
// defaults for fields left out, and validates the result. Unknown keys are ignored, as
// upstream does, so that a ConfigMap written for the upstream components keeps working here.
func ParseDeviceConfig(data []byte) (NvidiaConfig, error) {
	var file deviceConfigFile
	if err := yaml.Unmarshal(data, &file); err != nil {
		return NvidiaConfig{}, syntaxConfigError(DeviceConfigKey, err)
	}
	if file.Nvidia == nil {
		return NvidiaConfig{}, &ConfigError{File: DeviceConfigKey, Field: "nvidia", Reason: "section missing"}
	}
	c := *file.Nvidia
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return NvidiaConfig{}, err
	}
	return c, nil
}

// ResourceNames returns the configured resource names.
func (c NvidiaConfig) ResourceNames() ResourceNames {
	return ResourceNames{
		Count:            c.ResourceCountName,
		Memory:           c.ResourceMemoryName,
		Cores:            c.ResourceCoreName,
		MemoryPercentage: c.ResourceMemoryPercentageName,
	}
}

// MIGGeometriesFor returns the partitions allowed for a GPU of the given type (a NodeDevice
// Type): those of the first entry one of whose models is a substring of the type (case
// matters, as upstream).
func (c NvidiaConfig) MIGGeometriesFor(deviceType string) ([]MIGGeometryGroup, bool) {
	for _, entry := range c.KnownMIGGeometries {
		for _, model := range entry.Models {
			if model != "" && strings.Contains(deviceType, model) {
				return entry.AllowedGeometries, true
			}
		}
	}
	return nil, false
}

// Validate reports the first field that cannot work, as a *ConfigError.
func (c NvidiaConfig) Validate() error {
	invalid := func(field, value, reason string) error {
		return &ConfigError{File: DeviceConfigKey, Field: "nvidia." + field, Value: value, Reason: reason}
	}
	seen := make(map[corev1.ResourceName]string)
	for _, r := range []struct {
		field    string
		name     corev1.ResourceName
		optional bool
	}{
		{"resourceCountName", c.ResourceCountName, false},
		{"resourceMemoryName", c.ResourceMemoryName, false},
		{"resourceCoreName", c.ResourceCoreName, false},
		{"resourceMemoryPercentageName", c.ResourceMemoryPercentageName, true},
		{"resourcePriorityName", c.ResourcePriorityName, true},
	} {
		if r.name == "" {
			if r.optional {
				continue
			}
			return invalid(r.field, "", "empty")
		}
		if errs := validation.IsDomainPrefixedKey(nil, string(r.name)); len(errs) > 0 {
			return invalid(r.field, string(r.name), "not an extended resource name: "+errs[0].Detail)
		}
		if other, dup := seen[r.name]; dup {
			return invalid(r.field, string(r.name), "same as "+other)
		}
		seen[r.name] = r.field
	}
	switch {
	case c.DefaultMemory < 0:
		return invalid("defaultMemory", itoa(c.DefaultMemory), "must not be negative")
	case c.DefaultCores < 0 || c.DefaultCores > wholeGPU:
		return invalid("defaultCores", itoa(c.DefaultCores), "want 0 to 100")
	case c.DefaultGPUNum < 1:
		return invalid("defaultGPUNum", itoa(c.DefaultGPUNum), "must be at least 1")
	case c.DeviceSplitCount < 1:
		return invalid("deviceSplitCount", itoa(c.DeviceSplitCount), "must be at least 1")
	case !positiveFinite(c.DeviceMemoryScaling):
		return invalid("deviceMemoryScaling", ftoa(c.DeviceMemoryScaling), "must be a number above 0")
	case !positiveFinite(c.DeviceCoreScaling):
		return invalid("deviceCoreScaling", ftoa(c.DeviceCoreScaling), "must be a number above 0")
	case c.GPUMemoryFactor < 0:
		return invalid("gpuMemoryFactor", itoa(c.GPUMemoryFactor), "want 0 (automatic) or a number of MiB")
	}
	for i, entry := range c.KnownMIGGeometries {
		if err := entry.validate(); err != nil {
			err.File = DeviceConfigKey
			err.Field = fmt.Sprintf("nvidia.knownMigGeometries[%d].%s", i, err.Field)
			return err
		}
	}
	for i, entry := range c.ContextReserves {
		if err := entry.validate(); err != nil {
			err.File = DeviceConfigKey
			err.Field = fmt.Sprintf("nvidia.contextReserves[%d].%s", i, err.Field)
			return err
		}
	}
	return nil
}

// validate returns the first problem with a Field relative to the entry.
func (g MIGGeometries) validate() *ConfigError {
	if len(g.Models) == 0 {
		return &ConfigError{Field: "models", Reason: "empty"}
	}
	for i, model := range g.Models {
		if model == "" {
			return &ConfigError{Field: fmt.Sprintf("models[%d]", i), Reason: "empty"}
		}
	}
	if len(g.AllowedGeometries) == 0 {
		return &ConfigError{Field: "allowedGeometries", Reason: "empty"}
	}
	groups := make(map[string]bool)
	for i, group := range g.AllowedGeometries {
		at := fmt.Sprintf("allowedGeometries[%d]", i)
		if checkMIGGroup(group.Group) != nil {
			return &ConfigError{Field: at + ".group", Value: group.Group,
				Reason: "must be non-empty and hold none of - [ ] , : ; or white space (it becomes part of MIG ids)"}
		}
		if groups[group.Group] {
			return &ConfigError{Field: at + ".group", Value: group.Group, Reason: "listed twice"}
		}
		groups[group.Group] = true
		if len(group.Geometries) == 0 {
			return &ConfigError{Field: at + ".geometries", Reason: "empty"}
		}
		for j, geometry := range group.Geometries {
			field := fmt.Sprintf("%s.geometries[%d]", at, j)
			switch {
			case geometry.Name == "":
				return &ConfigError{Field: field + ".name", Reason: "empty"}
			case geometry.Memory < 1:
				return &ConfigError{Field: field + ".memory", Value: itoa(geometry.Memory), Reason: "must be at least 1 MiB"}
			case geometry.Count < 1:
				return &ConfigError{Field: field + ".count", Value: itoa(geometry.Count), Reason: "must be at least 1"}
			}
		}
	}
	return nil
}

func positiveFinite(f float64) bool {
	return f > 0 && !math.IsInf(f, 1)
}

func itoa(n int32) string {
	return strconv.FormatInt(int64(n), 10)
}

func ftoa(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
