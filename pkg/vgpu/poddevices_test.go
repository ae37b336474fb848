package vgpu

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Assignments as upstream Volcano writes them.
var podDeviceGoldens = []struct {
	name  string
	value string
	pd    PodDevices
}{
	{
		name:  "one container, one GPU",
		value: "GPU-aaa,NVIDIA,2000,30:",
		pd:    PodDevices{{{UUID: "GPU-aaa", Type: DeviceTypeNVIDIA, UsedMemory: 2000, UsedCores: 30}}},
	},
	{
		name:  "two containers",
		value: "GPU-aaa,NVIDIA,2000,30:;GPU-bbb,NVIDIA,1000,0:",
		pd: PodDevices{
			{{UUID: "GPU-aaa", Type: DeviceTypeNVIDIA, UsedMemory: 2000, UsedCores: 30}},
			{{UUID: "GPU-bbb", Type: DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 0}},
		},
	},
	{
		name:  "one container, two GPUs",
		value: "GPU-aaa,NVIDIA,3000,0:GPU-bbb,NVIDIA,3000,0:",
		pd: PodDevices{{
			{UUID: "GPU-aaa", Type: DeviceTypeNVIDIA, UsedMemory: 3000, UsedCores: 0},
			{UUID: "GPU-bbb", Type: DeviceTypeNVIDIA, UsedMemory: 3000, UsedCores: 0},
		}},
	},
	{
		name:  "whole card, device plugin spec example",
		value: "GPU-68e5a5b5-7f07-4b0f-a7e1-30d9ec1befe2,NVIDIA,2875,100:",
		pd:    PodDevices{{{UUID: "GPU-68e5a5b5-7f07-4b0f-a7e1-30d9ec1befe2", Type: DeviceTypeNVIDIA, UsedMemory: 2875, UsedCores: 100}}},
	},
	{
		name:  "MIG instance",
		value: "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448[group2-3],NVIDIA,3000,0:",
		pd:    PodDevices{{{UUID: "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448[group2-3]", Type: DeviceTypeNVIDIA, UsedMemory: 3000}}},
	},
	{
		name:  "first of two containers served by the device plugin",
		value: ";GPU-bbb,NVIDIA,1000,0:",
		pd:    PodDevices{nil, {{UUID: "GPU-bbb", Type: DeviceTypeNVIDIA, UsedMemory: 1000}}},
	},
	{
		name:  "both of two containers served",
		value: ";",
		pd:    PodDevices{nil, nil},
	},
	{
		name:  "one-container pod served, or no vGPU containers",
		value: "",
		pd:    nil,
	},
}

func TestPodDevicesGolden(t *testing.T) {
	for _, tc := range podDeviceGoldens {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePodDevices(tc.value)
			if err != nil {
				t.Fatalf("DecodePodDevices: %v", err)
			}
			if !reflect.DeepEqual(got, tc.pd) {
				t.Fatalf("DecodePodDevices:\n got %#v\nwant %#v", got, tc.pd)
			}
			encoded, err := tc.pd.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if encoded != tc.value {
				t.Fatalf("Encode:\n got %q\nwant %q", encoded, tc.value)
			}
		})
	}
}

// The device plugin serves a pod one container per Allocate call: it finds the next entry,
// erases it and writes the assignment back. Every intermediate value must keep the entry
// positions.
func TestDevicePluginServesContainersInTurn(t *testing.T) {
	value := "GPU-aaa,NVIDIA,2000,30:;GPU-bbb,NVIDIA,1000,0:GPU-ccc,NVIDIA,1000,0:;GPU-aaa,NVIDIA,500,10:"
	wantServed := []int{0, 1, 2}
	wantValues := []string{
		";GPU-bbb,NVIDIA,1000,0:GPU-ccc,NVIDIA,1000,0:;GPU-aaa,NVIDIA,500,10:",
		";;GPU-aaa,NVIDIA,500,10:",
		";;",
	}
	for step := range wantServed {
		pd, err := DecodePodDevices(value)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		next, ok := pd.NextPending()
		if !ok || next != wantServed[step] {
			t.Fatalf("step %d: NextPending = %d, %v; want %d, true", step, next, ok, wantServed[step])
		}
		erased, err := pd.EraseContainer(next)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if len(pd[next]) == 0 {
			t.Fatalf("step %d: EraseContainer changed its receiver", step)
		}
		if value, err = erased.Encode(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if value != wantValues[step] {
			t.Fatalf("step %d: wrote %q, want %q", step, value, wantValues[step])
		}
	}
	pd, err := DecodePodDevices(value)
	if err != nil {
		t.Fatal(err)
	}
	if next, ok := pd.NextPending(); ok {
		t.Fatalf("all served, but NextPending = %d", next)
	}
}

func TestOneContainerPodEndsEmpty(t *testing.T) {
	pd, err := DecodePodDevices("GPU-aaa,NVIDIA,2000,30:")
	if err != nil {
		t.Fatal(err)
	}
	erased, err := pd.EraseContainer(0)
	if err != nil {
		t.Fatal(err)
	}
	value, err := erased.Encode()
	if err != nil || value != "" {
		t.Fatalf("Encode = %q, %v; want the empty string", value, err)
	}
	again, err := DecodePodDevices(value)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.NextPending(); ok {
		t.Fatal("nothing should be pending")
	}
}

func TestEraseContainerOutOfRange(t *testing.T) {
	pd := PodDevices{nil}
	for _, i := range []int{-1, 1} {
		if _, err := pd.EraseContainer(i); err == nil || !strings.Contains(err.Error(), "1 entries") {
			t.Errorf("EraseContainer(%d) error = %v, want one naming the entry count", i, err)
		}
	}
}

func TestSameGPUInTwoContainers(t *testing.T) {
	value := "GPU-aaa,NVIDIA,1000,10:;GPU-aaa,NVIDIA,2000,20:"
	pd, err := DecodePodDevices(value)
	if err != nil {
		t.Fatalf("containers may share a GPU: %v", err)
	}
	if got := pd.UsageByGPU()["GPU-aaa"]; got != (GPUUsage{Devices: 2, Memory: 3000, Cores: 30}) {
		t.Fatalf("UsageByGPU = %+v", got)
	}
}

func TestUsageByGPU(t *testing.T) {
	pd, err := DecodePodDevices("GPU-aaa,NVIDIA,2000,30:GPU-bbb,NVIDIA,2000,30:;GPU-aaa,NVIDIA,1000,0:;GPU-ccc[group1-0],NVIDIA,3000,0:GPU-ccc[group1-1],NVIDIA,3000,0:")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]GPUUsage{
		"GPU-aaa": {Devices: 2, Memory: 3000, Cores: 30},
		"GPU-bbb": {Devices: 1, Memory: 2000, Cores: 30},
		"GPU-ccc": {Devices: 2, Memory: 6000, Cores: 0},
	}
	if got := pd.UsageByGPU(); !reflect.DeepEqual(got, want) {
		t.Fatalf("UsageByGPU:\n got %+v\nwant %+v", got, want)
	}
}

func TestGPUUsageAdd(t *testing.T) {
	got := GPUUsage{Devices: 1, Memory: 2000, Cores: 30}.Add(GPUUsage{Devices: 2, Memory: 500, Cores: 0})
	if want := (GPUUsage{Devices: 3, Memory: 2500, Cores: 30}); got != want {
		t.Fatalf("Add = %+v, want %+v", got, want)
	}
}

func TestHoldsDevices(t *testing.T) {
	for _, tc := range []struct {
		node  string
		phase corev1.PodPhase
		want  bool
	}{
		{"", corev1.PodPending, false},
		{"n1", corev1.PodPending, true},
		{"n1", corev1.PodRunning, true},
		{"n1", corev1.PodUnknown, true},
		{"n1", corev1.PodSucceeded, false},
		{"n1", corev1.PodFailed, false},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: tc.node}, Status: corev1.PodStatus{Phase: tc.phase}}
		if got := HoldsDevices(pod); got != tc.want {
			t.Errorf("node %q phase %s: HoldsDevices = %v, want %v", tc.node, tc.phase, got, tc.want)
		}
	}
}

func TestDecodePodDevicesRejects(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{"missing terminator", "GPU-aaa,NVIDIA,2000,30", []string{"container 0", "device 0", "not terminated", `"GPU-aaa,NVIDIA,2000,30"`}},
		{"missing terminator in second container", "GPU-aaa,NVIDIA,2000,30:;GPU-bbb,NVIDIA,1,0", []string{"container 1", "device 0"}},
		{"three fields", "GPU-aaa,NVIDIA,2000:", []string{"container 0", "device 0", "has 3 fields", "uuid,type,memory,cores"}},
		{"empty record", "GPU-aaa,NVIDIA,1,0::", []string{"device 1", "has 1 fields"}},
		{"memory not a number", "GPU-aaa,NVIDIA,2G,30:", []string{"memory", `"2G"`}},
		{"negative cores", "GPU-aaa,NVIDIA,2000,-1:", []string{"cores", `"-1"`}},
		{"cores above 100", "GPU-aaa,NVIDIA,2000,101:", []string{"cores", `"101"`, "0 to 100"}},
		{"empty uuid", ",NVIDIA,2000,30:", []string{"uuid is empty"}},
		{"empty type", "GPU-aaa,,2000,30:", []string{"type is empty"}},
		{"broken MIG id", "GPU-aaa[group2],NVIDIA,2000,0:", []string{"MIG id", `"GPU-aaa[group2]"`}},
		{"MIG id with text after it", "GPU-aaa[g-1]x,NVIDIA,2000,0:", []string{"MIG id", `"GPU-aaa[g-1]x"`}},
		{"same GPU twice in a container", "GPU-aaa,NVIDIA,1,0:;GPU-bbb,NVIDIA,1,0:GPU-bbb,NVIDIA,2,0:", []string{"container 1", "device 1", `"GPU-bbb"`, "already assigned as device 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePodDevices(tc.value)
			if err == nil {
				t.Fatalf("DecodePodDevices(%q) = %+v, want an error", tc.value, got)
			}
			for _, fragment := range tc.want {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

func TestEncodePodDevicesRejects(t *testing.T) {
	good := ContainerDevice{UUID: "GPU-aaa", Type: DeviceTypeNVIDIA, UsedMemory: 100, UsedCores: 10}
	for _, tc := range []struct {
		name   string
		change func(*ContainerDevice)
		want   []string
	}{
		{"semicolon in type", func(d *ContainerDevice) { d.Type = "NVIDIA;x" }, []string{"container 1 device 1", "type", "';'"}},
		{"colon in uuid", func(d *ContainerDevice) { d.UUID = "GPU:a" }, []string{"uuid", `"GPU:a"`}},
		{"malformed MIG id", func(d *ContainerDevice) { d.UUID = "GPU-a[g]" }, []string{"MIG id"}},
		{"negative memory", func(d *ContainerDevice) { d.UsedMemory = -1 }, []string{"memory -1"}},
		{"cores above 100", func(d *ContainerDevice) { d.UsedCores = 150 }, []string{"cores 150"}},
		{"same GPU twice", func(d *ContainerDevice) { d.UsedMemory = 5 }, []string{"container 1 device 1", "already assigned"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := good
			tc.change(&bad)
			got, err := PodDevices{{good}, {good, bad}}.Encode()
			if err == nil {
				t.Fatalf("Encode = %q, want an error", got)
			}
			for _, fragment := range tc.want {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

// FuzzDecodePodDevices: decoding never panics, and whatever decodes re-encodes to a value
// that decodes to the same assignment.
func FuzzDecodePodDevices(f *testing.F) {
	for _, tc := range podDeviceGoldens {
		f.Add(tc.value)
	}
	f.Add("GPU-a[g-01],X,0007,0:;;")
	f.Add(";;;GPU-a,NVIDIA,1,1:")
	f.Add("a,b,1,1:a,b,1,1:a,b,1,1:")
	f.Add(",,,:;,,,:")
	f.Fuzz(func(t *testing.T, value string) {
		pd, err := DecodePodDevices(value)
		if err != nil {
			return
		}
		encoded, err := pd.Encode()
		if err != nil {
			t.Fatalf("decoded %q to %+v, which does not encode: %v", value, pd, err)
		}
		again, err := DecodePodDevices(encoded)
		if err != nil {
			t.Fatalf("re-encoded %q as %q, which does not decode: %v", value, encoded, err)
		}
		if !reflect.DeepEqual(again, pd) {
			t.Fatalf("%q decodes to %#v, but its re-encoding %q decodes to %#v", value, pd, encoded, again)
		}
	})
}
