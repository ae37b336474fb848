package monitor

import (
	"fmt"
	"io/fs"
)

// checkRegionFile refuses what cannot be a region before it is read: a
// directory or device named *.cache, or a file far larger than any layout.
func checkRegionFile(path string, info fs.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("shared region %s: not a regular file (%s)", path, info.Mode().Type())
	}
	if info.Size() > maxRegionFile {
		return fmt.Errorf("shared region %s: %d bytes, larger than any HAMi-core region", path, info.Size())
	}
	return nil
}
