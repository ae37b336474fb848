package monitor

import (
	"errors"
	"fmt"
	"io/fs"
)

// maxRegionRead is the most that is read of a region file: the largest
// known region and the byte HAMi-core writes past it. A longer file is read
// only that far; its tail can hold nothing a known layout decodes.
var maxRegionRead = max(layoutV0.structSize, layoutV1.structSize) + 1

// refusal is an entry of a cache directory that is not read for what it
// is: a symbolic link, FIFO, device, socket, or a file or directory no
// HAMi-core writes. The container's processes can create these in their own
// cache directory, so each is worth a log line naming it.
type refusal struct {
	path, reason string
}

func (r *refusal) Error() string { return r.path + ": " + r.reason }

func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

// checkRegionFile refuses what cannot be a region before it is read: a
// directory, FIFO, device or link named *.cache, or a file far larger than
// any layout.
func checkRegionFile(path string, mode fs.FileMode, size int64) error {
	if !mode.IsRegular() {
		return &refusal{path: path, reason: fmt.Sprintf("not a regular file (%s); not read", describeType(mode))}
	}
	if size > maxRegionFile {
		return &refusal{path: path, reason: fmt.Sprintf("%d bytes, larger than any HAMi-core region; not read", size)}
	}
	return nil
}

// mapLength is how much of a file of size bytes is read.
func mapLength(size int64) int {
	return int(min(size, int64(maxRegionRead)))
}

func describeType(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeDir != 0:
		return "directory"
	default:
		return t.String()
	}
}
