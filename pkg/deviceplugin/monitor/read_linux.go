//go:build linux

package monitor

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// ReadRegion maps a region file read-only and decodes it. Mapping reads
// only the pages it touches and, being MAP_SHARED, sees what the CUDA
// processes wrote last; PROT_READ guarantees the reader never writes.
func ReadRegion(path string) (*Region, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read shared region: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read shared region: %w", err)
	}
	if err := checkRegionFile(path, info); err != nil {
		return nil, err
	}
	if info.Size() == 0 {
		return ParseRegion(path, nil)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shared region %s: map read-only: %w", path, err)
	}
	defer func() { _ = syscall.Munmap(data) }()
	return parseMapped(path, data)
}

// parseMapped decodes mapped memory. Touching a page beyond the end of a
// file that shrank after it was mapped raises SIGBUS; with panic-on-fault
// that becomes a panic here, reported as an error instead of killing the
// monitor.
func parseMapped(path string, data []byte) (region *Region, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			region, err = nil, fmt.Errorf("shared region %s: file shrank while being read (fault at %#x)", path, fault.Addr())
		}
	}()
	return ParseRegion(path, data)
}
