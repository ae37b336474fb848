package register

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu/upstreamtest"
)

// TestRegisterAnnotationGolden: the register annotation, byte for byte (testdata/*.golden),
// and as upstream schedulers read it: six fields per GPU (Volcano v1.12 and later reject a
// node with fewer), the GPUs in minor order whatever order NVML gives, count = split, memory =
// MiB / factor, type "NVIDIA-" + NVML name, health, mode.
func TestRegisterAnnotationGolden(t *testing.T) {
	mig := vgpu.DefaultNvidiaConfig()
	mig.GPUMemoryFactor = 2
	migConfig, err := settings.Resolve(nodeName, mig, nil, vgpu.NodeConfigFile{NodeConfig: []vgpu.NodeConfig{{
		Name: nodeName, OperatingMode: vgpu.ModeMIG, DeviceSplitCount: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	a100 := h200(0, 0, uuidB)
	a100.Name, a100.MemoryMiB = "NVIDIA A100-SXM4-80GB", 81920
	unhealthy := h200(2, 1, uuidB)
	unhealthy.Healthy = false
	tests := []struct {
		golden string
		cfg    settings.Config
		gpus   []nvml.GPU
	}{
		{golden: "register-h200x3.golden", cfg: defaultConfig(),
			gpus: []nvml.GPU{h200(0, 2, uuidC), h200(1, 0, uuidA), unhealthy}},
		{golden: "register-a100-mig.golden", cfg: migConfig, gpus: []nvml.GPU{a100}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
			if err != nil {
				t.Fatal(err)
			}
			value, err := NodeDevices(tt.cfg, tt.gpus)
			if err != nil {
				t.Fatal(err)
			}
			if value != string(want) {
				t.Errorf("annotation\n got %q\nwant %q", value, want)
			}
			read, err := upstreamtest.DecodeNodeDevices(value)
			if err != nil {
				t.Fatalf("upstream rejects the node: %v", err)
			}
			sorted := append([]nvml.GPU(nil), tt.gpus...)
			nvml.SortGPUs(sorted)
			if len(read) != len(sorted) {
				t.Fatalf("upstream reads %d GPUs, want %d", len(read), len(sorted))
			}
			for i, g := range read {
				gpu := sorted[i]
				wantMemory := int32(gpu.MemoryMiB / uint64(tt.cfg.Device.GPUMemoryFactor))
				if g.Index != i || g.UUID != gpu.UUID || g.Count != tt.cfg.Device.DeviceSplitCount || g.Devmem != wantMemory ||
					g.Type != "NVIDIA-"+gpu.Name || g.Health != gpu.Healthy || g.Mode != tt.cfg.Mode {
					t.Errorf("upstream reads GPU %d as %+v from %+v", i, g, gpu)
				}
			}
			for _, record := range strings.Split(strings.TrimSuffix(value, ":"), ":") {
				if n := strings.Count(record, ",") + 1; n != 6 {
					t.Errorf("record %q has %d fields, want 6", record, n)
				}
			}
		})
	}
}

// TestUpstreamSchedulersReadOurNode runs the device plugin for five minutes against each
// upstream scheduler release (modelled in upstreamtest: it reads the node every second, as it
// does every session, and writes the handshake back as it does), with --legacy-handshake on
// and off, on a node an older scheduler left marked "Deleted_". The node's GPUs must be
// usable every second exactly when the release can use them, and the plugin must send at
// most one PATCH per 30 s.
func TestUpstreamSchedulersReadOurNode(t *testing.T) {
	const seconds = 300
	for _, release := range upstreamtest.SchedulerReleases {
		for _, legacy := range []bool{false, true} {
			wantUsable := legacy || !release.Handshake
			name := release.Name + " legacy handshake off"
			if legacy {
				name = release.Name + " legacy handshake on"
			}
			t.Run(name, func(t *testing.T) {
				usable, patches := runWithUpstreamScheduler(t, release, legacy, time.UTC, seconds)
				if wantUsable && usable != seconds {
					t.Errorf("GPUs usable %d of %d s, want all", usable, seconds)
				}
				if !wantUsable && usable != 0 {
					t.Errorf("GPUs usable %d of %d s; the release needs the handshake, which is off", usable, seconds)
				}
				if limit := uint64(1 + seconds/int(HandshakeSpacing.Seconds())); patches > limit {
					t.Errorf("%d PATCHes in %d s, want at most %d", patches, seconds, limit)
				}
				if !legacy && patches != 1 {
					t.Errorf("%d PATCHes, want 1 (GPUs published, leftover handshake removed)", patches)
				}
			})
		}
	}
	// A handshake-era scheduler in a zone west of UTC writes its local time and reads it back
	// as UTC, so it finds each request hours old and deletes the node at once. Nothing makes
	// that work; the plugin must not turn it into a PATCH storm.
	t.Run("v1.13 west of UTC", func(t *testing.T) {
		_, patches := runWithUpstreamScheduler(t, upstreamtest.SchedulerV1_13, true, time.FixedZone("EST", -5*3600), seconds)
		if limit := uint64(1 + seconds/int(HandshakeSpacing.Seconds())); patches > limit {
			t.Errorf("%d PATCHes in %d s, want at most %d", patches, seconds, limit)
		}
	})
}

// runWithUpstreamScheduler alternates a pass of the Registrar and a read of the node by the
// release, once per simulated second, and returns in how many of those seconds the release
// could use the node's GPUs, and how many PATCHes the Registrar sent.
func runWithUpstreamScheduler(t *testing.T, release upstreamtest.SchedulerRelease, legacy bool, zone *time.Location, seconds int) (usable int, patches uint64) {
	t.Helper()
	node := emptyNode()
	// Left by a handshake-era scheduler an hour ago.
	node.Annotations = map[string]string{vgpu.NodeHandshakeAnnotation: "Deleted_" + start.Add(-time.Hour).Format(upstreamtest.HandshakeLayout)}
	// What kubelet reports from the plugin's three device lists for twoGPUs.
	node.Status.Allocatable = corev1.ResourceList{
		upstreamtest.CountResource:  resource.MustParse("20"),
		upstreamtest.MemoryResource: resource.MustParse("287542"),
		upstreamtest.CoresResource:  resource.MustParse("200"),
	}
	h := newHarnessWith(t, legacy, defaultConfig(), twoGPUs(), node)
	h.startCache(t)
	for i := 0; i < seconds; i++ {
		h.pass(t)
		h.waitForCache(t)
		current, err := h.client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		view := release.ReadNode(current, h.clock.Now(), zone)
		if view.GPUs != nil {
			if len(view.GPUs) != 2 {
				t.Fatalf("at %d s the release reads %d GPUs, want 2", i, len(view.GPUs))
			}
			usable++
		}
		if view.HandshakeWrite != "" {
			h.setHandshake(t, &view.HandshakeWrite)
		}
		h.clock.Step(time.Second)
	}
	return usable, h.r.Patches()
}
