package monitor

import (
	"encoding/binary"
	"testing"
)

// Offsets written out as literal numbers, worked out by hand from HAMi-core's
// header (multiprocess_memory_limit.h) and checked on an H200, not taken from
// layout.go, so the fixtures check the decoder's offsets.
type fixtureOffsets struct {
	fileSize                                                        int
	versioned                                                       bool
	smInitFlag, deviceNum, uuids, limit, smLimit, procs             int
	slotSize, used, memEntry, monitorUsed, util, utilEntry          int
	status, procNum, utilSwitch, recentKernel, priority, lastKernel int
}

var (
	fixtureV1 = fixtureOffsets{
		fileSize: 2_008_953, versioned: true,
		smInitFlag: 12, deviceNum: 56, uuids: 64, limit: 1600, smLimit: 1728, procs: 1856,
		slotSize: 1960, used: 8, memEntry: 64, monitorUsed: 1032, util: 1160, utilEntry: 48,
		status: 1928, procNum: 2_008_896, utilSwitch: 2_008_900, recentKernel: 2_008_904, priority: 2_008_908,
		lastKernel: 2_008_912,
	}
	fixtureV0 = fixtureOffsets{
		fileSize:   1_197_897,
		smInitFlag: 4, deviceNum: 48, uuids: 56, limit: 1592, smLimit: 1720, procs: 1848,
		slotSize: 1168, used: 8, memEntry: 40, monitorUsed: 648, util: 776, utilEntry: 24,
		status: 1160, procNum: 1_197_880, utilSwitch: 1_197_884, recentKernel: 1_197_888, priority: 1_197_892,
		lastKernel: -1,
	}
)

// fixtureRegion describes a region file to build.
type fixtureRegion struct {
	off          fixtureOffsets
	magic        int32 // 0 means the real magic
	major, minor uint32
	smInitFlag   int32
	devices      []fixtureDevice
	slots        map[int]fixtureSlot
	procNum      int32
	utilSwitch   int32
	recentKernel int32
	priority     int32
	lastKernel   int64
	// size overrides the file size when non-zero.
	size int
}

type fixtureDevice struct {
	uuid           string
	limit, smLimit uint64
}

type fixtureSlot struct {
	pid, hostPID, status int32
	used                 map[int]Memory
	monitorUsed          map[int]uint64
	smUtil               map[int]uint64
}

func (f fixtureRegion) build(t testing.TB) []byte {
	t.Helper()
	size := f.off.fileSize
	if f.size != 0 {
		size = f.size
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
	magic := f.magic
	if magic == 0 {
		magic = 19920718
	}
	put32(0, uint32(magic))
	if f.off.versioned {
		put32(4, f.major)
		put32(8, f.minor)
	}
	put32(f.off.smInitFlag, uint32(f.smInitFlag))
	put64(f.off.deviceNum, uint64(len(f.devices)))
	for i, d := range f.devices {
		if f.off.uuids+i*96+len(d.uuid) <= len(b) {
			copy(b[f.off.uuids+i*96:], d.uuid)
		}
		put64(f.off.limit+8*i, d.limit)
		put64(f.off.smLimit+8*i, d.smLimit)
	}
	for n, s := range f.slots {
		base := f.off.procs + n*f.off.slotSize
		put32(base, uint32(s.pid))
		put32(base+4, uint32(s.hostPID))
		put32(base+f.off.status, uint32(s.status))
		for dev, m := range s.used {
			e := base + f.off.used + dev*f.off.memEntry
			put64(e, m.Context)
			put64(e+8, m.Module)
			put64(e+16, m.Data)
			put64(e+24, m.Offset)
			put64(e+32, m.Total)
		}
		for dev, v := range s.monitorUsed {
			put64(base+f.off.monitorUsed+8*dev, v)
		}
		for dev, v := range s.smUtil {
			put64(base+f.off.util+dev*f.off.utilEntry+16, v)
		}
	}
	put32(f.off.procNum, uint32(f.procNum))
	put32(f.off.utilSwitch, uint32(f.utilSwitch))
	put32(f.off.recentKernel, uint32(f.recentKernel))
	put32(f.off.priority, uint32(f.priority))
	if f.off.lastKernel >= 0 {
		put64(f.off.lastKernel, uint64(f.lastKernel))
	}
	return b
}

// h200Region is the region as read on an H200, at the HAMi-core commit the
// Dockerfile pins, after a holder process kept 1024 MiB under a 2000m limit,
// plus a stale slot of an exited process.
func h200Region(off fixtureOffsets) fixtureRegion {
	limits := fixtureDevice{uuid: "GPU-3ae1f14c-6470-2558-8b35-d51fb6d090f1", limit: 2_097_152_000, smLimit: 30}
	return fixtureRegion{
		off: off, major: 1, minor: 2,
		devices: []fixtureDevice{limits},
		slots: map[int]fixtureSlot{
			0: {
				pid: 2142, hostPID: 2142, status: 1,
				used:        map[int]Memory{0: {Context: 543_162_368, Data: 1_073_741_824, Total: 1_616_904_192}},
				monitorUsed: map[int]uint64{0: 1_616_904_192},
				smUtil:      map[int]uint64{0: 37},
			},
			// An exited process: pid cleared, stale host pid, nothing charged.
			1: {pid: 0, hostPID: 2101},
		},
		procNum: 2, utilSwitch: 1, recentKernel: 2, priority: 1,
		lastKernel: 1_764_633_600,
	}
}
