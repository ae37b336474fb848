// Package frameworktest holds what unit tests of the framework, actions and plugins share to
// open a session without a real cache: a fake cache, snapshots built from API objects or
// infos, and ways to open a session or run actions over them; and the cache a plugin's
// component starts on without one.
package frameworktest

import (
	corev1 "k8s.io/api/core/v1"
	"sync/atomic"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// Cache is a framework.Cache that hands every session the snapshot Snap (a new empty cluster
// when Snap is nil) and keeps what the session writes back that tests check. PodGroup
// statuses are dropped.
type Cache struct {
	Snap *api.ClusterInfo
	// Bound holds a copy of each task the session binds, as the binder would receive it, in
	// order; not kept when OnBind is set.
	Bound []*api.TaskInfo
	// OnBind, when set, sees every task the session binds in place of Bound; its error fails
	// the bind.
	OnBind func(*api.TaskInfo) error
	// OnEvict sees every task the session evicts, and why; its error fails the eviction.
	OnEvict func(*api.TaskInfo, string) error
	// Events are the PodGroup events the session emitted, in order.
	Events []JobEvent
	// QueueProblems are the queues out of the hierarchy the last session reported.
	QueueProblems []queuetree.Problem
	// Allocated is the status.allocated last written for each queue, by name.
	Allocated map[string]*api.Resource
	// Snapshots counts the snapshots handed out: one a session, so one a scheduler cycle.
	Snapshots atomic.Int32
	// Released is what the last closed session handed back.
	Released *api.Released
}

// JobEvent is a PodGroup event a session emitted.
type JobEvent struct {
	PodGroup, Type, Reason, Message string
}

// Snapshot returns Snap, or an empty cluster. A Snap handed out again has its nodes' device
// state readied for another session, as the cache does with the nodes it hands again.
func (c *Cache) Snapshot() *api.ClusterInfo {
	if c.Snapshots.Add(1) > 1 && c.Snap != nil {
		for _, n := range c.Snap.Nodes {
			for _, d := range n.Devices {
				d.Reuse()
			}
		}
	}
	if c.Snap == nil {
		return &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	}
	return c.Snap
}

// Release keeps what the session handed back in Released; every session still gets Snap as
// it is.
func (c *Cache) Release(r *api.Released) { c.Released = r }

// Bind hands the task to OnBind if set, else keeps a copy in Bound.
func (c *Cache) Bind(t *api.TaskInfo) error {
	if c.OnBind != nil {
		return c.OnBind(t)
	}
	c.Bound = append(c.Bound, t.Clone())
	return nil
}

// Binds maps each task in Bound ("namespace/name") to its node.
func (c *Cache) Binds() map[string]string {
	binds := make(map[string]string, len(c.Bound))
	for _, t := range c.Bound {
		binds[t.Key()] = t.NodeName
	}
	return binds
}

// Evict hands the task to OnEvict, if set.
func (c *Cache) Evict(t *api.TaskInfo, reason string) error {
	if c.OnEvict != nil {
		return c.OnEvict(t, reason)
	}
	return nil
}

func (*Cache) UpdateJobStatus(*api.JobInfo, bool) {}

// UpdateQueueStatus keeps a copy of the queue's allocation in Allocated.
func (c *Cache) UpdateQueueStatus(q *api.QueueInfo, allocated *api.Resource) {
	if c.Allocated == nil {
		c.Allocated = map[string]*api.Resource{}
	}
	c.Allocated[q.Name] = allocated.Clone()
}

// RecordJobEvent appends the event to Events.
func (c *Cache) RecordJobEvent(job *api.JobInfo, eventType, reason, message string) {
	c.Events = append(c.Events, JobEvent{PodGroup: job.Name, Type: eventType, Reason: reason, Message: message})
}

// ReportJobSetting appends the Warning event to Events each time: a test session has no
// status write to wait for.
func (c *Cache) ReportJobSetting(job *api.JobInfo, condition, message string) bool {
	c.RecordJobEvent(job, corev1.EventTypeWarning, condition, message)
	return true
}

// JobSettingShown does nothing: ReportJobSetting keeps nothing.
func (*Cache) JobSettingShown(*api.JobInfo, string) {}

// ReportQueueProblems keeps the problems in QueueProblems.
func (c *Cache) ReportQueueProblems(problems []queuetree.Problem) { c.QueueProblems = problems }

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
