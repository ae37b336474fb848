package nvml

import (
	"reflect"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestUsage(t *testing.T) {
	f := newTestFake(t, "2xNVIDIA H200:143771")
	gpu0, gpu1 := FakeUUID("node-a", 0), FakeUUID("node-a", 1)
	if err := f.SetUsage(gpu1, 3000<<20, 42); err != nil {
		t.Fatal(err)
	}
	got, err := f.Usage()
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{
		{Index: 0, UUID: gpu0},
		{Index: 1, UUID: gpu1, MemoryUsedBytes: 3000 << 20, UtilizationPercent: 42},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Usage = %+v, want %+v", got, want)
	}
	if err := f.SetUsage(gpu0, 143772<<20, 0); err == nil {
		t.Fatal("SetUsage above the GPU's memory: no error")
	}
}

func TestUsageLeavesOutUnreadableGPUs(t *testing.T) {
	f := newTestFake(t, "2xNVIDIA H200:143771")
	f.devices[0].GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		return gonvml.Utilization{}, gonvml.ERROR_GPU_IS_LOST
	}
	got, err := f.Usage()
	if err == nil || !strings.Contains(err.Error(), "usage of GPU 0") || !strings.Contains(err.Error(), FakeUUID("node-a", 0)) {
		t.Fatalf("error %v does not name GPU 0 and its UUID", err)
	}
	if len(got) != 1 || got[0].UUID != FakeUUID("node-a", 1) {
		t.Fatalf("Usage = %+v, want GPU 1 only", got)
	}
}
