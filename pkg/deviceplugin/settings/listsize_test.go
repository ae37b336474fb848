package settings

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/kubelet"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// h200s are n GPUs of an H200's memory.
func h200s(n int) []nvml.GPU {
	gpus := make([]nvml.GPU, n)
	for i := range gpus {
		gpus[i] = nvml.GPU{Index: i, UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), MemoryMiB: 143771, Healthy: true}
	}
	return gpus
}

func writeNodeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if content != "" {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// largestSplit and largestCores are what the advice must name for gpus.
func largestSplit(gpus []nvml.GPU) string {
	n := int32(1)
	for kubelet.CountListSize(n*2, gpus) <= kubelet.MessageLimit {
		n *= 2
	}
	for kubelet.CountListSize(n+1, gpus) <= kubelet.MessageLimit {
		n++
	}
	return fmt.Sprint(n)
}

func TestPrecheck(t *testing.T) {
	eight := h200s(8)
	tests := []struct {
		name       string
		args       []string
		nodeConfig string
		gpus       []nvml.GPU
		wantErr    []string // empty: no error
	}{
		{name: "defaults fit", gpus: eight},
		{name: "bad flag, no GPU needed", args: []string{"--device-split-count=0"}, wantErr: []string{"flag --device-split-count=0"}},
		{name: "bad MIG strategy flag", args: []string{"--mig-strategy=all"}, wantErr: []string{"flag --mig-strategy=all"}},
		{
			name: "bad node config file", nodeConfig: `{"nodeconfig":[{"name":"gpu-node-1","devicesplitcount":-1}]}`,
			wantErr: []string{"config.json", "devicesplitcount"},
		},
		{
			name: "split flag too large for the GPUs", args: []string{"--device-split-count=10000000"}, gpus: eight,
			wantErr: []string{"node gpu-node-1: split count 10000000 (flag --device-split-count)", "count device list of 8 GPUs",
				"set it to at most " + largestSplit(eight)},
		},
		{
			name: "split from the node's entry, which wins over the flag",
			args: []string{"--device-split-count=4"}, gpus: eight,
			nodeConfig: `{"nodeconfig":[{"name":"gpu-node-1","devicesplitcount":10000000}]}`,
			wantErr:    []string{"split count 10000000 (devicesplitcount of node gpu-node-1 in config.json (ConfigMap volcano-vgpu-node-config))"},
		},
		{
			name: "filtered GPUs do not count", args: []string{"--device-split-count=" + largestSplit(h200s(1))}, gpus: h200s(2),
			nodeConfig: `{"nodeconfig":[{"name":"gpu-node-1","filterdevices":{"index":[1]}}]}`,
		},
		{
			name: "cores flag too large", args: []string{"--device-cores-scaling=100000"}, gpus: eight,
			wantErr: []string{"core scaling 100000 (flag --device-cores-scaling)", "cores device list of 8 GPUs", "set it to at most "},
		},
		{
			name: "both at once", args: []string{"--device-cores-scaling=1e300", "--device-split-count=2147483647"}, gpus: eight,
			wantErr: []string{"split count 2147483647", "core scaling 1e+300"},
		},
		{
			name: "memory factor with the node's memory scaling", args: []string{"--gpu-memory-factor=1"}, gpus: eight,
			nodeConfig: `{"nodeconfig":[{"name":"gpu-node-1","devicememoryscaling":1}]}`,
			wantErr: []string{"gpu memory factor from flag --gpu-memory-factor", "memory scaling 1 from devicememoryscaling of node gpu-node-1",
				"use a factor of at least"},
		},
		// The device ConfigMap may still lower the memory scaling: no verdict before it is read.
		{name: "memory factor with the ConfigMap's memory scaling", args: []string{"--gpu-memory-factor=1"}, gpus: eight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Precheck(testNode, parseFlags(t, tt.args...), writeNodeConfig(t, tt.nodeConfig), tt.gpus)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Precheck: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// The advised value really fits, and one more does not.
func TestCheckListSizesAdviceFits(t *testing.T) {
	eight := h200s(8)
	c := Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig()}
	c.Device.DeviceCoreScaling = 1e5
	err := c.CheckListSizes(eight)
	if err == nil {
		t.Fatal("core scaling 1e5 on 8 GPUs accepted")
	}
	_, advice, _ := strings.Cut(err.Error(), "set it to at most ")
	var fit float64
	if _, err := fmt.Sscan(advice, &fit); err != nil {
		t.Fatalf("advice %q: %v", advice, err)
	}
	c.Device.DeviceCoreScaling = fit
	if err := c.CheckListSizes(eight); err != nil {
		t.Errorf("advised scaling %g refused: %v", fit, err)
	}
	c.Device.DeviceCoreScaling = fit + 0.01
	if err := c.CheckListSizes(eight); err == nil {
		t.Errorf("scaling %g fits too: the advice is not the largest", fit+0.01)
	}
}

// After Load, the advice names the device ConfigMap the value came from, or every place
// that can set it when it is the shipped default.
func TestCheckListSizesNamesTheDeviceConfigMap(t *testing.T) {
	cms := fakeConfigMaps{data: map[string]map[string]string{"volcano-system": deviceYAML("100000000")}}
	c, err := Load(context.Background(), Sources{Node: testNode, GetConfigMap: cms.get, NodeConfigPath: writeNodeConfig(t, "")})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckListSizes(h200s(2))
	want := "split count 100000000 (nvidia.deviceSplitCount in device-config.yaml of ConfigMap volcano-system/volcano-vgpu-device-config)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}

	c = Config{Node: testNode, Device: vgpu.DefaultNvidiaConfig()}
	c.Device.DeviceSplitCount = 100000000
	want = "the shipped default (set flag --device-split-count or nvidia.deviceSplitCount in device-config.yaml of the device ConfigMap"
	if err := c.CheckListSizes(h200s(2)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// TestCheckListSizesPercentage: the memory percentage list (100 devices per GPU) is checked
// too; nothing shortens it, so the error says to leave GPUs out.
func TestCheckListSizesPercentage(t *testing.T) {
	c, err := Resolve("n1", vgpu.DefaultNvidiaConfig(), nil, vgpu.NodeConfigFile{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckListSizes(h200s(16)); err != nil {
		t.Fatalf("16 GPUs: %v", err)
	}
	c.Device.DeviceCoreScaling = 0.01 // so that only the percentage list is too long
	c.Device.DeviceSplitCount = 1
	err = c.CheckListSizes(h200s(2000))
	for _, want := range []string{"node n1: volcano.sh/vgpu-memory-percentage, 100 devices per GPU: the memory percentage device list of 2000 GPUs",
		"leave GPUs out with filterdevices in config.json"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("2000 GPUs: %v, want %q", err, want)
		}
	}
}
