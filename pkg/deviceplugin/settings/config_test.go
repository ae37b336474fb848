package settings

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

const testNode = "gpu-node-1"

// parseFlags parses args as the device plugin's command line would.
func parseFlags(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := pflag.NewFlagSet("vgpu-device-plugin", pflag.ContinueOnError)
	flags := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return flags
}

// clusterConfig is a device ConfigMap whose every number differs from the
// defaults and from the flags and node entries used below.
func clusterConfig(t *testing.T) vgpu.NvidiaConfig {
	t.Helper()
	c, err := vgpu.ParseDeviceConfig([]byte(`
nvidia:
  resourceCountName: example.com/gpu-slices
  resourceMemoryName: example.com/gpu-mem
  resourceCoreName: example.com/gpu-cores
  deviceSplitCount: 5
  deviceMemoryScaling: 1.5
  deviceCoreScaling: 2
  gpuMemoryFactor: 4
  disableCoreLimit: true
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestResolvePrecedence(t *testing.T) {
	cluster := clusterConfig(t)
	// want builds the expected Config from the cluster one.
	want := func(edit func(c *Config)) Config {
		c := Config{Node: testNode, Device: cluster, Mode: vgpu.ModeHAMiCore, MIGStrategy: vgpu.MIGStrategyNone}
		if edit != nil {
			edit(&c)
		}
		return c
	}
	fullEntry := vgpu.NodeConfig{
		Name: testNode, OperatingMode: vgpu.ModeMIG, DeviceMemoryScaling: 1.8, DeviceCoreScaling: 3,
		DeviceSplitCount: 7, MIGStrategy: vgpu.MIGStrategyMixed,
		FilterDevices: &vgpu.FilterDevices{UUID: []string{"GPU-aaaa"}, Index: []int{2}},
	}
	tests := []struct {
		name   string
		device vgpu.NvidiaConfig
		args   []string
		nodes  []vgpu.NodeConfig
		want   Config
	}{
		{
			name:   "no ConfigMap, no flags, no node entry: shipped defaults",
			device: vgpu.DefaultNvidiaConfig(),
			want: Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig(), Mode: vgpu.ModeHAMiCore,
				MIGStrategy: vgpu.MIGStrategyNone},
		},
		{
			name:   "ConfigMap values are used as they are",
			device: cluster,
			want:   want(nil),
		},
		{
			name:   "flags left at their defaults do not hide the ConfigMap",
			device: cluster,
			args:   []string{},
			want:   want(nil),
		},
		{
			name:   "flags given on the command line win over the ConfigMap",
			device: cluster,
			args:   []string{"--device-split-count=4", "--gpu-memory-factor=1024", "--device-cores-scaling=0.5", "--mig-strategy=single"},
			want: want(func(c *Config) {
				c.Device.DeviceSplitCount = 4
				c.Device.GPUMemoryFactor = 1024
				c.Device.DeviceCoreScaling = 0.5
				c.MIGStrategy = vgpu.MIGStrategySingle
				c.Origins = Origins{SplitCount: FromFlag, MemoryFactor: FromFlag, CoreScaling: FromFlag}
			}),
		},
		{
			name:   "--gpu-memory-factor=0 asks for the automatic factor over the ConfigMap's",
			device: cluster,
			args:   []string{"--gpu-memory-factor=0"},
			want: want(func(c *Config) {
				c.Device.GPUMemoryFactor = 0
				c.Origins.MemoryFactor = FromFlag
			}),
		},
		{
			name:   "a flag given with its default value still wins",
			device: cluster,
			args:   []string{"--device-split-count=10"},
			want: want(func(c *Config) {
				c.Device.DeviceSplitCount = 10
				c.Origins.SplitCount = FromFlag
			}),
		},
		{
			name:   "the node's entry wins over flags and ConfigMap, field by field",
			device: cluster,
			args:   []string{"--device-split-count=4", "--device-cores-scaling=0.5", "--mig-strategy=single", "--gpu-memory-factor=8"},
			nodes:  []vgpu.NodeConfig{{Name: "other-node", DeviceSplitCount: 99}, fullEntry},
			want: want(func(c *Config) {
				c.Mode = vgpu.ModeMIG
				c.Device.DeviceSplitCount = 7
				c.Device.DeviceMemoryScaling = 1.8
				c.Device.DeviceCoreScaling = 3
				c.Device.GPUMemoryFactor = 8 // not a per-node setting
				c.MIGStrategy = vgpu.MIGStrategyMixed
				c.Filter = vgpu.FilterDevices{UUID: []string{"GPU-aaaa"}, Index: []int{2}}
				c.Origins = Origins{SplitCount: FromNodeConfig, MemoryScaling: FromNodeConfig, CoreScaling: FromNodeConfig,
					MemoryFactor: FromFlag}
			}),
		},
		{
			name:   "zeros and empty lists in the node's entry mean not set",
			device: cluster,
			args:   []string{"--device-split-count=4"},
			nodes:  []vgpu.NodeConfig{{Name: testNode, FilterDevices: &vgpu.FilterDevices{UUID: []string{}, Index: []int{1}}}},
			want: want(func(c *Config) {
				c.Device.DeviceSplitCount = 4
				c.Filter = vgpu.FilterDevices{Index: []int{1}}
				c.Origins.SplitCount = FromFlag
			}),
		},
		{
			name:   "entries of other nodes are ignored",
			device: cluster,
			nodes:  []vgpu.NodeConfig{{Name: "gpu-node-10", OperatingMode: vgpu.ModeMIG, DeviceSplitCount: 2}},
			want:   want(nil),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var flags *Flags
			if tt.args != nil {
				flags = parseFlags(t, tt.args...)
			}
			got, err := Resolve(testNode, tt.device, flags, vgpu.NodeConfigFile{NodeConfig: tt.nodes})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveRejectsBadFlags(t *testing.T) {
	tests := []struct {
		arg  string
		want string
	}{
		{"--device-split-count=0", "flag --device-split-count=0: want 1 to"},
		{"--device-split-count=2147483648", "flag --device-split-count=2147483648: want 1 to"},
		{"--gpu-memory-factor=2147483648", "flag --gpu-memory-factor=2147483648: want 0 (automatic) to"},
		{"--device-cores-scaling=0", "flag --device-cores-scaling=0: must be a number above 0"},
		{"--device-cores-scaling=-1", "flag --device-cores-scaling=-1: must be a number above 0"},
		{"--device-cores-scaling=NaN", "flag --device-cores-scaling=NaN: must be a number above 0"},
		{"--device-cores-scaling=+Inf", "flag --device-cores-scaling=+Inf: must be a number above 0"},
		{"--mig-strategy=auto", "flag --mig-strategy=auto: want none, single or mixed"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			_, err := Resolve(testNode, vgpu.DefaultNvidiaConfig(), parseFlags(t, tt.arg), vgpu.NodeConfigFile{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestGPUMemory(t *testing.T) {
	tests := []struct {
		name     string
		totalMiB uint64
		factor   int32
		scaling  float64
		want     int32
	}{
		{"upstream rule: floor MiB, factor 1", 81559, 1, 1, 81559},
		{"integer division by the factor", 81559, 2, 1, 40779},
		{"GiB units", 143771, 1024, 1, 140},
		{"memory scaling oversubscribes before the factor", 81559, 1, 1.8, 146806},
		{"scaling then factor", 81559, 1024, 1.8, 143},
		{"scaling below 1 reserves memory", 1000, 1, 0.9, 900},
		{"capped at int32", math.MaxUint32, 1, 2, math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Device: vgpu.DefaultNvidiaConfig()}
			c.Device.GPUMemoryFactor = tt.factor
			c.Device.DeviceMemoryScaling = tt.scaling
			if got := c.GPUMemory(tt.totalMiB); got != tt.want {
				t.Errorf("GPUMemory(%d) = %d, want %d", tt.totalMiB, got, tt.want)
			}
		})
	}
}

func TestRegisteredGPUs(t *testing.T) {
	gpus := []nvml.GPU{
		{Index: 1, UUID: "GPU-b", Minor: 0},
		{Index: 0, UUID: "GPU-a", Minor: 1},
		{Index: 2, UUID: "GPU-c", Minor: 2},
		{Index: 3, UUID: "GPU-d", Minor: 3},
	}
	tests := []struct {
		name   string
		filter vgpu.FilterDevices
		want   []string
	}{
		{"no filter keeps all in order", vgpu.FilterDevices{}, []string{"GPU-b", "GPU-a", "GPU-c", "GPU-d"}},
		{"by uuid", vgpu.FilterDevices{UUID: []string{"GPU-c", "GPU-unknown"}}, []string{"GPU-b", "GPU-a", "GPU-d"}},
		{"by NVML index, not position", vgpu.FilterDevices{Index: []int{0}}, []string{"GPU-b", "GPU-c", "GPU-d"}},
		{"both lists", vgpu.FilterDevices{UUID: []string{"GPU-d"}, Index: []int{1, 2}}, []string{"GPU-a"}},
		{"everything", vgpu.FilterDevices{Index: []int{0, 1, 2, 3}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []string{}
			for _, gpu := range (Config{Filter: tt.filter}).RegisteredGPUs(gpus) {
				got = append(got, gpu.UUID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RegisteredGPUs (-want +got):\n%s", diff)
			}
		})
	}
}
