package vgpu

import (
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestParseDeviceConfigShipped(t *testing.T) {
	data, err := os.ReadFile("testdata/device-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDeviceConfig(data)
	if err != nil {
		t.Fatalf("ParseDeviceConfig: %v", err)
	}
	// Upstream pins the factor to 1 MiB; left out, ours is chosen per node.
	want := DefaultNvidiaConfig()
	if want.GPUMemoryFactor != 0 || got.GPUMemoryFactor != 1 {
		t.Fatalf("gpuMemoryFactor: default %d, upstream's shipped %d; want 0 and 1", want.GPUMemoryFactor, got.GPUMemoryFactor)
	}
	want.GPUMemoryFactor = 1
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shipped config differs from DefaultNvidiaConfig:\n got %+v\nwant %+v", got, want)
	}
	if got.ResourceNames() != DefaultResourceNames() {
		t.Fatalf("ResourceNames = %+v", got.ResourceNames())
	}
}

func TestParseDeviceConfigFillsDefaults(t *testing.T) {
	got, err := ParseDeviceConfig([]byte("nvidia:\n  deviceSplitCount: 4\n  gpuMemoryFactor: 1024\n  resourceMemoryName: example.com/gpu-mem\nvnpus: [{commonWord: Ascend310P}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultNvidiaConfig()
	want.DeviceSplitCount = 4
	want.GPUMemoryFactor = 1024
	want.ResourceMemoryName = "example.com/gpu-mem"
	want.KnownMIGGeometries = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestMIGGeometriesFor(t *testing.T) {
	c := DefaultNvidiaConfig()
	groups, ok := c.MIGGeometriesFor(DeviceTypeForModel("NVIDIA A100-SXM4-80GB"))
	if !ok || len(groups) != 4 || groups[3].Geometries[0].Name != "7g.80gb" {
		t.Fatalf("A100-SXM4-80GB: got %+v, %v", groups, ok)
	}
	if _, ok := c.MIGGeometriesFor(DeviceTypeForModel("NVIDIA H200")); ok {
		t.Fatal("H200 has no geometry in the shipped config")
	}
}

func TestParseDeviceConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		field      string
		want       []string
	}{
		{"no nvidia section", "other: {}\n", "nvidia", []string{"section missing"}},
		{"not YAML", "nvidia: [\n", "", []string{DeviceConfigKey}},
		{"wrong type", "nvidia:\n  deviceSplitCount: ten\n", "nvidia.deviceSplitCount", []string{"got string, want int32"}},
		{"negative split", "nvidia:\n  deviceSplitCount: -1\n", "nvidia.deviceSplitCount", []string{`"-1"`, "at least 1"}},
		{"zero scaling is default, negative is not", "nvidia:\n  deviceCoreScaling: -0.5\n", "nvidia.deviceCoreScaling", []string{`"-0.5"`}},
		{"memory scaling", "nvidia:\n  deviceMemoryScaling: -1\n", "nvidia.deviceMemoryScaling", nil},
		{"negative factor", "nvidia:\n  gpuMemoryFactor: -2\n", "nvidia.gpuMemoryFactor", []string{`"-2"`}},
		{"default cores", "nvidia:\n  defaultCores: 120\n", "nvidia.defaultCores", []string{`"120"`}},
		{"default memory", "nvidia:\n  defaultMemory: -1\n", "nvidia.defaultMemory", nil},
		{"default gpu number", "nvidia:\n  defaultGPUNum: -1\n", "nvidia.defaultGPUNum", nil},
		{"resource name without domain", "nvidia:\n  resourceCountName: vgpu-number\n", "nvidia.resourceCountName", []string{`"vgpu-number"`}},
		{"duplicate resource names", "nvidia:\n  resourceCoreName: volcano.sh/vgpu-memory\n", "nvidia.resourceCoreName", []string{"same as resourceMemoryName"}},
		{"MIG group with dash", "nvidia:\n  knownMigGeometries:\n  - models: [A30]\n    allowedGeometries:\n    - group: group-1\n      geometries: [{name: 1g.6gb, memory: 6144, count: 4}]\n",
			"nvidia.knownMigGeometries[0].allowedGeometries[0].group", []string{`"group-1"`}},
		{"MIG duplicate group", "nvidia:\n  knownMigGeometries:\n  - models: [A30]\n    allowedGeometries:\n    - group: g\n      geometries: [{name: a, memory: 1, count: 1}]\n    - group: g\n      geometries: [{name: a, memory: 1, count: 1}]\n",
			"nvidia.knownMigGeometries[0].allowedGeometries[1].group", []string{"listed twice"}},
		{"MIG no models", "nvidia:\n  knownMigGeometries:\n  - allowedGeometries: []\n", "nvidia.knownMigGeometries[0].models", nil},
		{"MIG zero memory", "nvidia:\n  knownMigGeometries:\n  - models: [A30]\n    allowedGeometries:\n    - group: g\n      geometries: [{name: a, memory: 0, count: 1}]\n",
			"nvidia.knownMigGeometries[0].allowedGeometries[0].geometries[0].memory", nil},
		{"context reserve without models", "nvidia:\n  contextReserves:\n  - contextReserveMiB: 518\n", "nvidia.contextReserves[0].models", []string{"empty"}},
		{"context reserve empty model", "nvidia:\n  contextReserves:\n  - models: [H200, \"\"]\n    contextReserveMiB: 518\n",
			"nvidia.contextReserves[0].models[1]", []string{"empty"}},
		{"negative context reserve", "nvidia:\n  contextReserves:\n  - models: [H200]\n    contextReserveMiB: -1\n",
			"nvidia.contextReserves[0].contextReserveMiB", []string{`"-1"`, "want 0 to 16384 MiB"}},
		{"context reserve in bytes", "nvidia:\n  contextReserves:\n  - models: [A100]\n    contextReserveMiB: 0\n  - models: [H200]\n    contextReserveMiB: 543162368\n",
			"nvidia.contextReserves[1].contextReserveMiB", []string{`"543162368"`}},
		{"context reserve not a number", "nvidia:\n  contextReserves:\n  - models: [H200]\n    contextReserveMiB: 518Mi\n",
			"nvidia.contextReserves.contextReserveMiB", []string{"got string, want int32"}},
		{"MIG zero count", "nvidia:\n  knownMigGeometries:\n  - models: [A30]\n    allowedGeometries:\n    - group: g\n      geometries: [{name: a, memory: 5, count: 0}]\n",
			"nvidia.knownMigGeometries[0].allowedGeometries[0].geometries[0].count", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDeviceConfig([]byte(tc.yaml))
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) {
				t.Fatalf("ParseDeviceConfig = %+v, %v; want a *ConfigError", got, err)
			}
			if cfgErr.Field != tc.field {
				t.Errorf("error %q names field %q, want %q", err, cfgErr.Field, tc.field)
			}
			for _, fragment := range append([]string{DeviceConfigKey}, tc.want...) {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

func TestValidateNamesEmptyResource(t *testing.T) {
	c := DefaultNvidiaConfig()
	c.ResourceCoreName = ""
	err := c.Validate()
	var cfgErr *ConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Field != "nvidia.resourceCoreName" || cfgErr.Reason != "empty" {
		t.Fatalf("Validate = %v, want nvidia.resourceCoreName empty", err)
	}
}

// FuzzParseDeviceConfig: parsing never panics; a rejected file gets a *ConfigError that
// says what is wrong, and the same text in a ConfigMap a *ConfigMapError naming the ConfigMap;
// an accepted config holds what the scheduler and the device plugin rely on (checked here
// field by field, not through Validate), reads the same from a ConfigMap, and written back as
// YAML parses to the same config.
func FuzzParseDeviceConfig(f *testing.F) {
	for _, path := range []string{"testdata/device-config.yaml", "../../config/device-config.yaml"} {
		shipped, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(shipped))
	}
	f.Add("nvidia: {}\n")
	f.Add("nvidia:\n  deviceSplitCount: 3\n  deviceCoreScaling: 1.5\n  knownMigGeometries: []\n")
	f.Add("nvidia: null\n")
	f.Add("nvidia:\n  resourceCountName: example.com/gpu\n  resourceMemoryName: example.com/gpu\n")
	f.Add("nvidia:\n  deviceSplitCount: -1\n  deviceMemoryScaling: .inf\n")
	f.Add("nvidia:\n  knownMigGeometries:\n  - models: [A30]\n    allowedGeometries:\n    - group: g\n" +
		"      geometries:\n      - {name: 1g.6gb, memory: 6144, count: 4}\n")
	f.Add("nvidia:\n  contextReserves:\n  - models: [H200, H100]\n    contextReserveMiB: 518\n  - models: [A100]\n    contextReserveMiB: 0\n")
	f.Add("nvidia:\n  contextReserves: []\n")
	f.Fuzz(func(t *testing.T, text string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: DeviceConfigMapName},
			Data: map[string]string{DeviceConfigKey: text}}
		fromMap, mapErr := DeviceConfigOf(cm)
		c, err := ParseDeviceConfig([]byte(text))
		if err != nil {
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) || cfgErr.Reason == "" || !strings.HasPrefix(err.Error(), DeviceConfigKey+": ") {
				t.Fatalf("ParseDeviceConfig(%q) error %q (%T), want a *ConfigError naming %s with a reason", text, err, err, DeviceConfigKey)
			}
			var cmErr *ConfigMapError
			if !errors.As(mapErr, &cmErr) || cmErr.ConfigMap != cm || cmErr.Err.Error() != err.Error() ||
				!strings.Contains(mapErr.Error(), "kube-system/"+DeviceConfigMapName) {
				t.Fatalf("DeviceConfigOf(%q) error %v, want a *ConfigMapError around %v", text, mapErr, err)
			}
			return
		}
		if mapErr != nil || !reflect.DeepEqual(fromMap, c) {
			t.Fatalf("%q parses to %+v, but from a ConfigMap to %+v, %v", text, c, fromMap, mapErr)
		}
		assertUsableDeviceConfig(t, text, c)

		out, err := yaml.Marshal(deviceConfigFile{Nvidia: &c})
		if err != nil {
			t.Fatalf("accepted config %+v does not marshal: %v", c, err)
		}
		again, err := ParseDeviceConfig(out)
		if err != nil {
			t.Fatalf("accepted %q, but not its re-encoding %q: %v", text, out, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("%q parses to %+v, its re-encoding to %+v", text, c, again)
		}
	})
}

// assertUsableDeviceConfig checks what the programs reading an accepted device config take
// for granted: four distinct extended resource names, at least one vGPU per GPU, finite
// positive scalings, defaults in range, and MIG geometries they can index and name.
func assertUsableDeviceConfig(t *testing.T, text string, c NvidiaConfig) {
	t.Helper()
	names := map[corev1.ResourceName]bool{}
	for _, name := range []corev1.ResourceName{c.ResourceCountName, c.ResourceMemoryName, c.ResourceCoreName, c.ResourceMemoryPercentageName} {
		if name == "" || !strings.Contains(string(name), "/") || names[name] {
			t.Fatalf("%q accepted with resource names %+v: empty, not extended or repeated", text, c.ResourceNames())
		}
		names[name] = true
	}
	switch {
	case c.DeviceSplitCount < 1:
		t.Fatalf("%q accepted with deviceSplitCount %d", text, c.DeviceSplitCount)
	case !(c.DeviceCoreScaling > 0) || math.IsInf(c.DeviceCoreScaling, 0):
		t.Fatalf("%q accepted with deviceCoreScaling %v", text, c.DeviceCoreScaling)
	case !(c.DeviceMemoryScaling > 0) || math.IsInf(c.DeviceMemoryScaling, 0):
		t.Fatalf("%q accepted with deviceMemoryScaling %v", text, c.DeviceMemoryScaling)
	case c.GPUMemoryFactor < 0 || c.DefaultMemory < 0 || c.DefaultCores < 0 || c.DefaultCores > 100 || c.DefaultGPUNum < 1:
		t.Fatalf("%q accepted with gpuMemoryFactor %d, defaults memory %d, cores %d, GPUs %d",
			text, c.GPUMemoryFactor, c.DefaultMemory, c.DefaultCores, c.DefaultGPUNum)
	}
	for _, entry := range c.ContextReserves {
		if len(entry.Models) == 0 || entry.ContextReserveMiB < 0 || entry.ContextReserveMiB > maxContextReserveMiB {
			t.Fatalf("%q accepted context reserve %+v", text, entry)
		}
		for _, model := range entry.Models {
			if model == "" {
				t.Fatalf("%q accepted an empty context reserve model", text)
			}
		}
	}
	for _, entry := range c.KnownMIGGeometries {
		if len(entry.Models) == 0 || len(entry.AllowedGeometries) == 0 {
			t.Fatalf("%q accepted MIG entry %+v without models or geometries", text, entry)
		}
		for _, model := range entry.Models {
			if model == "" {
				t.Fatalf("%q accepted an empty MIG model", text)
			}
			if groups, ok := c.MIGGeometriesFor(model); !ok || len(groups) == 0 {
				t.Fatalf("%q: model %q listed but MIGGeometriesFor finds nothing", text, model)
			}
		}
		groups := map[string]bool{}
		for _, group := range entry.AllowedGeometries {
			if checkMIGGroup(group.Group) != nil || groups[group.Group] || len(group.Geometries) == 0 {
				t.Fatalf("%q accepted MIG group %+v: bad name, repeated or empty", text, group)
			}
			groups[group.Group] = true
			for _, g := range group.Geometries {
				if g.Name == "" || g.Memory < 1 || g.Count < 1 {
					t.Fatalf("%q accepted MIG geometry %+v", text, g)
				}
			}
		}
	}
}
