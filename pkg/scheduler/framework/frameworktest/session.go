package frameworktest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// OpenSession opens a session over cache whose configuration has the actions and one tier of
// the entries, each built by the builder of its name. An entry that does not build fails the
// test, where the session would only leave it out. The session records no metrics.
func OpenSession(t testing.TB, cache framework.Cache, actions string, builders map[string]framework.PluginBuilder, tier ...conf.PluginOption) *framework.Session {
	t.Helper()
	return OpenRecording(t, nil, cache, actions, builders, tier...)
}

// OpenRecording is OpenSession with a session whose plugins and actions record into m, for a
// test that scrapes what they record.
func OpenRecording(t testing.TB, m *metrics.Set, cache framework.Cache, actions string, builders map[string]framework.PluginBuilder, tier ...conf.PluginOption) *framework.Session {
	t.Helper()
	reg := framework.NewRegistry()
	for name, build := range builders {
		reg.RegisterPlugin(name, build)
	}
	for _, entry := range tier {
		if _, err := reg.Plugin(entry.Name, entry.Arguments); err != nil {
			t.Fatalf("plugin %s: %v", entry.Name, err)
		}
	}
	return framework.OpenSession(cache, &conf.SchedulerConfiguration{Actions: actions, Tiers: []conf.Tier{{Plugins: tier}}}, reg, m)
}

// OpenTiers opens a session over cache whose configuration is cfg with a tier of each list of
// plugins, in order; each plugin is registered under its name and built as itself. The
// session records no metrics.
func OpenTiers[P framework.Plugin](cache framework.Cache, cfg conf.SchedulerConfiguration, tiers ...[]P) *framework.Session {
	return OpenTiersRecording(nil, cache, cfg, tiers...)
}

// OpenTiersRecording is OpenTiers with a session whose plugins and actions record into m.
func OpenTiersRecording[P framework.Plugin](m *metrics.Set, cache framework.Cache, cfg conf.SchedulerConfiguration, tiers ...[]P) *framework.Session {
	reg := framework.NewRegistry()
	for _, tier := range tiers {
		var entries []conf.PluginOption
		for _, p := range tier {
			reg.RegisterPlugin(p.Name(), func(conf.Arguments) (framework.Plugin, error) { return p, nil })
			entries = append(entries, conf.PluginOption{Name: p.Name()})
		}
		cfg.Tiers = append(cfg.Tiers, conf.Tier{Plugins: entries})
	}
	return framework.OpenSession(cache, &cfg, reg, m)
}

// RegisteredMetrics is a new metrics set on a pedantic registry of its own, for a test to
// record a session into (OpenRecording) and scrape.
func RegisteredMetrics() (*metrics.Set, *prometheus.Registry) {
	m, reg := metrics.New(), prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	return m, reg
}
