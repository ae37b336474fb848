package kubelet

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileID tells one socket file from another created later at the same
// path: the inode alone may be reused at once, the modification time alone
// may repeat on a coarse clock, together they change when the file is
// re-created.
type fileID struct {
	device  uint64
	inode   uint64
	modTime time.Time
}

func statFileID(path string) (fileID, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileID{}, fmt.Errorf("stat socket: %w", err)
	}
	id := fileID{modTime: info.ModTime()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		id.device, id.inode = uint64(st.Dev), st.Ino
	}
	return id, nil
}
