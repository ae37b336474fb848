// Package scheduler runs the scheduling cycles: every period it opens a session on the
// current configuration, executes the configured actions in order and closes the session.
// Cycles never overlap; a new one starts one period after the previous one ends, or sooner
// when the cache reports newly schedulable work (see WakeOn).
package scheduler

import (
	"context"
	"time"

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
	metrics  *metrics.Set
	period   time.Duration
	// arrivals, when set, reports newly schedulable work.
	arrivals <-chan struct{}
	// queueStatusAt is when the last cycle that summed the queues' allocation started.
	queueStatusAt time.Time
	// settled holds what the last quiet cycle saw (the cache's change count and the
	// configuration), and when the last cycle ran; queueStatusOwed: a cycle since the last
	// queue summing may have changed the queues' allocation.
	settled         settledState
	lastRun         time.Time
	queueStatusOwed bool
}

// settledState is a quiet cycle's view: nothing has happened since while both stay the same.
type settledState struct {
	valid   bool
	changes uint64
	config  *conf.SchedulerConfiguration
}

// settledRunEvery bounds how long cycles are skipped while nothing changes: a full cycle
// still runs this often, for what depends on time alone (a dangling pod's report).
const settledRunEvery = 10 * time.Second

// New builds a scheduler. config is read at the start of every cycle (a hot-reloaded file
// applies from the next cycle). Its cycles, and the sessions they open, record into m (nil:
// nothing is recorded).
func New(cache framework.Cache, config func() *conf.SchedulerConfiguration, registry *framework.Registry, m *metrics.Set, period time.Duration) *Scheduler {
	return &Scheduler{cache: cache, config: config, registry: registry, metrics: m, period: period}
}

// WakeOn makes Run start a cycle before the period is out when arrivals reports newly
// schedulable work, such as a gang whose last pod arrived: that gang would otherwise wait up to
// a period although nothing stops it. The cycle still waits after the previous one for as
// long as that one took, and at least a fifth of the period, so that the scheduler never takes
// more than half of a core and a steady stream of single pods costs at most five cycles per
// period.
func (s *Scheduler) WakeOn(arrivals <-chan struct{}) { s.arrivals = arrivals }

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	for first := true; ctx.Err() == nil; first = false {
		start := time.Now()
		s.runOnce(ctx.Done())
		if first {
			// After a restart, an operator (and the restart benchmark) reads here when
			// scheduling resumed and what its first look at the whole cluster cost.
			klog.InfoS("First scheduling cycle done", "duration", time.Since(start))
		}
		if !s.waitForNext(ctx, time.Since(start)) {
			return
		}
	}
}

// waitForNext waits for the next cycle's time: a period, or the shorter gap after work
// arrived. false when ctx ended.
func (s *Scheduler) waitForNext(ctx context.Context, took time.Duration) bool {
	ended := time.Now()
	period := time.NewTimer(s.period)
	defer period.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-period.C:
		return true
	case <-s.arrivals: // nil without WakeOn: never ready
	}
	gap := max(s.period/minGapDivisor, took) - time.Since(ended)
	if gap <= 0 {
		return true
	}
	soon := time.NewTimer(gap)
	defer soon.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-period.C:
	case <-soon.C:
	}
	return true
}

// minGapDivisor sets the least time between cycles that work arriving may bring about: a
// fifth of the period.
const minGapDivisor = 5

// RunOnce is one scheduling cycle. A cycle with nothing to do is skipped, costing nothing
// but a check (and counted in the cycle latency metric as upstream's idle cycle is): the cache
// has seen no change since a quiet cycle, under the same configuration, with the queues'
// allocation written since; at 50,000 bound pods a full cycle's snapshot alone takes a
// few hundred milliseconds.
func (s *Scheduler) RunOnce() { s.runOnce(nil) }

// runOnce is RunOnce, cut short once stop is closed: no further action runs, the action under
// way returns between jobs, and the session is abandoned (what was committed stays, nothing
// else is written).
func (s *Scheduler) runOnce(stop <-chan struct{}) {
	start := time.Now()
	cfg := s.config()
	counter, counts := s.cache.(framework.ChangeCounter)
	if counts && s.settled.valid && s.settled.config == cfg && !s.queueStatusOwed &&
		start.Sub(s.lastRun) < settledRunEvery && counter.Changes() == s.settled.changes {
		s.metrics.ObserveCycle(start)
		return
	}
	var changes uint64
	if counts {
		changes = counter.Changes() // before the snapshot: a change it may miss is counted after
	}
	s.lastRun = start
	ssn := framework.OpenSessionUntil(stop, s.cache, cfg, s.registry, s.metrics)
	// Summing every queue's allocation walks every task: once a period is enough, as
	// upstream does, however many cycles arriving work brings about in between.
	ssn.SkipQueueStatus = start.Sub(s.queueStatusAt) < s.period
	if !ssn.SkipQueueStatus {
		s.queueStatusAt = start
	}
	for _, name := range cfg.ActionNames() {
		if ssn.Stopping() {
			break
		}
		action, ok := s.registry.Action(name)
		if !ok {
			continue // validation keeps unknown names out of a loaded configuration
		}
		t := time.Now()
		action.Execute(ssn)
		s.metrics.ObserveAction(name, t)
	}
	if ssn.Stopping() {
		framework.AbandonSession(ssn)
		klog.InfoS("Scheduling cycle cut short: stopping", "session", ssn.UID, "duration", time.Since(start))
		return
	}
	framework.CloseSession(ssn)
	// A cycle runs because something changed, which may change the queues' allocation.
	s.queueStatusOwed = ssn.SkipQueueStatus
	s.settled = settledState{valid: ssn.Quiet, changes: changes, config: cfg}
	s.metrics.ObserveCycle(start)
	klog.V(4).InfoS("Scheduling cycle done", "session", ssn.UID, "jobs", len(ssn.Jobs), "nodes", len(ssn.NodeList), "duration", time.Since(start))
}
