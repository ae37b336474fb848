package conf

import (
	"context"
	"crypto/sha256"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often Run re-reads the file when the caller
// gives no interval. The kubelet takes up to a minute to project a ConfigMap
// change into the volume, so a couple of seconds adds nothing noticeable.
const DefaultPollInterval = 2 * time.Second

// Watcher holds the last good configuration read from one file and reloads
// it when the file's content changes.
//
// It polls the content rather than using inotify: the kubelet updates a
// ConfigMap volume by swapping the "..data" symlink, which file-level watches
// miss and directory-level watches report as a burst of events. Re-reading
// the path follows the symlinks to whatever version is current, and comparing
// a digest of the content makes a change, and only a change, trigger a
// reload (touching or re-writing the same bytes does nothing). It also needs
// no dependency beyond the standard library.
type Watcher struct {
	path     string
	names    KnownNames
	fallback func() *SchedulerConfiguration
	current  atomic.Pointer[loaded]

	mu          sync.Mutex        // guards the fields below: Reload may race with Run
	seen        [sha256.Size]byte // digest of the last content examined, good or bad
	good        [sha256.Size]byte // digest of the content current was parsed from
	lastReadErr string            // last read failure reported, to report each once
}

// NewWatcher returns a Watcher for path whose current configuration is what fallback
// returns until a usable version of the file has been read (upstream keeps its built-in
// default when the file is bad at start). fallback is asked at every Current, so it may
// follow the cluster; it must be cheap. names resolves each version of the file.
func NewWatcher(path string, names KnownNames, fallback func() *SchedulerConfiguration) *Watcher {
	w := &Watcher{path: path, names: names, fallback: fallback}
	w.current.Store(&loaded{})
	return w
}

// loaded is a version of the file in force (nil config: none yet) and what it skips.
type loaded struct {
	config  *SchedulerConfiguration
	skipped []*Skipped
}

// Path is the watched file.
func (w *Watcher) Path() string { return w.path }

// Current returns the configuration in force: the last good version of the
// file, or the fallback. Cheap enough to call at the start of every cycle.
// The value is shared: do not modify it.
func (w *Watcher) Current() *SchedulerConfiguration {
	if cfg := w.current.Load().config; cfg != nil {
		return cfg
	}
	return w.fallback()
}

// FromFile reports whether a version of the file is in force (not the fallback).
func (w *Watcher) FromFile() bool { return w.current.Load().config != nil }

// Skipped is what the version of the file in force does not apply (Resolve), for the
// caller to report; nil while the fallback is in force.
func (w *Watcher) Skipped() []*Skipped { return w.current.Load().skipped }

// Reload reads the file now. It returns the new configuration when a new good
// version of the file came into force, and nil when nothing changed. When the file cannot be read, or
// its content does not parse or leaves no action to run, it returns a *ConfigError and
// keeps the current configuration. Each distinct failure is returned once:
// asking again about the same bad content, or the same read error, returns
// (nil, nil), so a caller polling in a loop reports it once.
func (w *Watcher) Reload() (*SchedulerConfiguration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()

	data, readErr := os.ReadFile(w.path)
	if readErr != nil {
		// Forget the content seen, so the same bad content coming back
		// after the file was missing is reported again.
		w.seen = [sha256.Size]byte{}
		if readErr.Error() == w.lastReadErr {
			return nil, nil
		}
		w.lastReadErr = readErr.Error()
		return nil, &ConfigError{Path: w.path, Stage: StageRead, Err: readErr}
	}
	w.lastReadErr = ""

	digest := sha256.Sum256(data)
	if digest == w.seen {
		return nil, nil
	}
	w.seen = digest
	if digest == w.good {
		// Back to the content already in force, e.g. a bad edit reverted.
		return nil, nil
	}

	cfg, skipped, err := parse(w.path, data, w.names)
	if err != nil {
		return nil, err
	}
	w.good = digest
	w.current.Store(&loaded{config: cfg, skipped: skipped})
	return cfg, nil
}

// Run polls the file every interval (DefaultPollInterval when interval <= 0)
// until ctx is done, starting with one check right away. After a new good
// configuration is in force it calls onChange with it; when a change cannot
// be used it calls onError with the *ConfigError, once per distinct problem,
// and the previous configuration stays in force. Both callbacks run on Run's
// goroutine and may be nil.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, onChange func(*SchedulerConfiguration), onError func(error)) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		cfg, err := w.Reload()
		switch {
		case err != nil && onError != nil:
			onError(err)
		case cfg != nil && onChange != nil:
			onChange(cfg)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
