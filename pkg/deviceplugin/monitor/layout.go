package monitor

// HAMi-core keeps one shared region per container: a C struct in a file
// that every CUDA process of the container maps and updates. Two layouts
// exist (HAMi-core multiprocess_memory_limit.h, LP64, glibc sem_t of 32
// bytes); the offsets below were checked against a compiled header on an
// H200 (2026-12-02, the run docs/h200-context-reserve.md describes) for v1
// and derived from the header's field sizes for v0.
//
// The region file is one byte longer than the struct: HAMi-core sizes the
// file by writing a single byte just past the struct.

const (
	// regionMagic is initialized_flag once HAMi-core finished setting up
	// the region; it is written last, so a region without it is not ready.
	regionMagic = 19920718
	// maxDevices is the number of per-device slots in every array.
	maxDevices = 16
	// maxProcs is the number of per-process slots.
	maxProcs = 1024
	// uuidSize is the size of one uuids[] entry (NUL-terminated string).
	uuidSize = 96
	// maxRegionFile is the largest file named *.cache that is read at
	// all (and then no further than maxRegionRead); the largest known
	// region is about 2 MB.
	maxRegionFile = 64 << 20
)

// Offsets inside one per-process memory entry (used[i]) and one
// utilisation entry (device_util[i]); the same in both layouts, v1 only
// pads the entries with unused fields.
const (
	memContext = 0
	memModule  = 8
	memData    = 16
	memOffset  = 24
	memTotal   = 32

	utilDec = 0
	utilEnc = 8
	utilSM  = 16
)

// layout gives the byte offsets of one version of the shared region.
type layout struct {
	name string
	// structSize is sizeof(shared_region_t); the file holds one more byte.
	structSize int
	// hasVersion: major/minor version words follow the magic.
	hasVersion bool

	deviceNum int // uint64
	uuids     int // [16][96]char
	limit     int // [16]uint64, bytes
	smLimit   int // [16]uint64, percent

	procs    int // first process slot
	slotSize int
	// Offsets inside a process slot.
	slotPID         int // int32
	slotHostPID     int // int32
	slotUsed        int // [16]memory entry
	memEntrySize    int
	slotMonitorUsed int // [16]uint64
	slotUtil        int // [16]utilisation entry
	utilEntrySize   int
	slotStatus      int // int32

	procNum           int // int32
	utilizationSwitch int // int32
	recentKernel      int // int32
	priority          int // int32
	lastKernelTime    int // int64 Unix seconds; -1: not in this layout
}

// layoutV0 is the region before HAMi-core versioned it: no version words,
// 40-byte memory entries, 24-byte utilisation entries, 1168-byte slots and
// no last-kernel time.
var layoutV0 = layout{
	name:       "v0",
	structSize: 1_197_896,
	hasVersion: false,

	deviceNum: 48, // after int32 flag, int32 sm_init_flag, size_t owner_pid, sem_t
	uuids:     56,
	limit:     1592,
	smLimit:   1720,

	procs:           1848,
	slotSize:        1168,
	slotPID:         0,
	slotHostPID:     4,
	slotUsed:        8,
	memEntrySize:    40,
	slotMonitorUsed: 648,
	slotUtil:        776,
	utilEntrySize:   24,
	slotStatus:      1160,

	procNum:           1_197_880,
	utilizationSwitch: 1_197_884,
	recentKernel:      1_197_888,
	priority:          1_197_892,
	lastKernelTime:    -1,
}

// layoutV1 is major version 1 (minor 1 and 2 share it; 1.2 adds a per-slot
// seqlock at slot offset 1936 and sem_postinit at 2,008,920, both in space
// that 1.1 left unused, and neither is needed by a reader that only sums).
var layoutV1 = layout{
	name:       "v1",
	structSize: 2_008_952,
	hasVersion: true,

	deviceNum: 56, // after flag, major, minor, sm_init_flag, owner_pid, sem_t
	uuids:     64,
	limit:     1600,
	smLimit:   1728,

	procs:           1856,
	slotSize:        1960,
	slotPID:         0,
	slotHostPID:     4,
	slotUsed:        8,
	memEntrySize:    64,
	slotMonitorUsed: 1032,
	slotUtil:        1160,
	utilEntrySize:   48,
	slotStatus:      1928,

	procNum:           2_008_896,
	utilizationSwitch: 2_008_900,
	recentKernel:      2_008_904,
	priority:          2_008_908,
	lastKernelTime:    2_008_912,
}

// Offsets of the version words in a v1 region.
const (
	offMagic = 0
	offMajor = 4
	offMinor = 8
)
