package main

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
)

// TestInvalidConfigAtStartIsAWarningEvent: a volcano-scheduler.conf that does not validate at
// start leaves the built-in configuration in force, with one InvalidSchedulerConfig Warning
// Event saying where the file is wrong (docs/bad-input.md).
func TestInvalidConfigAtStartIsAWarningEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
	if err := os.WriteFile(path, []byte("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gnag\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)
	w, err := loadConfig(&options{schedulerConf: path}, newRegistry(allocate.Options{}), newConfigEvents(recorder, &options{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Current().Tiers[0].Plugins[0].Name; got == "gnag" {
		t.Fatal("the rejected file is in force")
	}
	want := "Warning InvalidSchedulerConfig scheduler configuration " + path + `: validate: tiers[0].plugins[0]: unknown plugin "gnag"`
	select {
	case got := <-recorder.Events:
		if got != want {
			t.Errorf("event\n got %q\nwant %q", got, want)
		}
	default:
		t.Fatal("no Event for the invalid file")
	}
}
