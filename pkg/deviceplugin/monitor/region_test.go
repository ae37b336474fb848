package monitor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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

	twoGPUs := h200Region(fixtureV1)
	twoGPUs.devices = append(twoGPUs.devices, fixtureDevice{uuid: "GPU-00000000-0000-0000-0000-000000000001", limit: 1 << 30, smLimit: 100})
	twoGPUs.slots[3] = fixtureSlot{
		pid: 7, hostPID: 4007, status: 1,
		used:   map[int]Memory{0: {Data: 100, Total: 100}, 1: {Context: 5, Module: 6, Data: 7, Offset: 8, Total: 26}},
		smUtil: map[int]uint64{1: 12},
	}
	// A slot whose pid is gone but which still has memory charged is kept.
	twoGPUs.slots[9] = fixtureSlot{pid: 0, hostPID: 4009, used: map[int]Memory{1: {Data: 4, Total: 4}}}

	v0 := h200Region(fixtureV0)
	v0.smInitFlag = 1 // where v1 keeps major_version; must not confuse the size check

	notText := h200Region(fixtureV1)
	notText.devices[0].uuid = "\xff\xfe\xfd"

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
			data:        h200Region(fixtureV1).build(t),
			wantVersion: [2]uint32{1, 2},
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantLast:    time.Unix(1_764_633_600, 0),
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name: "v1.1",
			data: func() []byte {
				r := h200Region(fixtureV1)
				r.minor = 1
				return r.build(t)
			}(),
			wantVersion: [2]uint32{1, 1},
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantLast:    time.Unix(1_764_633_600, 0),
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name:        "v1 with two GPUs sums every slot",
			data:        twoGPUs.build(t),
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
			data:        v0.build(t),
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name: "v0 without the trailing byte",
			data: func() []byte {
				r := h200Region(fixtureV0)
				r.size = 1_197_896
				return r.build(t)
			}(),
			wantDevices: []Device{measured},
			wantProcs:   []Process{holder},
			wantPrio:    [4]int32{2, 1, 2, 1},
		},
		{
			name: "UUID not written yet",
			data: notText.build(t),
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
	build := func(change func(*fixtureRegion)) []byte {
		r := h200Region(fixtureV1)
		change(&r)
		return r.build(t)
	}
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"empty", nil, "0 bytes, too short"},
		{"short", []byte{0x4e, 0xf7, 0x2f, 0x01, 1}, "5 bytes, too short"},
		{"wrong magic", build(func(r *fixtureRegion) { r.magic = 12345 }), "not initialised (flag 12345"},
		{"unknown major version", build(func(r *fixtureRegion) { r.major = 2 }), "unsupported region version 2.2"},
		{"v1 truncated", build(func(r *fixtureRegion) { r.size = 1_500_000 }), "1500000 bytes, want at least 2008952: truncated"},
		{"too many devices", build(func(r *fixtureRegion) {
			for len(r.devices) < 17 {
				r.devices = append(r.devices, fixtureDevice{})
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
	writeFile(t, good, h200Region(fixtureV1).build(t))
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
