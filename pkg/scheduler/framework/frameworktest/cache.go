// Package frameworktest holds what unit tests of actions and plugins share to open a session
// without a real cache.
package frameworktest

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// Cache is a framework.Cache that hands the session a fixed snapshot (an empty cluster when
// Snap is nil) and drops everything the session writes back.
type Cache struct {
	Snap *api.ClusterInfo
}

// Snapshot returns Snap, or an empty cluster.
func (c *Cache) Snapshot() *api.ClusterInfo {
	if c.Snap == nil {
		return &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	}
	return c.Snap
}

func (*Cache) Bind(*api.TaskInfo) error                            { return nil }
func (*Cache) UpdateJobStatus(*api.JobInfo, bool)                  {}
func (*Cache) UpdateQueueStatus(*api.QueueInfo, *api.Resource)     {}
func (*Cache) RecordJobEvent(*api.JobInfo, string, string, string) {}
