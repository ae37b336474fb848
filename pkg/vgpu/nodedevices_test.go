package vgpu

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

const (
	uuidA = "GPU-3a6e07b4-8c1d-4f2e-9a5b-7d0c1e2f3a4b"
	uuidB = "GPU-9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0"
)

// Values as the upstream device plugins write them.
var nodeDeviceGoldens = []struct {
	name    string
	value   string
	devices []NodeDevice
	// reencoded is what EncodeNodeDevices writes for devices, when it differs from value.
	reencoded string
}{
	{
		name:  "v1.11 classic plugin, two A100 in NVML index order",
		value: uuidA + ",10,81920,NVIDIA-NVIDIA A100-SXM4-80GB,true,hami-core:" + uuidB + ",10,81920,NVIDIA-NVIDIA A100-SXM4-80GB,true,hami-core:",
		devices: []NodeDevice{
			{UUID: uuidA, Count: 10, Memory: 81920, Type: "NVIDIA-NVIDIA A100-SXM4-80GB", Healthy: true, Mode: ModeHAMiCore},
			{UUID: uuidB, Count: 10, Memory: 81920, Type: "NVIDIA-NVIDIA A100-SXM4-80GB", Healthy: true, Mode: ModeHAMiCore},
		},
	},
	{
		name:  "v1.12 rebased plugin, H200 with gpuMemoryFactor 2 and an unhealthy GPU in mig mode",
		value: uuidB + ",10,71885,NVIDIA-NVIDIA H200,false,mig:" + uuidA + ",10,71885,NVIDIA-NVIDIA H200,true,mig:",
		devices: []NodeDevice{
			{UUID: uuidB, Count: 10, Memory: 71885, Type: "NVIDIA-NVIDIA H200", Healthy: false, Mode: ModeMIG},
			{UUID: uuidA, Count: 10, Memory: 71885, Type: "NVIDIA-NVIDIA H200", Healthy: true, Mode: ModeMIG},
		},
	},
	{
		name:  "scheduler spec example, consumer GPU",
		value: "GPU-8a9c,10,8192,NVIDIA-NVIDIA GeForce RTX 3070 Ti,true,hami-core:",
		devices: []NodeDevice{
			{UUID: "GPU-8a9c", Count: 10, Memory: 8192, Type: "NVIDIA-NVIDIA GeForce RTX 3070 Ti", Healthy: true, Mode: ModeHAMiCore},
		},
	},
	{
		name:  "newer upstream mps mode",
		value: uuidA + ",4,40960,NVIDIA-NVIDIA A100-PCIE-40GB,true,mps:",
		devices: []NodeDevice{
			{UUID: uuidA, Count: 4, Memory: 40960, Type: "NVIDIA-NVIDIA A100-PCIE-40GB", Healthy: true, Mode: ModeMPS},
		},
	},
	{
		name:  "volcano-sh/devices and early plugin releases: no mode field, read as hami-core",
		value: uuidA + ",10,24564,NVIDIA-NVIDIA GeForce RTX 3090,true:",
		devices: []NodeDevice{
			{UUID: uuidA, Count: 10, Memory: 24564, Type: "NVIDIA-NVIDIA GeForce RTX 3090", Healthy: true, Mode: ModeHAMiCore},
		},
		reencoded: uuidA + ",10,24564,NVIDIA-NVIDIA GeForce RTX 3090,true,hami-core:",
	},
	{
		name:      "no GPUs",
		value:     "",
		devices:   nil,
		reencoded: "",
	},
}

func TestDecodeNodeDevicesGolden(t *testing.T) {
	for _, tc := range nodeDeviceGoldens {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeNodeDevices(tc.value)
			if err != nil {
				t.Fatalf("DecodeNodeDevices: %v", err)
			}
			if !reflect.DeepEqual(got, tc.devices) {
				t.Fatalf("DecodeNodeDevices:\n got %+v\nwant %+v", got, tc.devices)
			}
			encoded, err := EncodeNodeDevices(got)
			if err != nil {
				t.Fatalf("EncodeNodeDevices: %v", err)
			}
			want := tc.value
			if tc.reencoded != "" || tc.value == "" {
				want = tc.reencoded
			}
			if encoded != want {
				t.Fatalf("EncodeNodeDevices:\n got %q\nwant %q", encoded, want)
			}
		})
	}
}

func TestDecodeNodeDevicesKeepsOrder(t *testing.T) {
	devices, err := DecodeNodeDevices(uuidB + ",1,1,T,true,hami-core:" + uuidA + ",2,2,T,false,mig:")
	if err != nil {
		t.Fatal(err)
	}
	if devices[0].UUID != uuidB || devices[1].UUID != uuidA {
		t.Fatalf("GPU index must follow the list order, got %s then %s", devices[0].UUID, devices[1].UUID)
	}
}

func TestDecodeNodeDevicesRejects(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		// every fragment must appear in the error
		want []string
	}{
		{"missing terminator", uuidA + ",10,100,T,true,hami-core", []string{"GPU 0", "not terminated", "hami-core"}},
		{"missing terminator after a good record", uuidA + ",10,100,T,true,hami-core:junk", []string{"GPU 1", `"junk"`}},
		{"empty record in the middle", uuidA + ",10,100,T,true,hami-core::" + uuidB + ",10,100,T,true,hami-core:", []string{"GPU 1", "has 1 fields"}},
		{"lone terminator", ":", []string{"GPU 0", "has 1 fields"}},
		{"four fields", uuidA + ",10,100,T:", []string{"GPU 0", "has 4 fields", "uuid,count,memory,type,health,mode"}},
		{"HAMi seven-field record", uuidA + ",10,100,100,NVIDIA-T,0,true:", []string{"GPU 0", "has 7 fields"}},
		{"HAMi six-field record with cores before the type", uuidA + ",10,100,100,NVIDIA-T,true:", []string{"GPU 0", "health", `"NVIDIA-T"`}},
		{"count not a number", uuidA + ",ten,100,T,true,hami-core:", []string{"GPU 0", "count", `"ten"`}},
		{"negative count", uuidA + ",-1,100,T,true,hami-core:", []string{"count", `"-1"`}},
		{"signed memory", uuidA + ",1,+100,T,true,hami-core:", []string{"memory", `"+100"`}},
		{"memory beyond int32", uuidA + ",1,2147483648,T,true,hami-core:", []string{"memory", `"2147483648"`, "larger than"}},
		{"health", uuidA + ",1,100,T,yes,hami-core:", []string{"health", `"yes"`}},
		{"unknown mode", uuidA + ",1,100,T,true,vgpu:", []string{"mode", `"vgpu"`}},
		{"empty mode", uuidA + ",1,100,T,true,:", []string{"mode", `""`}},
		{"empty uuid", ",1,100,T,true,hami-core:", []string{"uuid is empty"}},
		{"uuid with bracket", "GPU-a[g-1],1,100,T,true,hami-core:", []string{"uuid", `"GPU-a[g-1]"`, "'['"}},
		{"uuid with space", "GPU a,1,100,T,true,hami-core:", []string{"uuid", `"GPU a"`}},
		{"empty type", uuidA + ",1,100,,true,hami-core:", []string{"type is empty"}},
		{"repeated uuid", uuidA + ",1,100,T,true,hami-core:" + uuidB + ",1,100,T,true,hami-core:" + uuidA + ",1,100,T,true,hami-core:",
			[]string{"GPU 2", quote(uuidA), "already listed as GPU 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeNodeDevices(tc.value)
			if err == nil {
				t.Fatalf("DecodeNodeDevices(%q) = %+v, want an error", tc.value, got)
			}
			for _, fragment := range tc.want {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

func TestDecodeNodeDevicesShortensLongText(t *testing.T) {
	_, err := DecodeNodeDevices(strings.Repeat("x", 100000))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("want a short error for a huge bad value, got %d bytes", len(err.Error()))
	}
}

func TestEncodeNodeDevicesRejects(t *testing.T) {
	good := NodeDevice{UUID: uuidA, Count: 10, Memory: 100, Type: "NVIDIA-T", Healthy: true, Mode: ModeHAMiCore}
	for _, tc := range []struct {
		name   string
		change func(*NodeDevice)
		want   []string
	}{
		{"comma in type", func(d *NodeDevice) { d.Type = "NVIDIA-A,B" }, []string{"GPU 1", "type", `"NVIDIA-A,B"`, "','"}},
		{"colon in type", func(d *NodeDevice) { d.Type = "NVIDIA-A:B" }, []string{"type", "':'"}},
		{"comma in uuid", func(d *NodeDevice) { d.UUID = "GPU-a,b" }, []string{"uuid", `"GPU-a,b"`}},
		{"empty uuid", func(d *NodeDevice) { d.UUID = "" }, []string{"uuid is empty"}},
		{"negative count", func(d *NodeDevice) { d.Count = -1 }, []string{"count -1"}},
		{"negative memory", func(d *NodeDevice) { d.Memory = -5 }, []string{"memory -5"}},
		{"empty type", func(d *NodeDevice) { d.Type = "" }, []string{"type is empty"}},
		{"unset mode", func(d *NodeDevice) { d.Mode = "" }, []string{"mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := good
			tc.change(&bad)
			got, err := EncodeNodeDevices([]NodeDevice{good, bad})
			if err == nil {
				t.Fatalf("EncodeNodeDevices = %q, want an error", got)
			}
			for _, fragment := range tc.want {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

func TestEncodeNodeDevicesRejectsRepeatedUUID(t *testing.T) {
	d := NodeDevice{UUID: uuidA, Count: 10, Memory: 100, Type: "NVIDIA-T", Healthy: true, Mode: ModeHAMiCore}
	if _, err := EncodeNodeDevices([]NodeDevice{d, d}); err == nil || !strings.Contains(err.Error(), "GPU 1") {
		t.Fatalf("error = %v, want one naming GPU 1", err)
	}
}

func TestNodeDevicesRoundTrip(t *testing.T) {
	devices := []NodeDevice{
		{UUID: uuidA, Count: 0, Memory: 0, Type: "NVIDIA-NVIDIA H200", Healthy: false, Mode: ModeHAMiCore},
		{UUID: uuidB, Count: 2147483647, Memory: 2147483647, Type: "NVIDIA-x y;z", Healthy: true, Mode: ModeMIG},
	}
	encoded, err := EncodeNodeDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := DecodeNodeDevices(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decoded, devices) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", decoded, devices)
	}
}

// TestGPUMemory: the published memory is the GPU's MiB times the scaling rounded down to a
// MiB, then divided by the factor rounded down.
func TestGPUMemory(t *testing.T) {
	for _, tt := range []struct {
		name     string
		totalMiB uint64
		scaling  float64
		factor   int32
		want     int32
	}{
		{"H200, scaling 1", 143771, 1, 1, 143771},
		{"H200, factor 2", 143771, 1, 2, 71885},
		{"H200, scaling 2", 143771, 2, 1, 287542},
		{"H200, scaling 1.5, factor 2: 215,656.5 MiB is 215,656", 143771, 1.5, 2, 107828},
		{"H200, scaling 0.5", 143771, 0.5, 1, 71885},
		{"capped", 1 << 40, 1, 1, math.MaxInt32},
		{"factor 0", 143771, 1, 0, 0},
		{"scaling 0", 143771, 0, 1, 0},
		{"negative scaling", 143771, -1, 1, 0},
		{"NaN scaling", 143771, math.NaN(), 1, 0},
		{"infinite scaling", 143771, math.Inf(1), 1, math.MaxInt32},
	} {
		if got := GPUMemory(tt.totalMiB, tt.scaling, tt.factor); got != tt.want {
			t.Errorf("%s: GPUMemory(%d, %g, %d) = %d, want %d", tt.name, tt.totalMiB, tt.scaling, tt.factor, got, tt.want)
		}
	}
}

// FuzzDecodeNodeDevices: decoding never panics, and whatever decodes re-encodes to a value
// that decodes to the same devices.
func FuzzDecodeNodeDevices(f *testing.F) {
	for _, tc := range nodeDeviceGoldens {
		f.Add(tc.value)
	}
	f.Add(uuidA + ",10,100,T,TRUE,hami-core:")
	f.Add(uuidA + ",010,00,T,1,mig:")
	f.Add("a,1,1,t,true:b,2,2,t,false,mps:")
	f.Add(":::")
	f.Add(",,,,,:")
	f.Fuzz(func(t *testing.T, value string) {
		devices, err := DecodeNodeDevices(value)
		if err != nil {
			return
		}
		encoded, err := EncodeNodeDevices(devices)
		if err != nil {
			t.Fatalf("decoded %q to %+v, which does not encode: %v", value, devices, err)
		}
		again, err := DecodeNodeDevices(encoded)
		if err != nil {
			t.Fatalf("re-encoded %q as %q, which does not decode: %v", value, encoded, err)
		}
		if !reflect.DeepEqual(again, devices) {
			t.Fatalf("%q decodes to %+v, but its re-encoding %q decodes to %+v", value, devices, encoded, again)
		}
	})
}
