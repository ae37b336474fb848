package conf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const confFile = "volcano-scheduler.conf"

// configMapVolume mimics how the kubelet projects a ConfigMap into a pod:
//
//	dir/..<version>/volcano-scheduler.conf   the real file, one dir per version
//	dir/..data -> ..<version>                swapped atomically on each update
//	dir/volcano-scheduler.conf -> ..data/volcano-scheduler.conf
type configMapVolume struct {
	t       *testing.T
	dir     string
	current string
}

func newConfigMapVolume(t *testing.T, content string) *configMapVolume {
	v := &configMapVolume{t: t, dir: t.TempDir()}
	v.update("v1", content)
	if err := os.Symlink(filepath.Join("..data", confFile), v.path()); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *configMapVolume) path() string { return filepath.Join(v.dir, confFile) }

// update writes a new version directory, points ..data at it with a rename
// (atomic, as the kubelet's AtomicWriter does) and removes the old version.
func (v *configMapVolume) update(version, content string) {
	v.t.Helper()
	versionDir := "..2026_01_01_" + version
	if err := os.Mkdir(filepath.Join(v.dir, versionDir), 0o755); err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, versionDir, confFile), []byte(content), 0o644); err != nil {
		v.t.Fatal(err)
	}
	tmpLink := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(versionDir, tmpLink); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmpLink, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
	if v.current != "" {
		if err := os.RemoveAll(filepath.Join(v.dir, v.current)); err != nil {
			v.t.Fatal(err)
		}
	}
	v.current = versionDir
}

const (
	goodV1 = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
	goodV2 = "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: gang\n  - name: deviceshare\n"
	badV   = "actions: \"teleport\"\ntiers:\n- plugins:\n  - name: gang\n"
)

// runWatcher starts w.Run with a short interval and returns channels that
// receive what the callbacks were given.
func runWatcher(t *testing.T, w *Watcher) (<-chan *SchedulerConfiguration, <-chan error) {
	changes := make(chan *SchedulerConfiguration, 16)
	failures := make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, 5*time.Millisecond,
			func(cfg *SchedulerConfiguration) { changes <- cfg },
			func(err error) { failures <- err })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return changes, failures
}

func waitChange(t *testing.T, changes <-chan *SchedulerConfiguration, failures <-chan error, wantActions string) {
	t.Helper()
	select {
	case cfg := <-changes:
		if cfg.Actions != wantActions {
			t.Fatalf("reloaded actions %q, want %q", cfg.Actions, wantActions)
		}
	case err := <-failures:
		t.Fatalf("want a reload to %q, got error %v", wantActions, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no reload to %q within 10s", wantActions)
	}
}

func waitFailure(t *testing.T, changes <-chan *SchedulerConfiguration, failures <-chan error) error {
	t.Helper()
	select {
	case err := <-failures:
		return err
	case cfg := <-changes:
		t.Fatalf("want an error, got a reload to %q", cfg.Actions)
	case <-time.After(10 * time.Second):
		t.Fatalf("no error reported within 10s")
	}
	return nil
}

func TestWatcherReloadsOnConfigMapSwap(t *testing.T) {
	volume := newConfigMapVolume(t, goodV1)
	w := NewWatcher(volume.path(), testNames, DefaultConfiguration)
	changes, failures := runWatcher(t, w)

	waitChange(t, changes, failures, "enqueue, allocate")
	volume.update("v2", goodV2)
	waitChange(t, changes, failures, "enqueue, allocate, backfill")
	if got := w.Current().Tiers[0].Plugins[1].Name; got != "deviceshare" {
		t.Errorf("Current() has plugin %q, want deviceshare", got)
	}
}

func TestWatcherBadEditKeepsLastGood(t *testing.T) {
	volume := newConfigMapVolume(t, goodV1)
	w := NewWatcher(volume.path(), testNames, DefaultConfiguration)
	changes, failures := runWatcher(t, w)
	waitChange(t, changes, failures, "enqueue, allocate")
	good := w.Current()

	volume.update("bad", badV)
	err := waitFailure(t, changes, failures)
	var cfgErr *ConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Path != volume.path() || cfgErr.Stage != StageValidate ||
		!errors.Is(err, ErrNoActions) || !strings.Contains(err.Error(), `action "teleport" is skipped`) {
		t.Fatalf("error = %v, want a validate *ConfigError for %s naming action teleport", err, volume.path())
	}
	if w.Current() != good {
		t.Fatalf("a bad edit replaced the configuration in force")
	}

	// A fix after the bad edit is picked up.
	volume.update("v3", goodV2)
	waitChange(t, changes, failures, "enqueue, allocate, backfill")
}

func TestReloadReportsEachProblemOnce(t *testing.T) {
	volume := newConfigMapVolume(t, goodV1)
	w := NewWatcher(volume.path(), testNames, DefaultConfiguration)

	steps := []struct {
		name        string
		edit        func()
		wantActions string // "" means no new configuration
		wantStage   Stage  // "" means no error
	}{
		{name: "first read", edit: func() {}, wantActions: "enqueue, allocate"},
		{name: "nothing changed", edit: func() {}},
		{name: "same bytes rewritten", edit: func() { volume.update("v1-again", goodV1) }},
		{name: "bad YAML", edit: func() { volume.update("bad1", "actions: [") }, wantStage: StageParse},
		{name: "bad YAML still there", edit: func() {}},
		{name: "no action it has", edit: func() { volume.update("bad2", badV) }, wantStage: StageValidate},
		{name: "reverted to the good content", edit: func() { volume.update("v1-revert", goodV1) }},
		{name: "file removed", edit: func() { os.Remove(volume.path()) }, wantStage: StageRead},
		{name: "still removed", edit: func() {}},
		{name: "restored with new content", edit: func() {
			volume.update("v2", goodV2)
			if err := os.Symlink(filepath.Join("..data", confFile), volume.path()); err != nil {
				t.Fatal(err)
			}
		}, wantActions: "enqueue, allocate, backfill"},
	}
	for _, step := range steps {
		step.edit()
		before := w.Current()
		cfg, err := w.Reload()
		var cfgErr *ConfigError
		switch {
		case step.wantStage != "" && (!errors.As(err, &cfgErr) || cfgErr.Stage != step.wantStage):
			t.Fatalf("%s: error = %v, want *ConfigError at stage %s", step.name, err, step.wantStage)
		case step.wantStage == "" && err != nil:
			t.Fatalf("%s: unexpected error %v", step.name, err)
		case step.wantActions == "" && cfg != nil:
			t.Fatalf("%s: unexpected reload to %q", step.name, cfg.Actions)
		case step.wantActions != "" && (cfg == nil || cfg.Actions != step.wantActions || w.Current() != cfg):
			t.Fatalf("%s: got %v, want a reload to %q", step.name, cfg, step.wantActions)
		case step.wantActions == "" && w.Current() != before:
			t.Fatalf("%s: the configuration in force changed", step.name)
		}
	}
}

func TestWatcherBadFileAtStartKeepsFallback(t *testing.T) {
	volume := newConfigMapVolume(t, "actions: \"teleport\"\n")
	fallback := DefaultConfiguration()
	w := NewWatcher(volume.path(), testNames, func() *SchedulerConfiguration { return fallback })
	changes, failures := runWatcher(t, w)

	if err := waitFailure(t, changes, failures); !strings.Contains(err.Error(), `action "teleport" is skipped`) {
		t.Fatalf("error = %v, want one naming action teleport", err)
	}
	if w.Current() != fallback || w.FromFile() {
		t.Fatalf("Current() is not the fallback after a bad file at start")
	}
	volume.update("v2", goodV1)
	waitChange(t, changes, failures, "enqueue, allocate")
}
