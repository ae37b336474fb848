package monitor

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor/monitortest"
)

func TestLayoutsAreConsistent(t *testing.T) {
	for _, l := range []layout{layoutV0, layoutV1} {
		t.Run(l.name, func(t *testing.T) {
			checks := []struct {
				what      string
				got, want int
			}{
				{"limit after uuids", l.limit, l.uuids + maxDevices*uuidSize},
				{"sm_limit after limit", l.smLimit, l.limit + 8*maxDevices},
				{"procs after sm_limit", l.procs, l.smLimit + 8*maxDevices},
				{"proc_num after procs", l.procNum, l.procs + maxProcs*l.slotSize},
				{"monitorused after used", l.slotMonitorUsed, l.slotUsed + maxDevices*l.memEntrySize},
				{"device_util after monitorused", l.slotUtil, l.slotMonitorUsed + 8*maxDevices},
				{"status after device_util", l.slotStatus, l.slotUtil + maxDevices*l.utilEntrySize},
				{"priority", l.priority, l.procNum + 12},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: offset %d, want %d", c.what, c.got, c.want)
				}
			}
			if l.lastKernelTime >= 0 && l.lastKernelTime+8 > l.structSize {
				t.Errorf("last_kernel_time at %d runs past the struct (%d bytes)", l.lastKernelTime, l.structSize)
			}
		})
	}
}

func TestParseRegion(t *testing.T) {
	const uuid = "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1"
	measured := Device{
		Index: 0, UUID: uuid, LimitBytes: 2_097_152_000, SMLimitPercent: 30,
		Used:             Memory{Context: 543_162_368, Data: 1_073_741_824, Total: 1_616_904_192},
		MonitorUsedBytes: 1_616_904_192, SMUtil: 37,
	}
	holder := Process{PID: 2142, HostPID: 2142, Status: 1, Devices: []ProcessDevice{{
		Used:             Memory{Context: 543_162_368, Data: 1_073_741_824, Total: 1_616_904_192},
		MonitorUsedBytes: 1_616_904_192, SMUtil: 37,
	}}}

	twoGPUs := monitortest.H200(monitortest.V1)
	twoGPUs.Devices = append(twoGPUs.Devices, monitortest.Device{UUID: "GPU-00000000-0000-0000-0000-000000000001", Limit: 1 << 30, SMLimit: 100})
	twoGPUs.Slots[3] = monitortest.Slot{
		PID: 7, HostPID: 4007, Status: 1,
		Used:   map[int]monitortest.Memory{0: {Data: 100, Total: 100}, 1: {Context: 5, Module: 6, Data: 7, Offset: 8, Total: 26}},
		SMUtil: map[int]uint64{1: 12},
	}
	// A slot whose pid is gone but which still has memory charged is kept.
	twoGPUs.Slots[9] = monitortest.Slot{PID: 0, HostPID: 4009, Used: map[int]monitortest.Memory{1: {Data: 4, Total: 4}}}

	v0 := monitortest.H200(monitortest.V0)
	v0.SMInitFlag = 1 // where v1 keeps major_version; must not confuse the size check

	notText := monitortest.H200(monitortest.V1)
	notText.Devices[0].UUID = "\xff\xfe\xfd"

	tests := []struct {
		name        string
		data        []byte
		wantVersion [2]uint32
		wantDevices []Device
		wantProcs   []Process
		wantLast    time.Time
		wantPrio    [4]int32 // proc_num, utilization_switch, recent_kernel, priority
	}{
		{
			name:        "v1.2 as measured on the H200",
			data:        monitortest.H200(monitortest.V1).Bytes(),
			wantVersion: [2]uint32{1, 2},
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantLast:    time.Unix(1_764_633_600, 0),
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name: "v1.1",
			data: func() []byte {
				r := monitortest.H200(monitortest.V1)
				r.Minor = 1
				return r.Bytes()
			}(),
			wantVersion: [2]uint32{1, 1},
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantLast:    time.Unix(1_764_633_600, 0),
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name:        "v1 with two GPUs sums every slot",
			data:        twoGPUs.Bytes(),
			wantVersion: [2]uint32{1, 2},
			wantDevices: []Device{
				{
					Index: 0, UUID: uuid, LimitBytes: 2_097_152_000, SMLimitPercent: 30,
					Used:             Memory{Context: 543_162_368, Data: 1_073_741_824 + 100, Total: 1_616_904_192 + 100},
					MonitorUsedBytes: 1_616_904_192, SMUtil: 37,
				},
				{
					Index: 1, UUID: "GPU-00000000-0000-0000-0000-000000000001", LimitBytes: 1 << 30, SMLimitPercent: 100,
					Used:   Memory{Context: 5, Module: 6, Data: 7 + 4, Offset: 8, Total: 26 + 4},
					SMUtil: 12,
				},
			},
			wantProcs: []Process{
				{PID: 2142, HostPID: 2142, Status: 1, Devices: []ProcessDevice{holder.Devices[0], {}}},
				{PID: 7, HostPID: 4007, Status: 1, Devices: []ProcessDevice{
					{Used: Memory{Data: 100, Total: 100}},
					{Used: Memory{Context: 5, Module: 6, Data: 7, Offset: 8, Total: 26}, SMUtil: 12},
				}},
				{PID: 0, HostPID: 4009, Devices: []ProcessDevice{{}, {Used: Memory{Data: 4, Total: 4}}}},
			},
			wantLast: time.Unix(1_764_633_600, 0),
			wantPrio: [4]int32{2, 1, 2, 1},
		},
		{
			name:        "v0 has no version and no last kernel time",
			data:        v0.Bytes(),
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name: "v0 without the trailing byte",
			data: func() []byte {
				r := monitortest.H200(monitortest.V0)
				r.Size = 1_197_896
				return r.Bytes()
			}(),
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name: "UUID not written yet",
			data: notText.Bytes(),
			wantDevices: []Device{func() Device {
				d := measured
				d.UUID = ""
				return d
			}()},
			wantVersion: [2]uint32{1, 2},
			wantProcs:   []Process{holder},
			wantLast:    time.Unix(1_764_633_600, 0),
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRegion("test.cache", tt.data)
			if err != nil {
				t.Fatalf("ParseRegion: %v", err)
			}
			if got := [2]uint32{r.Major, r.Minor}; got != tt.wantVersion {
				t.Errorf("version %v, want %v", got, tt.wantVersion)
			}
			if !reflect.DeepEqual(r.Devices, tt.wantDevices) {
				t.Errorf("Devices\n got %+v\nwant %+v", r.Devices, tt.wantDevices)
			}
			if !reflect.DeepEqual(r.Processes, tt.wantProcs) {
				t.Errorf("Processes\n got %+v\nwant %+v", r.Processes, tt.wantProcs)
			}
			if !r.LastKernel.Equal(tt.wantLast) {
				t.Errorf("LastKernel %v, want %v", r.LastKernel, tt.wantLast)
			}
			if got := [4]int32{r.ProcNum, r.UtilizationSwitch, r.RecentKernel, r.Priority}; got != tt.wantPrio {
				t.Errorf("proc_num, utilization_switch, recent_kernel, priority = %v, want %v", got, tt.wantPrio)
			}
		})
	}
}

func TestParseRegionErrors(t *testing.T) {
	build := func(change func(*monitortest.Region)) []byte {
		r := monitortest.H200(monitortest.V1)
		change(&r)
		return r.Bytes()
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "0 bytes, too short"},
		{"short", []byte{0x4e, 0xf7, 0x2f, 0x01, 1}, "5 bytes, too short"},
		{"wrong magic", build(func(r *monitortest.Region) { r.Magic = 12345 }), "not initialised (flag 12345"},
		{"unknown major version", build(func(r *monitortest.Region) { r.Major = 2 }), "unsupported region version 2.2"},
		{"v1 truncated", build(func(r *monitortest.Region) { r.Size = 1_500_000 }), "1500000 bytes, want at least 2008952: truncated"},
		{"too many devices", build(func(r *monitortest.Region) {
			for len(r.Devices) < 17 {
				r.Devices = append(r.Devices, monitortest.Device{})
			}
		}), "device_num 17 exceeds 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRegion("/x/pod_ctr/a.cache", tt.data)
			if err == nil {
				t.Fatal("ParseRegion succeeded, want an error")
			}
			if !strings.Contains(err.Error(), "/x/pod_ctr/a.cache") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q should name the file and contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestReadRegion(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.cache")
	writeFile(t, good, monitortest.H200(monitortest.V1).Bytes())
	r, err := ReadRegion(good)
	if err != nil {
		t.Fatalf("ReadRegion: %v", err)
	}
	if r.Path != good || len(r.Devices) != 1 || r.Devices[0].Used.Total != 1_616_904_192 {
		t.Errorf("ReadRegion = %+v", r)
	}
	// Reading must not change the file (HAMi-core owns it).
	before, _ := os.ReadFile(good)
	if _, err := ReadRegion(good); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(good)
	if string(before) != string(after) {
		t.Error("ReadRegion changed the file")
	}

	empty := filepath.Join(dir, "empty.cache")
	writeFile(t, empty, nil)
	if _, err := ReadRegion(empty); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("empty file: %v, want a too-short error", err)
	}
	if _, err := ReadRegion(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v, want a not-a-regular-file error", err)
	}
	if _, err := ReadRegion(filepath.Join(dir, "missing.cache")); err == nil || !strings.Contains(err.Error(), "missing.cache") {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// regionPatch is one write FuzzParseRegion makes into a real region: patchSize bytes, the
// first saying from which end offset counts, the next two the offset, the last eight the
// value. Offsets from the start reach the header, the device arrays and the first slots;
// from the end, the last slots and the priority fields.
const patchSize = 11

// FuzzParseRegion decodes fuzzed regions: base 0 is the fuzzed bytes themselves (too short
// for any layout, so it tests the checks before one is chosen); base 1 and 2 are the H200
// region in the v1 and v0 layouts, resized by resize bytes (cut or zero-extended) and
// patched with the fuzzed bytes read as regionPatches. Decoding never panics, leaves the
// bytes as they were, and either names the file in its error or returns a region that the
// layout can hold: at most maxDevices devices and maxProcs processes, every process with one
// entry per device and in use, device totals that are the sums over the processes listed,
// UUIDs that are text.
func FuzzParseRegion(f *testing.F) {
	v1 := monitortest.H200(monitortest.V1).Bytes()
	v0 := monitortest.H200(monitortest.V0).Bytes()
	patch := func(fromEnd bool, off uint16, value uint64) []byte {
		p := make([]byte, patchSize)
		if fromEnd {
			p[0] = 1
		}
		binary.LittleEndian.PutUint16(p[1:], off)
		binary.NativeEndian.PutUint64(p[3:], value)
		return p
	}
	f.Add(uint8(0), int32(0), []byte{})
	f.Add(uint8(0), int32(0), v1[:64])
	f.Add(uint8(1), int32(0), []byte{})
	f.Add(uint8(2), int32(0), []byte{})
	f.Add(uint8(2), int32(-1), []byte{})
	f.Add(uint8(1), int32(-1), []byte{})
	f.Add(uint8(1), int32(-2), []byte{})
	f.Add(uint8(1), int32(4096), []byte{})
	f.Add(uint8(1), int32(0), patch(false, uint16(monitortest.V1.DeviceNum), maxDevices))
	f.Add(uint8(1), int32(0), patch(false, uint16(monitortest.V1.DeviceNum), maxDevices+1))
	f.Add(uint8(2), int32(0), patch(false, uint16(monitortest.V0.DeviceNum), maxDevices))
	f.Add(uint8(1), int32(0), patch(false, 4, 2))
	f.Add(uint8(1), int32(0), append(patch(false, uint16(monitortest.V1.UUIDs), 0xfffefd), patch(true, 2017, 7)...))
	f.Add(uint8(1), int32(0), append(patch(false, uint16(monitortest.V1.Procs+monitortest.V1.SlotSize*5), 99),
		patch(false, uint16(monitortest.V1.Procs+monitortest.V1.SlotSize*5+monitortest.V1.Used+monitortest.V1.MemEntry*3+32), 1<<63)...))
	f.Fuzz(func(t *testing.T, base uint8, resize int32, fuzzed []byte) {
		var data []byte
		switch base % 3 {
		case 0:
			data = fuzzed
		case 1, 2:
			original := v1
			if base%3 == 2 {
				original = v0
			}
			size := min(max(len(original)+int(resize), 0), len(original)+4096)
			data = make([]byte, size)
			copy(data, original)
			for p := fuzzed; len(p) >= patchSize; p = p[patchSize:] {
				at := int(binary.LittleEndian.Uint16(p[1:]))
				if p[0]&1 == 1 {
					at = len(data) - 8 - at
				}
				if at >= 0 && at < len(data) {
					copy(data[at:], p[3:patchSize])
				}
			}
		}
		before := bytes.Clone(data)
		const path = "/var/lib/vgpu/pod_ctr/fuzz.cache"
		region, err := ParseRegion(path, data)
		if !bytes.Equal(before, data) {
			t.Fatal("ParseRegion changed the bytes it read")
		}
		if err != nil {
			if region != nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("ParseRegion = %+v, %q: want no region and an error naming the file", region, err)
			}
			return
		}
		checkRegionHoldable(t, len(data), region)
	})
}

// checkRegionHoldable asserts what a decoded region of size bytes can hold.
func checkRegionHoldable(t *testing.T, size int, region *Region) {
	t.Helper()
	switch {
	case region.Major == 0 && region.Minor == 0:
		if size != layoutV0.structSize && size != layoutV0.structSize+1 {
			t.Fatalf("v0 region decoded from %d bytes", size)
		}
	case region.Major != 1 || size < layoutV1.structSize:
		t.Fatalf("version %d.%d decoded from %d bytes", region.Major, region.Minor, size)
	}
	if len(region.Devices) > maxDevices || len(region.Processes) > maxProcs {
		t.Fatalf("%d devices and %d processes, the format holds %d and %d",
			len(region.Devices), len(region.Processes), maxDevices, maxProcs)
	}
	total := make([]uint64, len(region.Devices))
	monitored := make([]uint64, len(region.Devices))
	seen := map[*ProcessDevice]bool{}
	for _, p := range region.Processes {
		if len(p.Devices) != len(region.Devices) {
			t.Fatalf("process %+v has %d device entries, the region %d devices", p, len(p.Devices), len(region.Devices))
		}
		inUse := p.PID != 0
		for i, u := range p.Devices {
			total[i] += u.Used.Total
			monitored[i] += u.MonitorUsedBytes
			inUse = inUse || u.Used.Total != 0 || u.MonitorUsedBytes != 0
		}
		if !inUse {
			t.Fatalf("process %+v listed, but it has no pid and nothing charged", p)
		}
		if len(p.Devices) > 0 {
			if seen[&p.Devices[0]] {
				t.Fatal("two processes share their device entries")
			}
			seen[&p.Devices[0]] = true
		}
	}
	for i, d := range region.Devices {
		if d.Index != i {
			t.Fatalf("device %d has index %d", i, d.Index)
		}
		if !utf8.ValidString(d.UUID) || strings.IndexByte(d.UUID, 0) >= 0 || len(d.UUID) > uuidSize {
			t.Fatalf("device %d UUID %q is not text of at most %d bytes", i, d.UUID, uuidSize)
		}
		if d.Used.Total != total[i] || d.MonitorUsedBytes != monitored[i] {
			t.Fatalf("device %d charges %d (monitor %d), its processes %d (monitor %d)",
				i, d.Used.Total, d.MonitorUsedBytes, total[i], monitored[i])
		}
	}
}
