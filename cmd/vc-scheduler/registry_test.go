package main

import (
	"context"
	"slices"
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
	if len(components) != 4 {
		t.Fatalf("%d components, want deviceshare's, predicates', resourcequota's and pdb's", len(components))
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

// volcanoActions and volcanoPlugins are the names Volcano v1.15.1 registers (its
// pkg/scheduler/actions and pkg/scheduler/plugins factories): what a file written for it
// names.
var (
	volcanoActions = []string{"enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle"}
	volcanoPlugins = []string{"binpack", "capacity", "cdp", "conformance", "deviceshare", "drf", "extender", "gang",
		"network-topology-aware", "nodegroup", "nodeorder", "numa-aware", "overcommit", "pdb", "predicates", "priority",
		"proportion", "rescheduling", "resource-strategy-fit", "resourcequota", "sla", "task-topology", "tdm", "usage"}
)

// Every name Volcano v1.15 has is this scheduler's or described as Volcano's, and only those
// are described as Volcano's: a skipped name's reason never claims Volcano has a name it
// lacks (numaaware is only the directory of its numa-aware) or lacks one it has.
func TestUpstreamNamesAreVolcanos(t *testing.T) {
	registry := newRegistry(allocate.Options{})
	for _, tt := range []struct {
		kind       conf.SkipKind
		volcano    []string
		registered func(string) bool
	}{
		{conf.SkippedAction, volcanoActions, registry.IsAction},
		{conf.SkippedPlugin, volcanoPlugins, registry.IsPlugin},
	} {
		described := registry.Upstream(tt.kind)
		for _, name := range tt.volcano {
			_, lacking := described[name]
			if tt.registered(name) == lacking {
				t.Errorf("Volcano's %s %q: registered %t, described as one this scheduler lacks %t; want exactly one",
					tt.kind, name, tt.registered(name), lacking)
			}
		}
		for name := range described {
			if !slices.Contains(tt.volcano, name) {
				t.Errorf("%s %q is described as Volcano's, but Volcano v1.15 has none of this name", tt.kind, name)
			}
		}
	}
}

// Golden: what each kind of skipped name is told, word for word. A Volcano name this
// scheduler lacks says what it does there; a name Volcano lacks too says so, pointing to the
// nearest name either has.
func TestSkipReasonsSayWhatTheNameIsInVolcano(t *testing.T) {
	_, skipped, err := conf.Parse([]byte(`actions: "enqueue, allocate, shuffle, alocate, elect"
tiers:
- plugins:
  - name: gang
  - name: tdm
  - name: numaaware
  - name: nodegrup
  - name: capacity-card
  - name: deviceshre
`), newRegistry(allocate.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`actions: action "shuffle" is skipped: not implemented by this scheduler; in Volcano it evicts running pods that the rescheduling plugin picks, so that they are placed again`,
		`actions: action "alocate" is skipped: no action of this name in this scheduler or in Volcano; did you mean "allocate"?`,
		`actions: action "elect" is skipped: no action of this name in this scheduler or in Volcano`,
		`tiers[0].plugins[1]: plugin "tdm" is skipped: not implemented by this scheduler; in Volcano it runs pods on time-shared nodes only within their windows and evicts them when one ends`,
		`tiers[0].plugins[2]: plugin "numaaware" is skipped: no plugin of this name in this scheduler or in Volcano; did you mean "numa-aware", a Volcano plugin this scheduler does not implement yet?`,
		`tiers[0].plugins[3]: plugin "nodegrup" is skipped: no plugin of this name in this scheduler or in Volcano; did you mean "nodegroup"?`,
		`tiers[0].plugins[4]: plugin "capacity-card" is skipped: no plugin of this name in this scheduler or in Volcano`,
		`tiers[0].plugins[5]: plugin "deviceshre" is skipped: no plugin of this name in this scheduler or in Volcano; did you mean "deviceshare"?`,
	}
	var got []string
	for _, s := range skipped {
		got = append(got, s.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("skipped\n got %q\nwant %q", got, want)
	}
}
