package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// loadFile starts the configuration as run does, for a file with text, with nodes vGPU nodes.
func loadFile(t *testing.T, text string, nodes int) (*conf.Watcher, *configReport, *record.FakeRecorder) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(20)
	report := newConfigReport(newConfigEvents(recorder, &options{}), path, func(string) int { return nodes }, vgpuEnabled)
	w, err := loadConfig(&options{schedulerConf: path}, newRegistry(allocate.Options{}), report)
	if err != nil {
		t.Fatal(err)
	}
	return w, report, recorder
}

func drain(recorder *record.FakeRecorder) []string {
	var events []string
	for {
		select {
		case e := <-recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// A file naming an action this scheduler lacks (shuffle) is in force without them, deviceshare
// included, and the operator reads which were skipped and what they would have done in
// Events, the gauge and /status.
func TestSkippedNamesAreReportedEverywhere(t *testing.T) {
	text := `actions: "enqueue, allocate, shuffle, backfill"
tiers:
- plugins:
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
`
	w, report, recorder := loadFile(t, text, 0)
	if !vgpuEnabled(w.Current()) || !w.FromFile() {
		t.Fatal("the file's deviceshare is not in force")
	}
	want := []string{
		"Warning SkippedSchedulerAction actions: action \"shuffle\" is skipped: not implemented by this scheduler; in Volcano it " + upstreamActions["shuffle"],
	}
	if got := drain(recorder); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}

	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(report.Collectors()...)
	if err := testutil.GatherAndCompare(registry, strings.NewReader(`
# HELP volcano_scheduler_conf_builtin 1 while the built-in scheduler configuration is in force because no file is given or none could be used
# TYPE volcano_scheduler_conf_builtin gauge
volcano_scheduler_conf_builtin 0
# HELP volcano_scheduler_conf_skipped 1 for each part of the scheduler configuration in force that is not applied, by kind (action, plugin, argument, argument-value, setting) and name (plugin/argument for arguments and settings)
# TYPE volcano_scheduler_conf_skipped gauge
volcano_scheduler_conf_skipped{kind="action",name="shuffle"} 1
# HELP volcano_vgpu_unscheduled_nodes Nodes with vGPU registered while the scheduler configuration in force does not schedule vGPU (no deviceshare with deviceshare.VGPUEnable: true), so that pods requesting vGPU stay Pending
# TYPE volcano_vgpu_unscheduled_nodes gauge
volcano_vgpu_unscheduled_nodes 0
`)); err != nil {
		t.Error(err)
	}

	status := httptest.NewRecorder()
	report.ServeHTTP(status, httptest.NewRequest("GET", "/status", nil))
	for _, line := range []string{"configuration: " + w.Path() + ", in force since ", "skipped: 1\n",
		"  action shuffle: actions: action \"shuffle\" is skipped: "} {
		if !strings.Contains(status.Body.String(), line) {
			t.Errorf("/status\n%s\nlacks %q", status.Body.String(), line)
		}
	}
}

// A plugin argument whose value is refused gives way to the plugin's default; the plugin and
// its other arguments stay (vGPU scheduling among them).
func TestInvalidArgumentValueKeepsThePlugin(t *testing.T) {
	w, _, recorder := loadFile(t, `actions: "enqueue, allocate"
tiers:
- plugins:
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.ScheduleWeight: -3
`, 0)
	if !vgpuEnabled(w.Current()) {
		t.Fatal("vGPU scheduling is off after a bad weight")
	}
	want := `Warning InvalidPluginArgument tiers[0].plugins[0]: plugin deviceshare: argument "deviceshare.ScheduleWeight": weight -3 is negative; the plugin's default applies`
	if got := drain(recorder); len(got) != 1 || got[0] != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A file that cannot be used at all leaves the built-in configuration in force, with an
// InvalidSchedulerConfig Event (docs/bad-input.md); that one schedules vGPU as soon as a
// device plugin has registered it on a node.
func TestUnusableFileKeepsTheBuiltinWithVGPU(t *testing.T) {
	for _, tt := range []struct {
		nodes    int
		wantVGPU bool
	}{{0, false}, {3, true}} {
		w, report, recorder := loadFile(t, "actions: [enqueue\n", tt.nodes)
		if w.FromFile() || vgpuEnabled(w.Current()) != tt.wantVGPU {
			t.Errorf("%d vGPU nodes: from file %v, vGPU %v, want the built-in with vGPU %v", tt.nodes, w.FromFile(), vgpuEnabled(w.Current()), tt.wantVGPU)
		}
		events := drain(recorder)
		if len(events) != 1 || !strings.HasPrefix(events[0], "Warning InvalidSchedulerConfig scheduler configuration "+w.Path()+": parse: ") {
			t.Errorf("events %q, want one InvalidSchedulerConfig naming the file", events)
		}
		status := httptest.NewRecorder()
		report.ServeHTTP(status, httptest.NewRequest("GET", "/status", nil))
		want := "configuration: built-in (no node has registered vGPU: deviceshare off)\n"
		if tt.wantVGPU {
			want = "configuration: built-in, with deviceshare (nodes with vGPU registered: 3)\n"
		}
		if body := status.Body.String(); !strings.HasPrefix(body, want) || !strings.Contains(body, "rejected: scheduler configuration ") {
			t.Errorf("/status\n%s\nwant it to start %q and say why the file is not in force", body, want)
		}
	}
}

// The built-in configuration with vGPU resolves whole: every name in it is this binary's.
func TestBuiltinWithVGPUResolves(t *testing.T) {
	cfg, skipped, err := conf.Resolve(builtinWithVGPU(), newRegistry(allocate.Options{}))
	if err != nil || skipped != nil || !vgpuEnabled(cfg) {
		t.Errorf("built-in with vGPU: %v, skipped %v, vGPU %v", err, skipped, vgpuEnabled(cfg))
	}
}
