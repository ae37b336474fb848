// Package monitortest builds HAMi-core shared-region files byte by byte: the
// monitor's tests decode them, and end-to-end tests write one into a
// container's cache directory where no CUDA process runs to write its own.
package monitortest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// Layout gives the byte offsets of one version of the region, written out as
// literal numbers, worked out by hand from HAMi-core's header
// (multiprocess_memory_limit.h) and checked on an H200, not taken from the
// monitor's layout.go, so that the regions built here check its decoder.
type Layout struct {
	FileSize                                                        int
	Versioned                                                       bool
	SMInitFlag, DeviceNum, UUIDs, Limit, SMLimit, Procs             int
	SlotSize, Used, MemEntry, MonitorUsed, Util, UtilEntry          int
	Status, ProcNum, UtilSwitch, RecentKernel, Priority, LastKernel int
}

var (
	// V1 is major version 1 (minor 1 and 2), the layout of the HAMi-core
	// commit the Dockerfile pins.
	V1 = Layout{
		FileSize: 2_008_953, Versioned: true,
		SMInitFlag: 12, DeviceNum: 56, UUIDs: 64, Limit: 1600, SMLimit: 1728, Procs: 1856,
		SlotSize: 1960, Used: 8, MemEntry: 64, MonitorUsed: 1032, Util: 1160, UtilEntry: 48,
		Status: 1928, ProcNum: 2_008_896, UtilSwitch: 2_008_900, RecentKernel: 2_008_904, Priority: 2_008_908,
		LastKernel: 2_008_912,
	}
	// V0 is the layout before HAMi-core versioned the region; it has no
	// last-kernel time (LastKernel -1).
	V0 = Layout{
		FileSize:   1_197_897,
		SMInitFlag: 4, DeviceNum: 48, UUIDs: 56, Limit: 1592, SMLimit: 1720, Procs: 1848,
		SlotSize: 1168, Used: 8, MemEntry: 40, MonitorUsed: 648, Util: 776, UtilEntry: 24,
		Status: 1160, ProcNum: 1_197_880, UtilSwitch: 1_197_884, RecentKernel: 1_197_888, Priority: 1_197_892,
		LastKernel: -1,
	}
)

// Region describes a region file to build.
type Region struct {
	Layout       Layout
	Magic        int32 // 0 means the real magic
	Major, Minor uint32
	SMInitFlag   int32
	Devices      []Device
	// Slots are the process slots in use, by slot number.
	Slots        map[int]Slot
	ProcNum      int32
	UtilSwitch   int32
	RecentKernel int32
	Priority     int32
	LastKernel   int64
	// Size overrides the file size when non-zero.
	Size int
}

// Device is one of the container's GPUs: its UUID, memory limit in bytes and
// compute limit in percent.
type Device struct {
	UUID           string
	Limit, SMLimit uint64
}

// Slot is one process's slot; the maps are by device index.
type Slot struct {
	PID, HostPID, Status int32
	Used                 map[int]Memory
	MonitorUsed          map[int]uint64
	SMUtil               map[int]uint64
}

// Memory is HAMi-core's breakdown of one process's device memory, in bytes.
type Memory struct {
	Context, Module, Data, Offset, Total uint64
}

// regionMagic is the region's initialized_flag once HAMi-core has set it up.
const regionMagic = 19920718

// Bytes is the region file's content.
func (r Region) Bytes() []byte {
	size := r.Layout.FileSize
	if r.Size != 0 {
		size = r.Size
	}
	b := make([]byte, size)
	put32 := func(off int, v uint32) {
		if off+4 <= len(b) {
			binary.NativeEndian.PutUint32(b[off:], v)
		}
	}
	put64 := func(off int, v uint64) {
		if off+8 <= len(b) {
			binary.NativeEndian.PutUint64(b[off:], v)
		}
	}
	off := r.Layout
	magic := r.Magic
	if magic == 0 {
		magic = regionMagic
	}
	put32(0, uint32(magic))
	if off.Versioned {
		put32(4, r.Major)
		put32(8, r.Minor)
	}
	put32(off.SMInitFlag, uint32(r.SMInitFlag))
	put64(off.DeviceNum, uint64(len(r.Devices)))
	for i, d := range r.Devices {
		if off.UUIDs+i*96+len(d.UUID) <= len(b) {
			copy(b[off.UUIDs+i*96:], d.UUID)
		}
		put64(off.Limit+8*i, d.Limit)
		put64(off.SMLimit+8*i, d.SMLimit)
	}
	for n, s := range r.Slots {
		base := off.Procs + n*off.SlotSize
		put32(base, uint32(s.PID))
		put32(base+4, uint32(s.HostPID))
		put32(base+off.Status, uint32(s.Status))
		for dev, m := range s.Used {
			e := base + off.Used + dev*off.MemEntry
			put64(e, m.Context)
			put64(e+8, m.Module)
			put64(e+16, m.Data)
			put64(e+24, m.Offset)
			put64(e+32, m.Total)
		}
		for dev, v := range s.MonitorUsed {
			put64(base+off.MonitorUsed+8*dev, v)
		}
		for dev, v := range s.SMUtil {
			put64(base+off.Util+dev*off.UtilEntry+16, v)
		}
	}
	put32(off.ProcNum, uint32(r.ProcNum))
	put32(off.UtilSwitch, uint32(r.UtilSwitch))
	put32(off.RecentKernel, uint32(r.RecentKernel))
	put32(off.Priority, uint32(r.Priority))
	if off.LastKernel >= 0 {
		put64(off.LastKernel, uint64(r.LastKernel))
	}
	return b
}

// H200 is the region as read on an H200, at the HAMi-core commit the
// Dockerfile pins, after a holder process kept 1024 MiB under a 2000m limit,
// plus a stale slot of an exited process; in the layout off.
func H200(off Layout) Region {
	limits := Device{UUID: "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1", Limit: 2_097_152_000, SMLimit: 30}
	return Region{
		Layout: off, Major: 1, Minor: 2,
		Devices: []Device{limits},
		Slots: map[int]Slot{
			0: {
				PID: 2142, HostPID: 2142, Status: 1,
				Used:        map[int]Memory{0: {Context: 543_162_368, Data: 1_073_741_824, Total: 1_616_904_192}},
				MonitorUsed: map[int]uint64{0: 1_616_904_192},
				SMUtil:      map[int]uint64{0: 37},
			},
			// An exited process: pid cleared, stale host pid, nothing charged.
			1: {PID: 0, HostPID: 2101},
		},
		ProcNum: 2, UtilSwitch: 1, RecentKernel: 2, Priority: 1,
		LastKernel: 1_764_633_600,
	}
}

// Holding is the v1.2 region of a container with one GPU, uuid, under a
// memory limit of limitMiB and no compute limit (100, as HAMi-core stores
// it), in which one process (pid 1) holds usedMiB, all of it data, and has
// launched no kernel yet. usedMiB may exceed limitMiB: HAMi-core refuses such
// an allocation, but a reader must show what the region says.
func Holding(uuid string, usedMiB, limitMiB uint64) Region {
	used := usedMiB << 20
	return Region{
		Layout: V1, Major: 1, Minor: 2,
		Devices: []Device{{UUID: uuid, Limit: limitMiB << 20, SMLimit: 100}},
		Slots: map[int]Slot{0: {PID: 1, Status: 1,
			Used: map[int]Memory{0: {Data: used, Total: used}}, MonitorUsed: map[int]uint64{0: used}}},
		ProcNum: 1,
	}
}

// HoldingFile is the name WriteHolding gives its region file. HAMi-core
// names its file as the device plugin tells it, a new name per Allocate; the
// monitor reads the newest *.cache file of a directory, whatever its name.
const HoldingFile = "monitortest.cache"

// WriteHolding writes Holding(uuid, usedMiB, limitMiB) into dir, a
// container's cache directory, and returns the file's path. The file appears
// whole: it is written under another name and renamed, so a monitor reading
// the directory meanwhile never sees it half written.
func WriteHolding(dir, uuid string, usedMiB, limitMiB uint64) (string, error) {
	path := filepath.Join(dir, HoldingFile)
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, Holding(uuid, usedMiB, limitMiB).Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write region for %s in %s: %w", uuid, dir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("write region for %s in %s: %w", uuid, dir, err)
	}
	return path, nil
}
