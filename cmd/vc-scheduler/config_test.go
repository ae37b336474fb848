package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangpreempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangreclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
)

// The configurations users install (config/, which the chart reads) load with this binary's
// own actions and plugins, deviceshare among them.
func TestShippedConfigurationsLoad(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	for _, name := range []string{"volcano-scheduler.conf", "lab8-scheduler.conf"} {
		path := filepath.Join("..", "..", "config", name)
		cfg, skipped, err := conf.Load(path, registry)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		found := false
		for _, tier := range cfg.Tiers {
			for _, p := range tier.Plugins {
				found = found || p.Name == "deviceshare"
			}
		}
		if !found {
			t.Errorf("%s: no deviceshare plugin, so no vGPU scheduling", name)
		}
		// Everything they set applies.
		for _, s := range skipped {
			t.Errorf("%s: %v", name, s)
		}
	}
}

// Every plugin declares the argument keys it reads, and reads every key it declares: a
// value of the wrong type under a declared key is refused by the plugin.
func TestPluginsDeclareTheirArgumentKeys(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	for _, plugin := range registry.PluginNames() {
		keys, declared := registry.PluginArgumentKeys(plugin)
		if !declared {
			t.Errorf("plugin %s declares no argument keys", plugin)
			continue
		}
		for _, key := range keys {
			if strings.HasSuffix(key, "*") {
				continue
			}
			if _, err := registry.Plugin(plugin, conf.Arguments{key: []interface{}{"not", "a", "scalar"}}); err == nil {
				t.Errorf("plugin %s declares %q but accepts any value there: it does not read it", plugin, key)
			}
		}
	}
}

// A misspelt deviceshare argument is named, with the key that was meant.
func TestMisspeltArgumentNamesTheNearestKey(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	_, skipped, err := conf.Parse([]byte(`actions: "enqueue, allocate"
tiers:
- plugins:
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolcy: binpack
`), registry)
	if err != nil {
		t.Fatal(err)
	}
	want := `the plugin does not read it; did you mean "` + deviceshare.SchedulePolicyArg + `"?`
	if len(skipped) != 1 || skipped[0].Name != deviceshare.PluginName || skipped[0].Key != "deviceshare.SchedulePolcy" ||
		skipped[0].Reason != want {
		t.Errorf("skipped %v, want one for deviceshare.SchedulePolcy naming %s", skipped, deviceshare.SchedulePolicyArg)
	}
}

// Upstream's proportional predicate loads as upstream's docs write it, every key read; a
// refused value or a stray rate key is reported with its reason and dropped, and the rest of
// the entry applies.
func TestProportionalArgumentsLoad(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	load := func(arguments string) []string {
		t.Helper()
		_, skipped, err := conf.Parse([]byte(`actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
    arguments:
      predicate.ProportionalEnable: true
`+arguments), registry)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range skipped {
			got = append(got, s.Error())
		}
		return got
	}
	if got := load(`      predicate.resources: nvidia.com/gpu,volcano.sh/vgpu-number
      predicate.resources.nvidia.com/gpu.cpu: 4
      predicate.resources.nvidia.com/gpu.memory: 8
      predicate.resources.volcano.sh/vgpu-number.cpu: 0.4
`); len(got) != 0 {
		t.Errorf("upstream's arguments skipped: %q", got)
	}
	got := load(`      predicate.resources: nvidia.com/gpu
      predicate.resources.nvidia.com/gpu.cpu: -4
      predicate.resources.nvidia.com/gpu.mem: 8
`)
	want := []string{
		`tiers[0].plugins[0]: plugin predicates: argument "predicate.resources.nvidia.com/gpu.cpu": rate -4: want a number of 0 or more; the plugin's default applies`,
		`tiers[0].plugins[0]: plugin predicates: argument "predicate.resources.nvidia.com/gpu.mem": not the .cpu or .memory rate of a resource predicate.resources lists; the plugin's default applies`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("skipped\n got %q\nwant %q", got, want)
	}
}

// upstreamConfs are the scheduler configurations of clusters that run upstream Volcano with
// vGPU (testdata/upstream-confs, each file says what it stands for), with exactly what each
// skips here. Every one loads, and deviceshare schedules vGPU wherever the file turns it on.
var upstreamConfs = []struct {
	file    string
	skipped []string
}{
	{"01-chart-default.conf", nil},
	{"02-gpu-preempt-reclaim.conf", nil},
	{"03-hierarchical-capacity.conf", nil},
	{"04-pools-and-topology.conf", nil},
	{"05-newer-plugins.conf", []string{"action shuffle", "plugin network-topology-aware", "plugin usage", "plugin rescheduling"}},
	{"06-gang-eviction-v115.conf", nil},
}

func TestUpstreamConfsLoad(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	for _, tt := range upstreamConfs {
		path := filepath.Join("testdata", "upstream-confs", tt.file)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, skipped, err := conf.Load(path, registry)
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if got := conf.SkippedLabels(skipped); !slices.Equal(got, tt.skipped) {
			t.Errorf("%s: skipped\n got %q\nwant %q", tt.file, got, tt.skipped)
		}
		for _, s := range skipped {
			if !strings.HasPrefix(s.Reason, "not implemented by this scheduler; in Volcano it ") && s.Kind != conf.SkippedArgument && s.Kind != conf.SkippedSetting {
				t.Errorf("%s: %v does not say what Volcano's %s does", tt.file, s, s.Name)
			}
		}
		wantVGPU := strings.Contains(string(text), "deviceshare.VGPUEnable: true")
		if got := vgpuEnabled(cfg); got != wantVGPU {
			t.Errorf("%s: vGPU scheduling %v, want %v", tt.file, got, wantVGPU)
		}
	}
}

// Volcano v1.15's gangpreempt and gangreclaim are actions of their own, as there: a file that
// names them beside preempt and reclaim runs every one, in its order.
func TestGangActionsAreActionsOfTheirOwn(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	cfg, skipped, err := conf.Parse([]byte(`actions: "enqueue, allocate, gangpreempt, preempt, reclaim, gangreclaim, backfill"
tiers:
- plugins:
  - name: gang
`), registry)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("skipped %v, err %v", skipped, err)
	}
	if got, want := cfg.ActionNames(), []string{"enqueue", "allocate", "gangpreempt", "preempt", "reclaim", "gangreclaim", "backfill"}; !slices.Equal(got, want) {
		t.Errorf("actions %q, want %q", got, want)
	}
	for _, name := range []string{gangpreempt.Name, gangreclaim.Name} {
		if a, ok := registry.Action(name); !ok || a.Name() != name {
			t.Errorf("action %s: want it registered under its own name", name)
		}
	}
}

// vgpuEnabled: cfg runs deviceshare with vGPU scheduling on, as run asks the registry.
func vgpuEnabled(cfg *conf.SchedulerConfiguration) bool {
	return newRegistry(allocate.Options{}).Places(cfg, deviceshare.PluginName)
}
