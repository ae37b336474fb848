package vgpu

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestContextReserveGolden: testdata/context-reserve.yaml parses, and the reserve each GPU
// type gets, in MiB and in units of three memory factors, is the golden table: the first entry
// naming the type wins, types no entry names get none, and units round up.
func TestContextReserveGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/context-reserve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseDeviceConfig(data)
	if err != nil {
		t.Fatalf("ParseDeviceConfig: %v", err)
	}
	golden, err := os.ReadFile("testdata/context-reserve.golden")
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, line := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		want = append(want, line)
		fields := strings.Fields(line)
		typ := strings.Join(fields[:len(fields)-4], " ")
		mib := c.ContextReserves.MiBFor(typ)
		got = append(got, fmt.Sprintf("%s %d %d %d %d", typ, mib, ReserveUnits(mib, 1), ReserveUnits(mib, 5), ReserveUnits(mib, 40)))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("context reserves of testdata/context-reserve.yaml:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestNoContextReserveByDefault: the built-in defaults (and so config/device-config.yaml)
// reserve nothing, which is upstream's behaviour; an empty list is the same as none.
func TestNoContextReserveByDefault(t *testing.T) {
	if got := DefaultNvidiaConfig().ContextReserves; got != nil {
		t.Errorf("default contextReserves %+v, want none", got)
	}
	c, err := ParseDeviceConfig([]byte("nvidia:\n  contextReserves: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, func() NvidiaConfig { d := DefaultNvidiaConfig(); d.KnownMIGGeometries = nil; return d }()) {
		t.Errorf("contextReserves: [] parses to %+v", c)
	}
	if mib := c.ContextReserves.MiBFor(DeviceTypeForModel("NVIDIA H200")); mib != 0 {
		t.Errorf("H200 reserve %d MiB without an entry", mib)
	}
}

func TestReserveUnits(t *testing.T) {
	for _, tc := range []struct{ mib, factor, want int32 }{
		{0, 1, 0}, {-5, 1, 0}, {518, 1, 518}, {518, 0, 518}, {518, 2, 259}, {519, 2, 260},
		{518, 518, 1}, {518, 1024, 1}, {16384, 1, 16384}, {1, math.MaxInt32, 1},
	} {
		if got := ReserveUnits(tc.mib, tc.factor); got != tc.want {
			t.Errorf("ReserveUnits(%d, %d) = %d, want %d", tc.mib, tc.factor, got, tc.want)
		}
	}
}

// TestBookedOn: a request in memory units books the reserve on top; a percentage or a whole
// GPU books its share only.
func TestBookedOn(t *testing.T) {
	for _, tc := range []struct {
		name                string
		r                   ContainerRequest
		gpuMemory, reserve  int32
		wantReserve, booked int32
	}{
		{"memory", ContainerRequest{Count: 1, Memory: 2000}, 143771, 518, 518, 2518},
		{"memory, no reserve", ContainerRequest{Count: 1, Memory: 2000}, 143771, 0, 0, 2000},
		{"percentage", ContainerRequest{Count: 1, MemoryPercentage: 50}, 81920, 518, 0, 40960},
		{"whole GPU", ContainerRequest{Count: 1, MemoryPercentage: 100}, 81920, 518, 0, 81920},
		{"memory wins over percentage", ContainerRequest{Count: 1, Memory: 1000, MemoryPercentage: 50}, 81920, 13, 13, 1013},
		{"saturates", ContainerRequest{Count: 1, Memory: math.MaxInt32}, 81920, 518, 518, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.ReserveOn(tc.reserve); got != tc.wantReserve {
				t.Errorf("ReserveOn(%d) = %d, want %d", tc.reserve, got, tc.wantReserve)
			}
			if got := tc.r.BookedOn(tc.gpuMemory, tc.reserve); got != tc.booked {
				t.Errorf("BookedOn(%d, %d) = %d, want %d", tc.gpuMemory, tc.reserve, got, tc.booked)
			}
		})
	}
}

func TestParseMemoryFactor(t *testing.T) {
	for _, factor := range []int32{1, 5, 40, math.MaxInt32} {
		got, err := ParseMemoryFactor(FormatMemoryFactor(factor))
		if err != nil || got != factor {
			t.Errorf("ParseMemoryFactor(FormatMemoryFactor(%d)) = %d, %v", factor, got, err)
		}
	}
	for _, bad := range []string{"", "0", "-1", "+5", "5 ", "1.5", "2147483648", "five"} {
		if got, err := ParseMemoryFactor(bad); err == nil || !strings.Contains(err.Error(), NodeMemoryFactorAnnotation) {
			t.Errorf("ParseMemoryFactor(%q) = %d, %v; want an error naming %s", bad, got, err, NodeMemoryFactorAnnotation)
		}
	}
}
