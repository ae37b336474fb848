// Package hook puts HAMi-core's files on the node: the device plugin's image carries
// libvgpu.so and ld.so.preload, and Allocate mounts them into GPU containers from a host
// directory (the hook path). Install copies them there at start, as upstream's DaemonSet does
// with a shell `cp`, which a distroless image has no shell for.
package hook

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
)

// HAMi-core's files, in the image and on the host alike: the library, and the preload list
// that makes every process in a GPU container load it.
const (
	Library = "libvgpu.so"
	Preload = "ld.so.preload"
)

// Files are what Install copies.
var Files = []string{Library, Preload}

// ImageDir is where the device plugin's image carries the files.
const ImageDir = "/k8s-vgpu/lib/nvidia"

// Install copies Files from src into dst, each replaced in one rename so a container starting
// meanwhile sees the old or the new file, never half of one. A file already equal is left
// alone. An absent src (an image built without HAMi-core) installs nothing: the host's files
// are used as they are.
func Install(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		klog.InfoS("No HAMi-core files in the image; using the hook path's", "image", src, "hookPath", dst)
		return nil
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("hook path %s: %w", dst, err)
	}
	for _, name := range Files {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("HAMi-core file in the image: %w", err)
		}
		target := filepath.Join(dst, name)
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, data) {
			continue
		}
		tmp := target + ".installing"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return fmt.Errorf("install %s: %w", target, err)
		}
		if err := os.Rename(tmp, target); err != nil {
			return fmt.Errorf("install %s: %w", target, err)
		}
		klog.InfoS("Installed HAMi-core file", "path", target, "bytes", len(data))
	}
	return nil
}
