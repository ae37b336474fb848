package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// countingCache is an empty cluster that counts the cycles (one snapshot each).
type countingCache struct{ cycles atomic.Int32 }

func (c *countingCache) Snapshot() *api.ClusterInfo {
	c.cycles.Add(1)
	return &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
}
func (*countingCache) Bind(*api.TaskInfo) error                            { return nil }
func (*countingCache) UpdateJobStatus(*api.JobInfo, bool)                  {}
func (*countingCache) UpdateQueueStatus(*api.QueueInfo, *api.Resource)     {}
func (*countingCache) RecordJobEvent(*api.JobInfo, string, string, string) {}
func (*countingCache) Evict(*api.TaskInfo, string) error                   { return nil }

// Work arriving starts a cycle before the period is out: a fifth of the period after the
// previous one.
func TestArrivalStartsACycle(t *testing.T) {
	const period = 3 * time.Second
	c := &countingCache{}
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
		for c.cycles.Load() < cycles {
			if time.Now().After(deadline) {
				t.Fatalf("%d cycles after half the period, want %d", c.cycles.Load(), cycles)
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
