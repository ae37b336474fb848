package main

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
)

// The cluster registry's components run as run does them, all alike: their collectors
// register on one registry without a clash, each starts on the cache (deviceshare adds its
// deriver), each takes the configuration, and checking that configuration builds the volume
// plugins over the cache's informers.
func TestClusterComponentsRunAlike(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	registry := newClusterRegistry(allocate.Options{}, client, nil)
	components := registry.Components()
	if len(components) != 2 {
		t.Fatalf("%d components, want deviceshare's and predicates'", len(components))
	}
	served := prometheus.NewPedanticRegistry()
	cache := &frameworktest.ComponentCache{Factory: informers.NewSharedInformerFactory(client, 0)}
	for _, c := range components {
		served.MustRegister(c.Collectors()...)
		c.Start(ctx, cache)
	}
	if len(cache.Derivers) != 1 || cache.Derivers[0].Name() != deviceshare.PluginName {
		t.Errorf("device derivers %v, want deviceshare's", cache.Derivers)
	}
	cfg := builtinWithVGPU()
	for _, c := range components {
		c.Configure(ctx, cfg)
	}
	if _, _, err := conf.Resolve(cfg, registry); err != nil {
		t.Errorf("the built-in configuration with vGPU: %v", err)
	}
	if _, err := served.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
}

// Without an API server only deviceshare keeps a component: predicates decides no volumes.
func TestRegistryWithoutAPIServer(t *testing.T) {
	if n := len(newRegistry(allocate.Options{}).Components()); n != 1 {
		t.Errorf("%d components, want deviceshare's", n)
	}
}
