// Package monitor reads what HAMi-core records about the containers on a
// node: the per-container shared-region files (*.cache) under the cache
// root the device plugin mounts into each container as /tmp/vgpu. It only
// reads: it never writes a region, takes its lock or touches its semaphore,
// so it cannot stall or corrupt the CUDA processes that own it. Collector
// (metrics.go) serves what it reads, with the host GPUs' usage, under the
// upstream monitor's metric names.
package monitor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"
)

// Region is a snapshot of one container's shared region.
type Region struct {
	// Path is the file the region was read from.
	Path string
	// Major and Minor are the region format version; 0.0 for the
	// unversioned v0 layout.
	Major, Minor uint32
	// Devices are the container's GPUs in container order: Devices[i] is
	// CUDA/NVML device i inside the container (the "vdeviceid").
	Devices []Device
	// Processes are the slots that belong to a running process or still
	// hold memory; usage in Devices is the sum over all slots.
	Processes []Process
	// ProcNum is the slot count HAMi-core keeps; it is not reduced when a
	// process exits, so it is an upper bound on live processes.
	ProcNum int32
	// UtilizationSwitch, RecentKernel and Priority are the fields of the
	// upstream monitor's priority feedback loop.
	UtilizationSwitch int32
	RecentKernel      int32
	Priority          int32
	// LastKernel is when a kernel was last launched in the container (to
	// the second, every RECORD_KERNEL_INTERVAL); zero when unknown (v0
	// layout, or no kernel yet).
	LastKernel time.Time
}

// Device is one GPU as a container sees it.
type Device struct {
	// Index is the device index inside the container.
	Index int
	// UUID is the GPU's UUID; empty while HAMi-core has not written it.
	UUID string
	// LimitBytes is the memory limit (CUDA_DEVICE_MEMORY_LIMIT[_i]); 0 = none.
	LimitBytes uint64
	// SMLimitPercent is the compute limit (CUDA_DEVICE_SM_LIMIT[_i]);
	// HAMi-core stores 100 when no limit was set.
	SMLimitPercent uint64
	// Used sums the memory charged to the container by all its processes;
	// Used.Total is what HAMi-core compares with the limit.
	Used Memory
	// MonitorUsedBytes sums what NVML reports per process (HAMi-core
	// samples it); it includes memory HAMi-core did not see allocated.
	MonitorUsedBytes uint64
	// SMUtil sums the processes' SM utilisation, in percent.
	SMUtil uint64
}

// Memory is HAMi-core's breakdown of device memory, in bytes.
type Memory struct {
	Context, Module, Data, Offset, Total uint64
}

// Process is one process slot of the region.
type Process struct {
	// PID is the process id in the container's PID namespace; 0 once the
	// process has exited.
	PID int32
	// HostPID is the process id on the node; HAMi-core leaves it in the
	// slot after the process exits.
	HostPID int32
	Status  int32
	// Devices[i] is the process's usage of the container's device i.
	Devices []ProcessDevice
}

// ProcessDevice is one process's usage of one device.
type ProcessDevice struct {
	Used             Memory
	MonitorUsedBytes uint64
	SMUtil           uint64
	EncUtil          uint64
	DecUtil          uint64
}

// ParseRegion decodes a shared region from data, the whole content of the
// file named path (used only in errors). It chooses the layout by size and
// version as the upstream monitor does, and rejects anything it cannot
// decode with an error that names the file and the reason.
func ParseRegion(path string, data []byte) (*Region, error) {
	if len(data) < 12 {
		return nil, fmt.Errorf("shared region %s: %d bytes, too short to be a HAMi-core region", path, len(data))
	}
	if flag := int32(binary.NativeEndian.Uint32(data[offMagic:])); flag != regionMagic {
		return nil, fmt.Errorf("shared region %s: not initialised (flag %d, want %d): not a HAMi-core region, or one still being set up",
			path, flag, regionMagic)
	}
	l, major, minor, err := chooseLayout(data)
	if err != nil {
		return nil, fmt.Errorf("shared region %s: %w", path, err)
	}
	r := decoder{data: data, l: l}
	region := &Region{Path: path, Major: major, Minor: minor}

	numDevices := r.u64(l.deviceNum)
	if numDevices > maxDevices {
		return nil, fmt.Errorf("shared region %s (%s): device_num %d exceeds %d", path, l.name, numDevices, maxDevices)
	}
	n := int(numDevices)
	region.Devices = make([]Device, n)
	for i := range region.Devices {
		region.Devices[i] = Device{
			Index:          i,
			UUID:           r.uuid(i),
			LimitBytes:     r.u64(l.limit + 8*i),
			SMLimitPercent: r.u64(l.smLimit + 8*i),
		}
	}
	// Most of the 1024 slots are empty: decode each into one scratch
	// buffer and copy only the slots in use.
	var scratch [maxDevices]ProcessDevice
	for slot := 0; slot < maxProcs; slot++ {
		p, inUse := r.process(slot, scratch[:n])
		for i, u := range p.Devices {
			d := &region.Devices[i]
			d.Used.add(u.Used)
			d.MonitorUsedBytes += u.MonitorUsedBytes
			d.SMUtil += u.SMUtil
		}
		if inUse {
			p.Devices = append([]ProcessDevice(nil), p.Devices...)
			region.Processes = append(region.Processes, p)
		}
	}

	region.ProcNum = r.i32(l.procNum)
	region.UtilizationSwitch = r.i32(l.utilizationSwitch)
	region.RecentKernel = r.i32(l.recentKernel)
	region.Priority = r.i32(l.priority)
	if l.lastKernelTime >= 0 {
		if sec := int64(r.u64(l.lastKernelTime)); sec > 0 {
			region.LastKernel = time.Unix(sec, 0)
		}
	}
	return region, nil
}

// chooseLayout picks the layout of an initialised region. v0 regions have
// no version words (offset 4 is sm_init_flag there, which may well be 1),
// so v0 is recognised by its exact size first, as the upstream monitor does.
func chooseLayout(data []byte) (layout, uint32, uint32, error) {
	if size := len(data); size == layoutV0.structSize || size == layoutV0.structSize+1 {
		return layoutV0, 0, 0, nil
	}
	major := binary.NativeEndian.Uint32(data[offMajor:])
	minor := binary.NativeEndian.Uint32(data[offMinor:])
	if major != 1 {
		return layout{}, 0, 0, fmt.Errorf("unsupported region version %d.%d (%d bytes): only v0 (%d bytes) and v1.x are known",
			major, minor, len(data), layoutV0.structSize+1)
	}
	if len(data) < layoutV1.structSize {
		return layout{}, 0, 0, fmt.Errorf("version 1.%d region is %d bytes, want at least %d: truncated",
			minor, len(data), layoutV1.structSize)
	}
	return layoutV1, major, minor, nil
}

// decoder reads fields of one layout from a region's bytes. All offsets
// were bounds-checked by chooseLayout (the file is at least as large as
// the struct), so the reads cannot go out of range.
type decoder struct {
	data []byte
	l    layout
}

func (r decoder) u64(off int) uint64 { return binary.NativeEndian.Uint64(r.data[off:]) }
func (r decoder) i32(off int) int32  { return int32(binary.NativeEndian.Uint32(r.data[off:])) }

// uuid returns uuids[i] up to its NUL, or "" when it is not text yet: the
// upstream monitor skips devices whose UUID is not valid UTF-8 because a
// region being initialised holds garbage there.
func (r decoder) uuid(i int) string {
	raw := r.data[r.l.uuids+i*uuidSize : r.l.uuids+(i+1)*uuidSize]
	if end := bytes.IndexByte(raw, 0); end >= 0 {
		raw = raw[:end]
	}
	if !utf8.Valid(raw) {
		return ""
	}
	return string(raw)
}

// process decodes process slot number slot into devs (one entry per
// container device) and says whether the slot is in use: a live pid or
// memory still charged. The returned Process shares devs.
func (r decoder) process(slot int, devs []ProcessDevice) (Process, bool) {
	base := r.l.procs + slot*r.l.slotSize
	p := Process{
		PID:     r.i32(base + r.l.slotPID),
		HostPID: r.i32(base + r.l.slotHostPID),
		Status:  r.i32(base + r.l.slotStatus),
		Devices: devs,
	}
	inUse := p.PID != 0
	for i := range p.Devices {
		mem := base + r.l.slotUsed + i*r.l.memEntrySize
		util := base + r.l.slotUtil + i*r.l.utilEntrySize
		d := ProcessDevice{
			Used: Memory{
				Context: r.u64(mem + memContext),
				Module:  r.u64(mem + memModule),
				Data:    r.u64(mem + memData),
				Offset:  r.u64(mem + memOffset),
				Total:   r.u64(mem + memTotal),
			},
			MonitorUsedBytes: r.u64(base + r.l.slotMonitorUsed + 8*i),
			DecUtil:          r.u64(util + utilDec),
			EncUtil:          r.u64(util + utilEnc),
			SMUtil:           r.u64(util + utilSM),
		}
		if d.Used.Total != 0 || d.MonitorUsedBytes != 0 {
			inUse = true
		}
		p.Devices[i] = d
	}
	return p, inUse
}

func (m *Memory) add(o Memory) {
	m.Context += o.Context
	m.Module += o.Module
	m.Data += o.Data
	m.Offset += o.Offset
	m.Total += o.Total
}
