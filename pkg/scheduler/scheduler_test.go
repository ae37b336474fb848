package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// Work arriving starts a cycle before the period is out: a fifth of the period after the
// previous one.
func TestArrivalStartsACycle(t *testing.T) {
	const period = 3 * time.Second
	c := &frameworktest.Cache{} // an empty cluster; one snapshot a cycle
	s := New(c, func() *conf.SchedulerConfiguration { return &conf.SchedulerConfiguration{} }, framework.NewRegistry(), nil, period)
	arrivals := make(chan struct{}, 1)
	s.WakeOn(arrivals)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitFor := func(cycles int32) {
		t.Helper()
		deadline := time.Now().Add(period / 2)
		for c.Snapshots.Load() < cycles {
			if time.Now().After(deadline) {
				t.Fatalf("%d cycles after half the period, want %d", c.Snapshots.Load(), cycles)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1) // the first cycle starts at once
	for want := int32(2); want <= 3; want++ {
		arrivals <- struct{}{}
		waitFor(want)
	}
}

// countingCache is a fake cache that counts its changes as the real one does.
type countingCache struct {
	frameworktest.Cache
	changes atomic.Uint64
}

func (c *countingCache) Changes() uint64 { return c.changes.Load() }

// A cycle with nothing to do is skipped while the cache reports no change, under the same
// configuration, once the queues' allocation has been summed since the last change; a
// pending pod keeps every cycle running.
func TestQuietCyclesAreSkipped(t *testing.T) {
	cfg := &conf.SchedulerConfiguration{}
	c := &countingCache{}
	s := New(c, func() *conf.SchedulerConfiguration { return cfg }, framework.NewRegistry(), nil, time.Hour)
	cycles := func(want int32, why string) {
		t.Helper()
		s.RunOnce()
		if got := c.Snapshots.Load(); got != want {
			t.Errorf("%s: %d cycles ran, want %d", why, got, want)
		}
	}
	cycles(1, "the first cycle")
	cycles(1, "nothing changed since a quiet cycle")
	c.changes.Add(1)
	cycles(2, "the cache changed")
	cycles(3, "the queues' allocation not summed since the change") // within the hour's period
	s.queueStatusAt = time.Time{}
	cycles(4, "the queues summed")
	cycles(4, "quiet again")
	cfg = &conf.SchedulerConfiguration{}
	s.queueStatusAt = time.Time{}
	cycles(5, "a new configuration")
	cycles(5, "quiet under it")

	c.Snap = frameworktest.ClusterOf(nil, frameworktest.JobOf(
		&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg"}, Spec: schedulingv1beta1.PodGroupSpec{MinMember: 1}},
		st.Pod("p", "1", "").Group("pg").Obj()))
	c.changes.Add(1)
	s.queueStatusAt = time.Time{}
	cycles(6, "a pod arrived")
	cycles(7, "the pod still waits for a node")
}

// noop is an action that does nothing.
type noop struct{}

func (noop) Name() string               { return "noop" }
func (noop) Execute(*framework.Session) {}

// A cycle records into the scheduler's metrics: the cycle's latency once, and each action's
// under its name.
func TestCycleMetrics(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	registry := framework.NewRegistry()
	registry.RegisterAction(noop{})
	cfg := &conf.SchedulerConfiguration{Actions: "noop"}
	New(&frameworktest.Cache{}, func() *conf.SchedulerConfiguration { return cfg }, registry, m, time.Second).RunOnce()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]uint64{}
	for _, f := range families {
		for _, s := range f.Metric {
			name := f.GetName()
			for _, l := range s.Label {
				name += " " + l.GetName() + "=" + l.GetValue()
			}
			observed[name] = s.GetHistogram().GetSampleCount()
		}
	}
	for _, name := range []string{"volcano_e2e_scheduling_latency_milliseconds", "volcano_action_scheduling_latency_milliseconds action=noop"} {
		if observed[name] != 1 {
			t.Errorf("%s observed %d times, want once", name, observed[name])
		}
	}
}

// stopper is an action that stops the scheduler while it runs, as SIGTERM in the middle of a
// cycle does.
type stopper struct{ stop context.CancelFunc }

func (stopper) Name() string                 { return "stopper" }
func (a stopper) Execute(*framework.Session) { a.stop() }

// counted is an action that counts its runs.
type counted struct{ runs *int }

func (counted) Name() string                 { return "counted" }
func (a counted) Execute(*framework.Session) { *a.runs++ }

// A stop in the middle of a cycle cuts it short: no further action runs, the session is
// handed back to the cache without its status writes (the queues' allocation, due in this
// first cycle, is not written), and Run returns.
func TestStopCutsTheCycleShort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	registry := framework.NewRegistry()
	registry.RegisterAction(stopper{cancel})
	registry.RegisterAction(counted{&runs})
	cfg := &conf.SchedulerConfiguration{Actions: "stopper, counted"}
	c := runUntilStopped(t, ctx, registry, cfg)
	if runs != 0 {
		t.Errorf("the action after the stop ran %d times", runs)
	}
	if c.Released == nil {
		t.Error("the cut-short session was not handed back to the cache")
	}
	if len(c.Allocated) != 0 {
		t.Errorf("the cut-short session wrote queue status: %v", c.Allocated)
	}
}

// openPlugin is a plugin that runs open when its session opens.
type openPlugin struct {
	name string
	open func()
}

func (p openPlugin) Name() string                      { return p.name }
func (p openPlugin) OnSessionOpen(*framework.Session)  { p.open() }
func (p openPlugin) OnSessionClose(*framework.Session) {}

// A stop while the session opens (the first cycle after a start, whose plugins build their
// state from every job, is the longest) opens no further plugin and runs no action.
func TestStopWhileTheSessionOpens(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs, opened := 0, 0
	registry := framework.NewRegistry()
	registry.RegisterAction(counted{&runs})
	registry.RegisterPlugin("stopping", func(conf.Arguments) (framework.Plugin, error) {
		return openPlugin{"stopping", cancel}, nil
	})
	registry.RegisterPlugin("later", func(conf.Arguments) (framework.Plugin, error) {
		return openPlugin{"later", func() { opened++ }}, nil
	})
	cfg := &conf.SchedulerConfiguration{Actions: "counted", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: "stopping"}}}, {Plugins: []conf.PluginOption{{Name: "later"}}},
	}}
	c := runUntilStopped(t, ctx, registry, cfg)
	if opened != 0 || runs != 0 {
		t.Errorf("after a stop in the session's opening, %d plugins opened and %d actions ran, want none", opened, runs)
	}
	if c.Released == nil {
		t.Error("the cut-short session was not handed back to the cache")
	}
}

// runUntilStopped runs a scheduler over a cache of one queue until ctx ends, which something
// the configuration runs must bring about, and returns the cache.
func runUntilStopped(t *testing.T, ctx context.Context, registry *framework.Registry, cfg *conf.SchedulerConfiguration) *frameworktest.Cache {
	t.Helper()
	c := &frameworktest.Cache{Snap: frameworktest.Objects{Queues: []*schedulingv1beta1.Queue{{ObjectMeta: metav1.ObjectMeta{Name: "q"}}}}.ClusterInfo()}
	done := make(chan struct{})
	go func() {
		New(c, func() *conf.SchedulerConfiguration { return cfg }, registry, nil, time.Hour).Run(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
	return c
}
