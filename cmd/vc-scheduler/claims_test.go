//go:build unix

package main

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// A pod with DRA resource claims is never bound, with or without predicates in the
// configuration: its gang's reason names the claims and says why, and a pod without claims
// beside it is bound.
func TestResourceClaimsAreRefused(t *testing.T) {
	withoutPredicates := conf.DefaultConfiguration()
	withoutPredicates.Tiers[1].Plugins = slices.DeleteFunc(withoutPredicates.Tiers[1].Plugins,
		func(p conf.PluginOption) bool { return p.Name == predicates.PluginName })
	for name, cfg := range map[string]*conf.SchedulerConfiguration{"default": conf.DefaultConfiguration(), "without predicates": withoutPredicates} {
		t.Run(name, func(t *testing.T) {
			claimed := st.Pod("train", "1", "").Group("train").Obj()
			claimed.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}, {Name: "nic"}}
			plain := st.Pod("plain", "1", "").Group("plain").Obj()
			cache, job := cycle(t, cfg, cpuNodes(2, func(int) map[string]string { return nil }), []*corev1.Pod{claimed, plain})
			if binds := cache.Binds(); len(binds) != 1 || binds["ns/plain"] == "" {
				t.Errorf("bound %v, want only the pod without claims", binds)
			}
			const want = "pod ns/train uses DRA resource claims (gpu, nic), which this scheduler does not allocate"
			if msg := job.FitError(); !strings.Contains(msg, want) {
				t.Errorf("the gang's reason %q, want it to say %q", msg, want)
			}
		})
	}
}

// Upstream's DRA switch loads, reported as not acted on, with why.
func TestDRASwitchIsReportedWithWhy(t *testing.T) {
	_, skipped, err := conf.Parse([]byte(`actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
`), newRegistry(allocate.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || skipped[0].Key != "predicate.DynamicResourceAllocationEnable" ||
		!strings.Contains(skipped[0].Reason, "a pod with spec.resourceClaims is refused") {
		t.Errorf("skipped %v, want the DRA switch, saying pods with claims are refused", skipped)
	}
}

// A bind timeout the predicates plugin refuses is reported naming the plugin and the key, and
// the plugin runs with the default; a good one loads without a word.
func TestBindTimeoutSecondsLoads(t *testing.T) {
	file := func(value string) []byte {
		return []byte(`actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
    arguments:
      volumebinding.bindTimeoutSeconds: ` + value + "\n")
	}
	if _, skipped, err := conf.Parse(file("1200"), newRegistry(allocate.Options{})); err != nil || len(skipped) != 0 {
		t.Errorf("1200: skipped %v, error %v; want it loaded as is", skipped, err)
	}
	_, skipped, err := conf.Parse(file("-30"), newRegistry(allocate.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	const want = `tiers[0].plugins[0]: plugin predicates: argument "volumebinding.bindTimeoutSeconds": -30 seconds: want 0 (no wait for the PV controller) to 9223372036; the plugin's default applies`
	if len(skipped) != 1 || skipped[0].Error() != want {
		t.Errorf("skipped %v, want %q", skipped, want)
	}
}
