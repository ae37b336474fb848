//go:build linux

package monitor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
)

// The container's processes can write anything into their cache directory,
// so a file is opened the way a hostile name cannot abuse:
//   - O_NOFOLLOW: a symbolic link fails with ELOOP instead of leading to a
//     host file;
//   - O_NONBLOCK: a FIFO without a writer, or a file under a lease the
//     container holds, opens at once instead of blocking the scrape;
//   - O_NOCTTY and O_CLOEXEC: a device node never becomes the plugin's
//     terminal, and no descriptor leaks into a child.
//
// The descriptor is then checked with fstat, so what is read is what was
// opened even if the name was swapped after the directory was listed.
const (
	regionOpenFlags = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW | syscall.O_NOCTTY | syscall.O_CLOEXEC
	dirOpenFlags    = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
)

// ReadRegion maps a region file read-only and decodes it. A symbolic link,
// FIFO, device or directory is refused without being read. Mapping reads
// only the pages it touches and, being MAP_SHARED, sees what the CUDA
// processes wrote last; PROT_READ guarantees the reader never writes.
func ReadRegion(path string) (*Region, error) {
	fd, err := syscall.Open(path, regionOpenFlags, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	return readRegionFD(path, fd)
}

// readRegionAt reads the region file name in dir, without following a
// symbolic link at name; path names it in errors.
func readRegionAt(dir *os.File, name, path string) (*Region, error) {
	fd, err := openat(dir, name, regionOpenFlags)
	if err != nil {
		return nil, openError(path, err)
	}
	return readRegionFD(path, fd)
}

// openContainerDir opens the directory name in root; a symbolic link or
// anything but a directory is refused.
func openContainerDir(root *os.File, name string) (*os.File, error) {
	path := filepath.Join(root.Name(), name)
	fd, err := openat(root, name, dirOpenFlags)
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENOTDIR):
		return nil, &refusal{path: path, reason: "not a directory or a symbolic link; not followed"}
	case err != nil:
		return nil, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openat opens name relative to dir's descriptor.
func openat(dir *os.File, name string, flags int) (int, error) {
	raw, err := dir.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var openErr error
	if err := raw.Control(func(dirfd uintptr) {
		fd, openErr = syscall.Openat(int(dirfd), name, flags, 0)
	}); err != nil {
		return -1, err
	}
	return fd, openErr
}

func openError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return &refusal{path: path, reason: "symbolic link; not followed"}
	}
	return fmt.Errorf("read shared region %s: %w", path, err)
}

// readRegionFD checks that fd is a regular file of a plausible size, maps
// at most the largest known region of it and decodes that. It closes fd.
func readRegionFD(path string, fd int) (*Region, error) {
	defer func() { _ = syscall.Close(fd) }()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("read shared region %s: %w", path, err)
	}
	if err := checkRegionFile(path, statMode(st.Mode), st.Size); err != nil {
		return nil, err
	}
	n := mapLength(st.Size)
	if n == 0 {
		return ParseRegion(path, nil)
	}
	data, err := syscall.Mmap(fd, 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shared region %s: map read-only: %w", path, err)
	}
	defer func() { _ = syscall.Munmap(data) }()
	return parseMapped(path, data)
}

// statMode turns the file type bits of a stat mode into an fs.FileMode
// (permissions are not needed).
func statMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
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
