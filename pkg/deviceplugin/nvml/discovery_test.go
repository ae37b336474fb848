package nvml

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// newTestFake builds and initialises a fake backend or stops the test.
func newTestFake(t *testing.T, spec string) *Fake {
	t.Helper()
	f, err := NewFake(spec, "node-a", Options{})
	if err != nil {
		t.Fatalf("NewFake(%q): %v", spec, err)
	}
	if err := f.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = f.Shutdown() })
	return f
}

var uuidForm = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestFakeUUID(t *testing.T) {
	a0 := FakeUUID("node-a", 0)
	if !uuidForm.MatchString(a0) || len(a0) != 40 {
		t.Errorf("FakeUUID = %q, want NVML's 40-character GPU-8-4-4-4-12 form", a0)
	}
	if again := FakeUUID("node-a", 0); again != a0 {
		t.Errorf("FakeUUID is not stable: %q then %q", a0, again)
	}
	for _, other := range []string{FakeUUID("node-a", 1), FakeUUID("node-b", 0)} {
		if other == a0 {
			t.Errorf("FakeUUID collides: %q", other)
		}
	}
}

func TestDevicesOverFake(t *testing.T) {
	f := newTestFake(t, "2xNVIDIA H200:143771,1xTesla T4:15360")
	gpus, err := f.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	want := []GPU{
		{Index: 0, UUID: FakeUUID("node-a", 0), Name: "NVIDIA H200", MemoryMiB: 143771, Minor: 0, BusID: "00000000:01:00.0"},
		{Index: 1, UUID: FakeUUID("node-a", 1), Name: "NVIDIA H200", MemoryMiB: 143771, Minor: 1, BusID: "00000000:02:00.0"},
		{Index: 2, UUID: FakeUUID("node-a", 2), Name: "Tesla T4", MemoryMiB: 15360, Minor: 2, BusID: "00000000:03:00.0"},
	}
	if len(gpus) != len(want) {
		t.Fatalf("Devices returned %d GPUs, want %d: %+v", len(gpus), len(want), gpus)
	}
	for i := range want {
		want[i].NUMANode, want[i].Healthy = -1, true
		if gpus[i] != want[i] {
			t.Errorf("GPU %d = %+v\nwant %+v", i, gpus[i], want[i])
		}
	}

	// A second fake for the same node (a plugin restart) finds the same GPUs.
	again := newTestFake(t, "2xNVIDIA H200:143771,1xTesla T4:15360")
	gpus2, _ := again.Devices()
	for i := range gpus {
		if gpus2[i].UUID != gpus[i].UUID {
			t.Errorf("after restart GPU %d has UUID %s, was %s", i, gpus2[i].UUID, gpus[i].UUID)
		}
	}
}

func TestDevicesMemoryFloorsToMiB(t *testing.T) {
	tests := []struct {
		totalBytes uint64
		wantMiB    uint64
	}{
		{150_754_820_096, 143771}, // H200 as measured: exactly 143771 MiB
		{150_754_820_095, 143770}, // one byte short floors down
		{8*1024*1024*1024 + 1048575, 8192},
		{1048575, 0},
	}
	for _, tt := range tests {
		f := newTestFake(t, "1xNVIDIA H200:143771")
		f.devices[0].memory.Total = tt.totalBytes
		gpus, err := f.Devices()
		if err != nil {
			t.Fatalf("Devices: %v", err)
		}
		if gpus[0].MemoryMiB != tt.wantMiB {
			t.Errorf("total %d B gives %d MiB, want %d", tt.totalBytes, gpus[0].MemoryMiB, tt.wantMiB)
		}
	}
}

func TestDevicesOrderByMinorThenIndex(t *testing.T) {
	f := newTestFake(t, "4xT4:15360")
	// NVML index order need not follow /dev/nvidiaN order.
	for i, minor := range []int{3, 1, 1, 0} {
		f.devices[i].minor = minor
	}
	gpus, err := f.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	var got []int
	for _, g := range gpus {
		got = append(got, g.Index)
	}
	if want := []int{3, 1, 2, 0}; !equalInts(got, want) {
		t.Errorf("index order = %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDevicesLeavesOutUnreadableGPU(t *testing.T) {
	f := newTestFake(t, "3xT4:15360")
	f.devices[1].GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
		return gonvml.Memory{}, gonvml.ERROR_GPU_IS_LOST
	}
	gpus, err := f.Devices()
	if err == nil {
		t.Fatal("Devices succeeded with an unreadable GPU, want an error")
	}
	for _, want := range []string{"GPU 1 left out", FakeUUID("node-a", 1), "memory info", "ERROR_GPU_IS_LOST"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if len(gpus) != 2 || gpus[0].Index != 0 || gpus[1].Index != 2 {
		t.Errorf("Devices = %+v, want GPUs 0 and 2", gpus)
	}
}

func TestDevicesBeforeInit(t *testing.T) {
	f, err := NewFake("1xT4:15360", "node-a", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Devices(); err == nil || !strings.Contains(err.Error(), "not initialised") {
		t.Errorf("Devices before Init: error %v, want one saying NVML is not initialised", err)
	}
}

// The real backend must fail cleanly, never crash, where there is no driver.
func TestRealBackendWithoutLibrary(t *testing.T) {
	lib := NewReal(Options{LibraryPath: filepath.Join(t.TempDir(), "libnvidia-ml.so.1")})
	err := lib.Init()
	if err == nil {
		t.Fatal("Init succeeded without an NVML library")
	}
	if !strings.Contains(err.Error(), "library not found") || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("Init error %q should name the library and say it was not found", err)
	}
	if _, err := lib.Devices(); err == nil {
		t.Error("Devices after a failed Init succeeded, want an error")
	}
	if err := lib.Shutdown(); err != nil {
		t.Errorf("Shutdown after a failed Init: %v", err)
	}
}

func TestNUMANode(t *testing.T) {
	sys := t.TempDir()
	write := func(id, content string) {
		dir := filepath.Join(sys, "bus", "pci", "devices", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0000:18:00.0", "1\n")
	write("0000:00:06.0", "-1\n")
	tests := []struct {
		root, busID string
		want        int
	}{
		{sys, "00000000:18:00.0", 1}, // NVML's 32-bit domain
		{sys, "0000:18:00.0", 1},
		{sys, "00000000:00:06.0", -1}, // single-node VM (the H200 test machine)
		{sys, "00000000:AB:00.0", -1}, // no such device
		{"", "00000000:18:00.0", -1},  // lookup switched off
	}
	for _, tt := range tests {
		if got := numaNode(tt.root, tt.busID); got != tt.want {
			t.Errorf("numaNode(%q) = %d, want %d", tt.busID, got, tt.want)
		}
	}
}
