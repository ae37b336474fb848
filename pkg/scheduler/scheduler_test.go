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
	s := New(c, func() *conf.SchedulerConfiguration { return &conf.SchedulerConfiguration{} }, framework.NewRegistry(), period)
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
