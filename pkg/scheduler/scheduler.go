// Package scheduler runs the scheduling cycles: every period it opens a session on the
// current configuration, executes the configured actions in order and closes the session.
// Cycles never overlap; a new one starts one period after the previous one ends.
package scheduler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// Scheduler ties the cache, the configuration and the registry together.
type Scheduler struct {
	cache    framework.Cache
	config   func() *conf.SchedulerConfiguration
	registry *framework.Registry
	period   time.Duration
}

// New builds a scheduler. config is read at the start of every cycle (a hot-reloaded file
// applies from the next cycle).
func New(cache framework.Cache, config func() *conf.SchedulerConfiguration, registry *framework.Registry, period time.Duration) *Scheduler {
	return &Scheduler{cache: cache, config: config, registry: registry, period: period}
}

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) { s.RunOnce() }, s.period)
}

// RunOnce is one scheduling cycle.
func (s *Scheduler) RunOnce() {
	start := time.Now()
	cfg := s.config()
	ssn := framework.OpenSession(s.cache, cfg, s.registry)
	for _, name := range cfg.ActionNames() {
		action, ok := s.registry.Action(name)
		if !ok {
			continue // validation keeps unknown names out of a loaded configuration
		}
		t := time.Now()
		action.Execute(ssn)
		metrics.ActionLatency.WithLabelValues(name).Observe(metrics.Since(t))
	}
	framework.CloseSession(ssn)
	metrics.E2ESchedulingLatency.Observe(metrics.Since(start))
	klog.V(4).InfoS("Scheduling cycle done", "session", ssn.UID, "jobs", len(ssn.Jobs), "nodes", len(ssn.NodeList), "duration", time.Since(start))
}
