package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
)

func TestUnknownArgumentIsAWarningEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
	if err := os.WriteFile(path, []byte(`actions: "enqueue, allocate"
tiers:
- plugins:
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolcy: binpack
`), 0o644); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)
	events := newConfigEvents(recorder, &options{})
	w, err := loadConfig(&options{schedulerConf: path}, newRegistry(allocate.Options{}), events)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Current().Tiers[0].Plugins[0].Name; got != "deviceshare" {
		t.Fatalf("configuration in force has %s, want the file's: an unknown key must not reject it", got)
	}
	select {
	case event := <-recorder.Events:
		for _, want := range []string{"Warning", ReasonUnknownPluginArgument, `"deviceshare.SchedulePolcy"`, `did you mean "deviceshare.SchedulePolicy"`} {
			if !strings.Contains(event, want) {
				t.Errorf("event %q does not contain %q", event, want)
			}
		}
	default:
		t.Fatal("no Event for the misspelt argument")
	}
	select {
	case event := <-recorder.Events:
		t.Errorf("unexpected second event %q", event)
	default:
	}
}
