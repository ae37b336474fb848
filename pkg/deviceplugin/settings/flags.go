package settings

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Names of the device plugin's vGPU flags, spelt as upstream spells them so
// that existing manifests keep working.
const (
	FlagDeviceSplitCount   = "device-split-count"
	FlagGPUMemoryFactor    = "gpu-memory-factor"
	FlagDeviceCoresScaling = "device-cores-scaling"
	FlagMIGStrategy        = "mig-strategy"
)

// Flags are the command-line flags that take part in the configuration.
// A flag counts only when it was given on the command line: its default
// never hides the device ConfigMap (upstream's flags did up to v1.11, which
// is why per-cluster settings seemed ignored there).
type Flags struct {
	DeviceSplitCount   uint
	GPUMemoryFactor    uint
	DeviceCoresScaling float64
	MIGStrategy        string

	// given reports whether a flag was set on the command line.
	given func(name string) bool
}

// AddFlags defines the flags on fs. Read the result after fs is parsed.
func AddFlags(fs *pflag.FlagSet) *Flags {
	defaults := vgpu.DefaultNvidiaConfig()
	f := &Flags{given: fs.Changed}
	fs.UintVar(&f.DeviceSplitCount, FlagDeviceSplitCount, uint(defaults.DeviceSplitCount),
		"how many vGPUs may share one GPU; when given, overrides deviceSplitCount of the device ConfigMap (a node's devicesplitcount in config.json still wins)")
	fs.UintVar(&f.GPUMemoryFactor, FlagGPUMemoryFactor, uint(defaults.GPUMemoryFactor),
		"MiB per unit of the vGPU memory resource, 0 = the smallest the kubelet can take on this node; when given, overrides gpuMemoryFactor of the device ConfigMap")
	fs.Float64Var(&f.DeviceCoresScaling, FlagDeviceCoresScaling, defaults.DeviceCoreScaling,
		"multiplies the 100 vGPU cores each GPU advertises; when given, overrides deviceCoreScaling of the device ConfigMap (a node's devicecorescaling in config.json still wins)")
	fs.StringVar(&f.MIGStrategy, FlagMIGStrategy, vgpu.MIGStrategyNone,
		"NVIDIA MIG strategy: none, single or mixed (a node's migstrategy in config.json wins)")
	return f
}

// apply writes the flags given on the command line over c, after checking
// each; the error names the flag and its value.
func (f *Flags) apply(c *Config) error {
	if f == nil || f.given == nil {
		return nil
	}
	invalid := func(name string, value any, reason string) error {
		return fmt.Errorf("flag --%s=%v: %s", name, value, reason)
	}
	if f.given(FlagDeviceSplitCount) {
		if f.DeviceSplitCount < 1 || f.DeviceSplitCount > math.MaxInt32 {
			return invalid(FlagDeviceSplitCount, f.DeviceSplitCount, fmt.Sprintf("want 1 to %d", math.MaxInt32))
		}
		c.Device.DeviceSplitCount = int32(f.DeviceSplitCount)
		c.Origins.SplitCount = FromFlag
	}
	if f.given(FlagGPUMemoryFactor) {
		if f.GPUMemoryFactor > math.MaxInt32 {
			return invalid(FlagGPUMemoryFactor, f.GPUMemoryFactor, fmt.Sprintf("want 0 (automatic) to %d", math.MaxInt32))
		}
		c.Device.GPUMemoryFactor = int32(f.GPUMemoryFactor)
		c.Origins.MemoryFactor = FromFlag
	}
	if f.given(FlagDeviceCoresScaling) {
		if !(f.DeviceCoresScaling > 0) || math.IsInf(f.DeviceCoresScaling, 1) {
			return invalid(FlagDeviceCoresScaling, f.DeviceCoresScaling, "must be a number above 0")
		}
		c.Device.DeviceCoreScaling = f.DeviceCoresScaling
		c.Origins.CoreScaling = FromFlag
	}
	if f.given(FlagMIGStrategy) {
		if err := checkMIGStrategy(f.MIGStrategy); err != nil {
			return invalid(FlagMIGStrategy, f.MIGStrategy, err.Error())
		}
		c.MIGStrategy = f.MIGStrategy
	}
	return nil
}

func checkMIGStrategy(strategy string) error {
	switch strategy {
	case vgpu.MIGStrategyNone, vgpu.MIGStrategySingle, vgpu.MIGStrategyMixed:
		return nil
	}
	return fmt.Errorf("want %s, %s or %s", vgpu.MIGStrategyNone, vgpu.MIGStrategySingle, vgpu.MIGStrategyMixed)
}
