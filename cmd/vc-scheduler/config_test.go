package main

import (
	"path/filepath"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
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
	}
}
