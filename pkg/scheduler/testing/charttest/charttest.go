// Package charttest gives the actions' tests the configuration the chart ships
// (config/volcano-scheduler.conf) with actions of their choosing, over a registry of every
// plugin it names: the shape their decisions must hold in.
package charttest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/binpack"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/drf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/nodeorder"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/overcommit"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
)

// Registry has every plugin the chart's configuration names, deviceshare's sessions sharing
// shared, and the actions given.
func Registry(shared *deviceshare.Shared, actions ...framework.Action) *framework.Registry {
	reg := framework.NewRegistry()
	for _, a := range actions {
		reg.RegisterAction(a)
	}
	for name, build := range map[string]framework.PluginBuilder{
		priority.PluginName: priority.New, gang.PluginName: gang.New, conformance.PluginName: conformance.New,
		overcommit.PluginName: overcommit.New, drf.PluginName: drf.New, predicates.PluginName: predicates.New,
		proportion.PluginName: proportion.New, nodeorder.PluginName: nodeorder.New, binpack.PluginName: binpack.New,
		deviceshare.PluginName: deviceshare.NewBuilder(shared),
	} {
		reg.RegisterPlugin(name, build)
	}
	return reg
}

// Text is the chart's configuration file with actions in place of its own.
func Text(t testing.TB, actions string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "..", "..", "config", "volcano-scheduler.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const own = `"enqueue, allocate, backfill"`
	if !strings.Contains(string(data), own) {
		t.Fatalf("%s: no actions line %s to replace", path, own)
	}
	return strings.Replace(string(data), own, `"`+actions+`"`, 1)
}

// Conf is the chart's configuration with actions in place of its own and more text appended
// (configurations of actions), parsed with reg; a name it skips fails the test.
func Conf(t testing.TB, reg *framework.Registry, actions, more string) *conf.SchedulerConfiguration {
	t.Helper()
	return Parse(t, reg, Text(t, actions)+more)
}

// Parse parses a configuration with reg; an error or a skipped name fails the test.
func Parse(t testing.TB, reg *framework.Registry, text string) *conf.SchedulerConfiguration {
	t.Helper()
	cfg, skipped, err := conf.Parse([]byte(text), reg)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("configuration: skipped %v, err %v\n%s", skipped, err, text)
	}
	return cfg
}
