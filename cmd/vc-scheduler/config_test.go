package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
)

// The configurations users install (config/, which the chart reads) load with this binary's
// own actions and plugins, deviceshare among them.
func TestShippedConfigurationsLoad(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	for _, name := range []string{"volcano-scheduler.conf", "lab8-scheduler.conf"} {
		path := filepath.Join("..", "..", "config", name)
		cfg, err := conf.Load(path, registry)
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
		// Every argument they set is one a plugin reads.
		for _, u := range conf.UnknownArguments(cfg, registry) {
			t.Errorf("%s: %v", name, u)
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
	cfg, err := conf.Parse([]byte(`actions: "enqueue, allocate"
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
	unknown := conf.UnknownArguments(cfg, registry)
	if len(unknown) != 1 || unknown[0].Plugin != deviceshare.PluginName || unknown[0].Key != "deviceshare.SchedulePolcy" ||
		unknown[0].Nearest != deviceshare.SchedulePolicyArg {
		t.Errorf("warnings %v, want one for deviceshare.SchedulePolcy naming %s", unknown, deviceshare.SchedulePolicyArg)
	}
}
