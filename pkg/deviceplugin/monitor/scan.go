package monitor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// cacheSuffix marks region files: the plugin points
// CUDA_DEVICE_MEMORY_SHARED_CACHE at /tmp/vgpu/<id>.cache in the container.
const cacheSuffix = ".cache"

// ContainerDir is one per-container cache directory, "<podUID>_<container>"
// under the cache root.
type ContainerDir struct {
	Path      string
	PodUID    string
	Container string
	// ModTime is the directory's modification time; a caller that cleans
	// up directories of deleted pods can use it to spare new ones.
	ModTime time.Time
	// CacheFiles are the *.cache files in it, newest first.
	CacheFiles []string
}

// ContainerRegion is a container and the region its processes share.
type ContainerRegion struct {
	ContainerDir
	// Region was read from the newest readable file in CacheFiles.
	Region *Region
}

// Scan is what one pass over the cache root found.
type Scan struct {
	// Containers have a readable region, ordered by directory name.
	Containers []ContainerRegion
	// Waiting are directories without any region file yet: no CUDA process
	// has started in the container.
	Waiting []ContainerDir
	// Problems names every directory and file that was skipped and why.
	// They are not fatal: the rest of the scan is complete.
	Problems []error
}

// ScanRoot reads every container's region under root (the host directory
// holding the "<podUID>_<container>" directories). A missing root is an
// empty scan: the plugin creates it with the first container. Only an
// unreadable root is an error.
//
// A directory may hold several region files (the upstream monitor gave up
// on a directory with more than two entries): each Allocate names a new
// file, so an older one is left behind when a directory is reused. The
// newest file that decodes is used; older valid files are ignored and
// files that fail to decode are reported in Problems.
func ScanRoot(root string) (Scan, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return Scan{}, nil
	}
	if err != nil {
		return Scan{}, fmt.Errorf("scan container cache root: %w", err)
	}
	var scan Scan
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		dir, err := readContainerDir(root, entry)
		if err != nil {
			scan.Problems = append(scan.Problems, err)
			continue
		}
		if len(dir.CacheFiles) == 0 {
			scan.Waiting = append(scan.Waiting, dir)
			continue
		}
		region, problems := newestRegion(dir.CacheFiles)
		scan.Problems = append(scan.Problems, problems...)
		if region != nil {
			scan.Containers = append(scan.Containers, ContainerRegion{ContainerDir: dir, Region: region})
		}
	}
	return scan, nil
}

// readContainerDir parses the directory's name and lists its region files.
func readContainerDir(root string, entry fs.DirEntry) (ContainerDir, error) {
	path := filepath.Join(root, entry.Name())
	podUID, container, err := ParseContainerDirName(entry.Name())
	if err != nil {
		return ContainerDir{}, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	info, err := entry.Info()
	if err != nil {
		return ContainerDir{}, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	files, err := os.ReadDir(path)
	if err != nil {
		return ContainerDir{}, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	type cacheFile struct {
		path    string
		modTime time.Time
	}
	var caches []cacheFile
	for _, file := range files {
		if file.IsDir() || !strings.HasSuffix(file.Name(), cacheSuffix) {
			continue
		}
		fileInfo, err := file.Info()
		if err != nil {
			continue // removed since the listing
		}
		caches = append(caches, cacheFile{filepath.Join(path, file.Name()), fileInfo.ModTime()})
	}
	sort.SliceStable(caches, func(i, j int) bool {
		if !caches[i].modTime.Equal(caches[j].modTime) {
			return caches[i].modTime.After(caches[j].modTime)
		}
		return caches[i].path < caches[j].path
	})
	dir := ContainerDir{Path: path, PodUID: podUID, Container: container, ModTime: info.ModTime()}
	for _, c := range caches {
		dir.CacheFiles = append(dir.CacheFiles, c.path)
	}
	return dir, nil
}

// newestRegion decodes the first file of paths (newest first) that decodes
// and reports those before it that did not.
func newestRegion(paths []string) (*Region, []error) {
	var problems []error
	for _, path := range paths {
		region, err := ReadRegion(path)
		if err == nil {
			return region, problems
		}
		problems = append(problems, err)
	}
	return nil, problems
}

// ParseContainerDirName splits a cache directory name "<podUID>_<container>"
// into its parts. Neither a pod UID nor a container name (a DNS label) can
// contain "_", so the first "_" separates them unambiguously.
func ParseContainerDirName(name string) (podUID, container string, err error) {
	podUID, container, ok := strings.Cut(name, "_")
	switch {
	case !ok:
		return "", "", fmt.Errorf("name %q is not <podUID>_<container>: no \"_\"", name)
	case !isPodUID(podUID):
		return "", "", fmt.Errorf("name %q is not <podUID>_<container>: %q is not a pod UID", name, podUID)
	case !isDNSLabel(container):
		return "", "", fmt.Errorf("name %q is not <podUID>_<container>: %q is not a container name", name, container)
	}
	return podUID, container, nil
}

// isPodUID accepts what pod UIDs look like: RFC 4122 UUIDs from the API
// server, hex hashes or a manifest's own uid for static pods. It only
// refuses what no UID holds, to catch stray directories.
func isPodUID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// isDNSLabel accepts RFC 1123 labels, the form of container names.
func isDNSLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
