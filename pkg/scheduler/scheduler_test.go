package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
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
