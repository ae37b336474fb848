package frameworktest

import (
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// RunActions loads cfg against registry as the scheduler does (conf.Resolve; a test's
// configuration must lose nothing to it), opens a session over cache and runs the actions it
// resolves to, in order and under the names it gives them, as one cycle would (recording no
// metrics).
func RunActions(t testing.TB, cache framework.Cache, cfg *conf.SchedulerConfiguration, registry *framework.Registry) *framework.Session {
	t.Helper()
	resolved, skipped, err := conf.Resolve(cfg, registry)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("configuration %q: skipped %v, err %v", cfg.Actions, skipped, err)
	}
	ssn := framework.OpenSession(cache, resolved, registry, nil)
	for _, name := range resolved.ActionNames() {
		action, _ := registry.Action(name)
		action.Execute(ssn)
	}
	return ssn
}
