package cache

import (
	"sort"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Snapshot copies the cluster for one session: every node whose object is known, every
// queue, and every job that has its PodGroup and whose queue exists, with the job's priority
// from its PriorityClass. Nothing in it is shared with the cache except the informers'
// objects, which nobody changes. A job the last released session left as the cache still
// holds it is that session's copy again, its status refreshed (api.JobInfo.Refresh): at
// 30,000 running jobs, copying them all was a fifth of a cycle and most of its garbage. So is
// a node that neither the session (api.Released.Touched) nor the cache (nodeChanged) changed
// since the snapshot before this one, which that session was opened on: at 5,000 nodes their
// copies were half of a cycle after one pod event.
//
// Jobs left out because a PodGroup or Queue they name is missing are reported once each,
// after a grace period (see danglingReferences).
func (sc *SchedulerCache) Snapshot() *api.ClusterInfo {
	sc.mu.Lock()
	sc.deriveChanged()
	// Each released session serves one snapshot: two snapshots never share a job or a node.
	released := sc.released
	sc.released = nil
	if released == nil {
		released = &api.Released{}
	}
	sc.generation++
	snap := &api.ClusterInfo{
		Jobs:       make(map[api.JobID]*api.JobInfo, len(sc.jobs)),
		Nodes:      make(map[string]*api.NodeInfo, len(sc.nodes)),
		Queues:     make(map[api.QueueID]*api.QueueInfo, len(sc.queues)),
		NodeList:   make([]*api.NodeInfo, 0, len(sc.nodes)),
		Generation: sc.generation,
	}
	// The cache's changes to nodes are known since the last snapshot only.
	nodes := released.Nodes
	if released.Generation != sc.generation-1 {
		nodes = nil
	}
	for name, n := range sc.nodes {
		if n.Node == nil {
			continue
		}
		c := nodes[name]
		_, touched := released.Touched[name]
		_, changed := sc.underived[name]
		if c == nil || touched || changed || c.Node != n.Node {
			c = n.Clone()
		} else {
			for _, d := range c.Devices {
				d.Reuse()
			}
		}
		snap.Nodes[name] = c
		snap.NodeList = append(snap.NodeList, c)
	}
	clear(sc.underived)
	for id, q := range sc.queues {
		snap.Queues[id] = q.Clone()
	}
	defaultPriority := sc.defaultPriority()
	var dangling []danglingReference
	for id, job := range sc.jobs {
		if job.PodGroup == nil {
			dangling = appendPodsWithoutPodGroup(dangling, job)
			continue
		}
		if _, ok := sc.queues[job.Queue]; !ok {
			dangling = append(dangling, podGroupWithoutQueue(job))
			continue
		}
		c := released.Jobs[id]
		if c == nil || !job.Refresh(c) {
			c = job.Clone()
		}
		c.Priority, c.PriorityClassMissing = sc.jobPriority(job.PodGroup, defaultPriority)
		snap.Jobs[id] = c
	}
	report := sc.dangling.due(dangling, sc.clock.Now())
	sc.mu.Unlock()

	sort.Slice(snap.NodeList, func(i, j int) bool { return snap.NodeList[i].Name < snap.NodeList[j].Name })
	for _, r := range report {
		r.report(sc.recorder)
	}
	return snap
}

// Release implements framework.Cache: the next snapshot may reuse the jobs and nodes.
func (sc *SchedulerCache) Release(released *api.Released) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.released = released
}

// defaultPriority is the value of the global default PriorityClass, 0 without one. Should
// several claim to be the default, the lowest value wins, as in the API server's admission.
// Called under mu.
func (sc *SchedulerCache) defaultPriority() int32 {
	var found bool
	var p int32
	for _, pc := range sc.priorityClasses {
		if pc.GlobalDefault && (!found || pc.Value < p) {
			found, p = true, pc.Value
		}
	}
	return p
}

// jobPriority is the value of the PriorityClass the PodGroup names, else the default, and
// whether the PodGroup names one the cluster does not have. Called under mu.
func (sc *SchedulerCache) jobPriority(pg *schedulingv1beta1.PodGroup, defaultPriority int32) (int32, bool) {
	if pc := sc.priorityClasses[pg.Spec.PriorityClassName]; pc != nil {
		return pc.Value, false
	}
	return defaultPriority, pg.Spec.PriorityClassName != ""
}
