//go:build !linux

package monitor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// HAMi-core only runs on Linux, where read_linux.go opens files relative
// to their directory without following links. This plain version exists so
// the package builds and its tests run elsewhere; it checks with Lstat,
// which a racing rename can defeat.

// ReadRegion reads a region file and decodes it; a symbolic link, FIFO,
// device or directory is refused without being read.
func ReadRegion(path string) (*Region, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("read shared region %s: %w", path, err)
	}
	if err := checkRegionFile(path, info.Mode(), info.Size()); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read shared region %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(mapLength(info.Size()))))
	if err != nil {
		return nil, fmt.Errorf("read shared region %s: %w", path, err)
	}
	return ParseRegion(path, data)
}

func readRegionAt(dir *os.File, name, path string) (*Region, error) {
	return ReadRegion(filepath.Join(dir.Name(), name))
}

func openContainerDir(root *os.File, name string) (*os.File, error) {
	path := filepath.Join(root.Name(), name)
	info, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	if !info.IsDir() {
		return nil, &refusal{path: path, reason: "not a directory or a symbolic link; not followed"}
	}
	return os.Open(path)
}
