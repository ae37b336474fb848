// Package frameworktest holds what unit tests of actions and plugins share to open a session
// without a real cache.
package frameworktest

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// Cache is a framework.Cache that hands the session a fixed snapshot (an empty cluster when
// Snap is nil) and drops everything the session writes back, except that binds go to OnBind
// when it is set.
type Cache struct {
	Snap *api.ClusterInfo
	// OnBind sees every task the session binds; its error fails the bind.
	OnBind func(*api.TaskInfo) error
	// OnEvict sees every task the session evicts, and why; its error fails the eviction.
	OnEvict func(*api.TaskInfo, string) error
}

// Snapshot returns Snap, or an empty cluster.
func (c *Cache) Snapshot() *api.ClusterInfo {
	if c.Snap == nil {
		return &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	}
	return c.Snap
}

func (*Cache) UpdateJobStatus(*api.JobInfo, bool)                  {}
func (*Cache) UpdateQueueStatus(*api.QueueInfo, *api.Resource)     {}
func (*Cache) RecordJobEvent(*api.JobInfo, string, string, string) {}

// Bind hands the task to OnBind, if set.
func (c *Cache) Bind(t *api.TaskInfo) error {
	if c.OnBind != nil {
		return c.OnBind(t)
	}
	return nil
}

// Evict hands the task to OnEvict, if set.
func (c *Cache) Evict(t *api.TaskInfo, reason string) error {
	if c.OnEvict != nil {
		return c.OnEvict(t, reason)
	}
	return nil
}

// CloneCluster is a fresh copy of a snapshot, as the cache hands one to each session, for
// benchmarks that run many sessions over the same cluster.
func CloneCluster(ci *api.ClusterInfo) *api.ClusterInfo {
	c := &api.ClusterInfo{
		Jobs:     make(map[api.JobID]*api.JobInfo, len(ci.Jobs)),
		Nodes:    make(map[string]*api.NodeInfo, len(ci.Nodes)),
		Queues:   make(map[api.QueueID]*api.QueueInfo, len(ci.Queues)),
		NodeList: make([]*api.NodeInfo, 0, len(ci.NodeList)),
	}
	for id, j := range ci.Jobs {
		c.Jobs[id] = j.Clone()
	}
	for id, q := range ci.Queues {
		c.Queues[id] = q.Clone()
	}
	for _, n := range ci.NodeList {
		nc := n.Clone()
		c.Nodes[nc.Name] = nc
		c.NodeList = append(c.NodeList, nc)
	}
	return c
}
