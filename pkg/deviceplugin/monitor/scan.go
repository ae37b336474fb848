package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// Refused names every entry that was not read for what it is: a
	// symbolic link, FIFO, device or socket, an oversized file, or a
	// directory with more entries than HAMi-core ever writes. A
	// container can plant these in its own cache directory.
	Refused []error
	// Unread counts the container directories and region files left
	// unread because the scan's context ended first.
	Unread int
}

// maxDirEntries bounds the entries of one container directory: HAMi-core
// writes one region file per Allocate, so a handful is normal, and a
// directory with more is refused rather than listed at length.
const maxDirEntries = 256

// ScanRoot reads every container's region under root, without a time
// limit; see ScanRootContext.
func ScanRoot(root string) (Scan, error) {
	return ScanRootContext(context.Background(), root)
}

// ScanRootContext reads every container's region under root (the host
// directory holding the "<podUID>_<container>" directories). A missing root
// is an empty scan: the plugin creates it with the first container. Only an
// unreadable root is an error.
//
// The container directories are written by the containers, so nothing in
// them is trusted: symbolic links are never followed (neither a directory
// nor a file), only regular files are read, and no more of each than the
// largest region. The scan runs in the caller's goroutine and checks ctx
// before each directory and file: once ctx is done, what is left is
// counted in Unread and not read.
//
// A directory may hold several region files (the upstream monitor gave up
// on a directory with more than two entries): each Allocate names a new
// file, so an older one is left behind when a directory is reused. The
// newest file that decodes is used; older valid files are ignored and
// files that fail to decode are reported in Problems.
func ScanRootContext(ctx context.Context, root string) (Scan, error) {
	rootDir, err := os.Open(root)
	if errors.Is(err, fs.ErrNotExist) {
		return Scan{}, nil
	}
	if err != nil {
		return Scan{}, fmt.Errorf("scan container cache root: %w", err)
	}
	defer rootDir.Close()
	// The root is the plugin's: one entry per container on the node.
	entries, err := rootDir.ReadDir(-1)
	if err != nil {
		return Scan{}, fmt.Errorf("scan container cache root %s: %w", root, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var scan Scan
	for i, entry := range entries {
		if ctx.Err() != nil {
			scan.Unread += len(entries) - i
			break
		}
		path := filepath.Join(root, entry.Name())
		if entry.Type()&fs.ModeSymlink != 0 {
			scan.Refused = append(scan.Refused, &refusal{path: path, reason: "symbolic link in the cache root; not followed"})
			continue
		}
		if !entry.IsDir() {
			continue
		}
		scan.readContainer(ctx, rootDir, entry.Name())
	}
	return scan, nil
}

// readContainer reads one container directory into the scan.
func (s *Scan) readContainer(ctx context.Context, root *os.File, name string) {
	dir, err := listContainerDir(root, name)
	if err != nil {
		s.add(err)
		return
	}
	defer dir.file.Close()
	s.Refused = append(s.Refused, dir.refused...)
	if len(dir.CacheFiles) == 0 {
		s.Waiting = append(s.Waiting, dir.ContainerDir)
		return
	}
	// Decode the newest file that decodes; report those before it that
	// did not.
	for i, path := range dir.CacheFiles {
		if ctx.Err() != nil {
			s.Unread += len(dir.CacheFiles) - i
			return
		}
		region, err := readRegionAt(dir.file, dir.names[i], path)
		if err == nil {
			s.Containers = append(s.Containers, ContainerRegion{ContainerDir: dir.ContainerDir, Region: region})
			return
		}
		s.add(err)
	}
}

func (s *Scan) add(err error) {
	if isRefusal(err) {
		s.Refused = append(s.Refused, err)
	} else {
		s.Problems = append(s.Problems, err)
	}
}

// containerListing is an open container directory and its region files.
// The files are opened relative to file, never through a path that a
// renamed component could lead elsewhere.
type containerListing struct {
	ContainerDir
	file *os.File
	// names are the region files' names, in the order of CacheFiles.
	names []string
	// refused are entries named *.cache that are not regular files.
	refused []error
}

// listContainerDir parses the directory's name, opens it without following
// a link and lists its region files, newest first. The caller closes file.
func listContainerDir(root *os.File, name string) (containerListing, error) {
	path := filepath.Join(root.Name(), name)
	podUID, container, err := ParseContainerDirName(name)
	if err != nil {
		return containerListing{}, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	dir, err := openContainerDir(root, name)
	if err != nil {
		return containerListing{}, err
	}
	l, err := listOpenDir(dir, path)
	if err != nil {
		_ = dir.Close()
		return containerListing{}, err
	}
	l.PodUID, l.Container = podUID, container
	return l, nil
}

func listOpenDir(dir *os.File, path string) (containerListing, error) {
	info, err := dir.Stat()
	if err != nil {
		return containerListing{}, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	files, err := dir.ReadDir(maxDirEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return containerListing{}, fmt.Errorf("container cache dir %s: %w", path, err)
	}
	if len(files) > maxDirEntries {
		return containerListing{}, &refusal{path: path,
			reason: fmt.Sprintf("more than %d entries, more than HAMi-core writes; not read", maxDirEntries)}
	}
	l := containerListing{ContainerDir: ContainerDir{Path: path, ModTime: info.ModTime()}, file: dir}
	type cacheFile struct {
		name    string
		modTime time.Time
	}
	var caches []cacheFile
	for _, file := range files {
		if !strings.HasSuffix(file.Name(), cacheSuffix) {
			continue
		}
		// The type comes from the listing: a FIFO, device or link is
		// refused without being opened.
		if !file.Type().IsRegular() {
			l.refused = append(l.refused, &refusal{path: filepath.Join(path, file.Name()),
				reason: fmt.Sprintf("not a regular file (%s); not read", describeType(file.Type()))})
			continue
		}
		fileInfo, err := file.Info() // lstat: never follows a link
		if err != nil {
			continue // removed since the listing
		}
		caches = append(caches, cacheFile{file.Name(), fileInfo.ModTime()})
	}
	sort.SliceStable(caches, func(i, j int) bool {
		if !caches[i].modTime.Equal(caches[j].modTime) {
			return caches[i].modTime.After(caches[j].modTime)
		}
		return caches[i].name < caches[j].name
	})
	for _, c := range caches {
		l.CacheFiles = append(l.CacheFiles, filepath.Join(path, c.name))
		l.names = append(l.names, c.name)
	}
	return l, nil
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
