package monitor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of SweepConfig.
const (
	// DefaultSweepGrace is how long a container directory is kept after
	// its pod was last seen on the node.
	DefaultSweepGrace = 5 * time.Minute
	// DefaultSweepInterval is how often the cache root is swept.
	DefaultSweepInterval = time.Minute
)

// PodActivity tells the sweeper which pods may still use their cache
// directories; PodIndex is one.
type PodActivity interface {
	// Active says whether the pod is on the node and may run containers.
	Active(podUID string) bool
	// HasSynced says whether Active knows the node's pods yet.
	HasSynced() bool
}

// SweepConfig tunes a Sweeper; zero fields take the defaults.
type SweepConfig struct {
	// Grace is how long a directory is kept after its pod is gone.
	Grace time.Duration
	// Interval is the time between two sweeps.
	Interval time.Duration
	// Clock is the time source; the real clock when nil.
	Clock clock.WithTicker
}

// Sweeper removes the container directories of pods that left the node
// from one root. The plugin creates one "<podUID>_<container>" directory
// per container under each of two roots: the cache directory, where
// HAMi-core puts a region of about 2 MB, and the directory of the file
// that sets HAMi-core's limits; nothing else removes them.
//
// A directory is removed once its pod has been missing (or finished) for
// the whole grace period, counted from the first sweep that saw it gone,
// and only when the pod index has synced: a plugin that just started and
// knows no pods yet removes nothing. Only real directories directly under
// the root whose names parse as "<podUID>_<container>" are touched; a
// symbolic link there is neither followed nor removed.
type Sweeper struct {
	root string
	pods PodActivity
	cfg  SweepConfig
	// goneSince is when each directory's pod was first seen gone.
	goneSince map[string]time.Time
}

// NewSweeper returns a Sweeper of the container directories under root.
func NewSweeper(root string, pods PodActivity, cfg SweepConfig) *Sweeper {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultSweepGrace
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultSweepInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Sweeper{root: root, pods: pods, cfg: cfg, goneSince: map[string]time.Time{}}
}

// Run sweeps every interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	ticker := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			s.Sweep()
		}
	}
}

// Sweep makes one pass over the root and returns the directories it
// removed. It is not safe for concurrent use.
func (s *Sweeper) Sweep() []string {
	if !s.pods.HasSynced() {
		return nil
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			klog.ErrorS(err, "Cannot sweep container directories", "root", s.root)
		}
		return nil
	}
	now := s.cfg.Clock.Now()
	present := make(map[string]bool, len(entries))
	var removed []string
	for _, entry := range entries {
		name := entry.Name()
		podUID, _, err := ParseContainerDirName(name)
		if err != nil || !entry.IsDir() {
			// Not a container's directory (a symbolic link is not a
			// directory here: the listing does not follow it).
			continue
		}
		present[name] = true
		if s.pods.Active(podUID) {
			delete(s.goneSince, name)
			continue
		}
		since, seen := s.goneSince[name]
		if !seen {
			s.goneSince[name] = now
			continue
		}
		if now.Sub(since) < s.cfg.Grace {
			continue
		}
		path := filepath.Join(s.root, name)
		if err := removeContainerDir(path); err != nil {
			klog.ErrorS(err, "Cannot remove the container directory of a pod gone from the node", "podUID", podUID)
			continue
		}
		klog.InfoS("Removed the container directory of a pod gone from the node", "podUID", podUID, "path", path,
			"goneFor", now.Sub(since).Round(time.Second))
		delete(s.goneSince, name)
		removed = append(removed, path)
	}
	for name := range s.goneSince {
		if !present[name] {
			delete(s.goneSince, name)
		}
	}
	return removed
}

// removeContainerDir removes path and everything in it, after checking,
// without following a link, that path is a directory. RemoveAll removes a
// link it meets inside as a link and never descends through it.
func removeContainerDir(path string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("remove container cache dir %s: %w", path, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("remove container cache dir %s: not a directory (%s); left alone", path, describeType(info.Mode()))
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove container cache dir %s: %w", path, err)
	}
	return nil
}
