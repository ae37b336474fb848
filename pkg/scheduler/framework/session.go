package framework

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// Cache is what a session needs from the scheduler cache: a private snapshot to work on,
// and the ways decisions leave the session (binds, status writes). Everything it is handed
// belongs to the session until the session hands its jobs back (Release).
type Cache interface {
	// Snapshot copies the cluster state for one session.
	Snapshot() *api.ClusterInfo
	// Release takes back a closed session's jobs and nodes: a later Snapshot may hand the
	// ones the session left as it found them to the next session instead of copying them
	// again. Nothing may use them afterwards.
	Release(released *api.Released)
	// Bind hands a committed placement to the binder. An error means the cache refused it
	// (e.g. the node no longer fits the task); the placement is then undone.
	Bind(task *api.TaskInfo) error
	// Evict hands a committed eviction to the evictor: the pod is marked as a disruption
	// target, told why in an Event, and deleted with its own grace period. An error means the
	// cache refused it (the pod is no longer running there); the eviction is then undone.
	Evict(task *api.TaskInfo, reason string) error
	// UpdateJobStatus writes what the session decided about a job: the PodGroup (only when it
	// differs from the informer's copy), its events, and the PodScheduled condition of its
	// unplaced pods.
	UpdateJobStatus(job *api.JobInfo, statusChanged bool)
	// UpdateQueueStatus writes a queue's status.allocated when it changed.
	UpdateQueueStatus(queue *api.QueueInfo, allocated *api.Resource)
	// RecordJobEvent emits an event on the job's PodGroup.
	RecordJobEvent(job *api.JobInfo, eventType, reason, message string)
	// ReportJobSetting emits the Warning event (reason condition) of a job setting a plugin
	// ignores, unless it said the same while the PodGroup does not show the condition yet;
	// it reports whether it emitted. JobSettingShown: the PodGroup shows it now.
	ReportJobSetting(job *api.JobInfo, condition, message string) bool
	JobSettingShown(job *api.JobInfo, condition string)
	// ReportQueueProblems takes every queue that is out of the queue hierarchy now, each
	// session that has a hierarchy, and tells each queue once (an Event and a log line) while
	// its problem lasts.
	ReportQueueProblems(problems []queuetree.Problem)
}

// ChangeCounter is a Cache that counts the changes it is told of (informer events, binds,
// evictions and their failures, device rederivations), so that the scheduler can skip a
// cycle when nothing changed since a quiet one (Session.Quiet).
type ChangeCounter interface {
	// Changes is the count so far; it only grows, and grows after a change is applied.
	Changes() uint64
}

// Session is one scheduling cycle over a private copy of the cluster.
type Session struct {
	UID   types.UID
	cache Cache
	// generation is the snapshot's; touched names the nodes the session placed a task on,
	// took one off or evicted one on (see api.Released).
	generation uint64
	touched    map[string]struct{}

	Jobs     map[api.JobID]*api.JobInfo
	Nodes    map[string]*api.NodeInfo
	NodeList []*api.NodeInfo
	Queues   map[api.QueueID]*api.QueueInfo
	// TotalResource is the sum of every node's allocatable.
	TotalResource *api.Resource
	// QueueTree is the queue hierarchy, built when a plugin runs with enableHierarchy;
	// nil otherwise, and queues stand alone.
	QueueTree *queuetree.Tree

	Tiers          []conf.Tier
	Configurations []conf.Configuration
	// EnabledActions are the configured action names, for plugins that behave differently
	// when an action is absent (e.g. allocate admits jobs itself without enqueue).
	EnabledActions map[string]bool

	plugins []Plugin // in tier order
	// unplaced are the resources only a plugin the configuration does not turn on can place:
	// PrePredicate refuses the tasks that request them.
	unplaced []ownedResource
	points   sessionPoints
	// eventHandlers run inside every tentative allocate and its undo.
	eventHandlers []*EventHandler
	// endFns run once when the session ends, closed or abandoned (AddEndFn).
	endFns []func()

	// SkipQueueStatus leaves the queues' status.allocated to a later session: set for cycles
	// that follow the last one that wrote it by less than a period (see Scheduler).
	SkipQueueStatus bool
	// Quiet is set by CloseSession when the session left no task waiting for a node and
	// changed no PodGroup's status: the same snapshot would make the next cycle do nothing.
	Quiet bool

	// metrics outlives the session: the scheduler's, handed to every session it opens.
	metrics *metrics.Set
	// stop closes when the scheduler must stop (SIGTERM, leadership lost); nil never does.
	stop <-chan struct{}
}

// StopWhen makes the session's actions stop early, between jobs, once done is closed.
func (ssn *Session) StopWhen(done <-chan struct{}) { ssn.stop = done }

// Stopping reports whether the scheduler is stopping: an action checks it between jobs and
// returns, leaving what it has committed and nothing else, so that SIGTERM is answered
// within seconds in a cycle of any size.
func (ssn *Session) Stopping() bool {
	select {
	case <-ssn.stop:
		return true
	default:
		return false
	}
}

// OpenSession snapshots the cache and opens every configured plugin, in tier order. The
// session, its plugins and its actions record into m (nil: nothing is recorded).
func OpenSession(cache Cache, cfg *conf.SchedulerConfiguration, registry *Registry, m *metrics.Set) *Session {
	return OpenSessionUntil(nil, cache, cfg, registry, m)
}

// OpenSessionUntil is OpenSession for a session that stops once stop is closed (StopWhen):
// no further plugin is opened, so that SIGTERM in the first cycle after a start, whose plugins
// build their state from every job, is answered within seconds too. A stopping session is
// only abandoned (AbandonSession).
func OpenSessionUntil(stop <-chan struct{}, cache Cache, cfg *conf.SchedulerConfiguration, registry *Registry, m *metrics.Set) *Session {
	snap := cache.Snapshot()
	ssn := &Session{
		UID:            uuid.NewUUID(),
		cache:          cache,
		generation:     snap.Generation,
		touched:        map[string]struct{}{},
		metrics:        m,
		Jobs:           snap.Jobs,
		Nodes:          snap.Nodes,
		NodeList:       snap.NodeList,
		Queues:         snap.Queues,
		TotalResource:  api.EmptyResource(),
		Tiers:          cfg.Tiers,
		Configurations: cfg.Configurations,
		EnabledActions: map[string]bool{},
		unplaced:       registry.unplaced(cfg),
		stop:           stop,
	}
	for _, a := range cfg.ActionNames() {
		ssn.EnabledActions[a] = true
	}
	for _, n := range ssn.NodeList {
		ssn.TotalResource.Add(n.Allocatable)
	}
	if cfg.HierarchyEnabled() {
		ssn.QueueTree = queuetree.Build(ssn.Queues)
		cache.ReportQueueProblems(ssn.QueueTree.Problems())
	}
	for _, tier := range cfg.Tiers {
		for _, opt := range tier.Plugins {
			if ssn.Stopping() {
				return ssn
			}
			p, err := registry.Plugin(opt.Name, opt.Arguments)
			if err != nil {
				// Validation at load time makes this unreachable for a loaded configuration.
				klog.ErrorS(err, "Plugin left out of the session", "plugin", opt.Name)
				continue
			}
			ssn.plugins = append(ssn.plugins, p)
			start := time.Now()
			p.OnSessionOpen(ssn)
			ssn.metrics.ObservePlugin(p.Name(), metrics.OnSessionOpen, start)
		}
	}
	return ssn
}

// CloseSession lets plugins report (gang writes conditions here), then writes every job's
// status and, unless SkipQueueStatus, every queue's allocation, and hands the jobs and nodes
// back to the cache (Cache.Release): nothing may use them once the next session opens.
func CloseSession(ssn *Session) {
	for _, p := range ssn.plugins {
		start := time.Now()
		p.OnSessionClose(ssn)
		ssn.metrics.ObservePlugin(p.Name(), metrics.OnSessionClose, start)
	}
	ssn.Quiet = true
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		ssn.updateJobPhase(job)
		changed := podGroupStatusChanged(job.PodGroup.Status, job.Status)
		ssn.cache.UpdateJobStatus(job, changed)
		if changed || job.TaskCount(api.Pending)+job.TaskCount(api.Pipelined)+job.TaskCount(api.Allocated) > 0 {
			ssn.Quiet = false
		}
	}
	if !ssn.SkipQueueStatus {
		ssn.updateQueueStatus()
	}
	AbandonSession(ssn)
}

// AbandonSession runs the end functions (AddEndFn) and hands the jobs and nodes back to the
// cache, and nothing more: CloseSession ends with it, and a session cut short by a stop, whose
// picture of the jobs is half drawn, ends with it alone (no plugin's report, no status write).
func AbandonSession(ssn *Session) {
	for _, fn := range ssn.endFns {
		fn()
	}
	ssn.endFns = nil
	ssn.cache.Release(&api.Released{Generation: ssn.generation, Jobs: ssn.Jobs, Nodes: ssn.Nodes, Touched: ssn.touched})
}

// updateJobPhase derives the PodGroup phase from its tasks.
func (ssn *Session) updateJobPhase(job *api.JobInfo) {
	status := &job.Status
	unschedulableNow := false
	for _, c := range status.Conditions {
		if c.Type == schedulingv1beta1.PodGroupUnschedulableType && c.Status == "True" && c.TransitionID == string(ssn.UID) {
			unschedulableNow = true
		}
	}
	running := job.TaskCount(api.Running)
	scheduled := running + job.TaskCount(api.Bound) + job.TaskCount(api.Failed) + job.TaskCount(api.Succeeded)
	switch {
	case running > 0 && unschedulableNow:
		status.Phase = schedulingv1beta1.PodGroupUnknown
	case scheduled >= job.MinAvailable && scheduled > 0:
		status.Phase = schedulingv1beta1.PodGroupRunning
		if job.TaskCount(api.Succeeded)+job.TaskCount(api.Failed) == scheduled {
			status.Phase = schedulingv1beta1.PodGroupCompleted
		}
	case status.Phase != schedulingv1beta1.PodGroupInqueue:
		status.Phase = schedulingv1beta1.PodGroupPending
	}
	status.Running = running
	status.Succeeded = job.TaskCount(api.Succeeded)
	status.Failed = job.TaskCount(api.Failed)
}

// podGroupStatusChanged: the phase, counts or conditions differ, ignoring the time stamps
// and transition ids a rewrite of the same condition changes.
func podGroupStatusChanged(old, cur schedulingv1beta1.PodGroupStatus) bool {
	if old.Phase != cur.Phase || old.Running != cur.Running || old.Succeeded != cur.Succeeded ||
		old.Failed != cur.Failed || len(old.Conditions) != len(cur.Conditions) {
		return true
	}
	for i := range old.Conditions {
		o, c := old.Conditions[i], cur.Conditions[i]
		if o.Type != c.Type || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			return true
		}
	}
	return false
}

// UpdatePodGroupCondition sets a condition on the job's PodGroup status, replacing one of
// the same type (as upstream: an old Unschedulable stays when Scheduled is added).
func (ssn *Session) UpdatePodGroupCondition(job *api.JobInfo, cond schedulingv1beta1.PodGroupCondition) {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == cond.Type {
			job.Status.Conditions[i] = cond
			return
		}
	}
	job.Status.Conditions = append(job.Status.Conditions, cond)
}

// RecordJobEvent emits an event on a job's PodGroup.
func (ssn *Session) RecordJobEvent(job *api.JobInfo, eventType, reason, message string) {
	ssn.cache.RecordJobEvent(job, eventType, reason, message)
}

// ReportJobSetting emits the Warning event of an ignored job setting once (Cache.ReportJobSetting).
func (ssn *Session) ReportJobSetting(job *api.JobInfo, condition, message string) bool {
	return ssn.cache.ReportJobSetting(job, condition, message)
}

// JobSettingShown tells the cache that the job's PodGroup shows the setting's condition.
func (ssn *Session) JobSettingShown(job *api.JobInfo, condition string) {
	ssn.cache.JobSettingShown(job, condition)
}

// HierarchyEnabled reports whether the configuration runs the plugin with enableHierarchy.
func (ssn *Session) HierarchyEnabled(plugin string) bool {
	for _, tier := range ssn.Tiers {
		for i := range tier.Plugins {
			if tier.Plugins[i].Name == plugin && tier.Plugins[i].HierarchyEnabled() {
				return true
			}
		}
	}
	return false
}

// updateQueueStatus writes status.allocated of every queue: the requests of its tasks that
// hold resources and, with a queue hierarchy, those of the queues below it.
func (ssn *Session) updateQueueStatus() {
	allocated := make(map[api.QueueID]*api.Resource, len(ssn.Queues))
	for id := range ssn.Queues {
		allocated[id] = api.EmptyResource()
	}
	for _, job := range ssn.Jobs {
		a, ok := allocated[job.Queue]
		if !ok {
			continue
		}
		for s, tasks := range job.TaskStatusIndex {
			if !api.AllocatedStatus(s) {
				continue
			}
			for _, t := range tasks {
				ssn.AddQueueUsage(a, t)
			}
		}
	}
	if ssn.QueueTree != nil {
		ssn.rollUp(allocated)
	}
	ids := make([]string, 0, len(ssn.Queues))
	for id := range ssn.Queues {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		ssn.cache.UpdateQueueStatus(ssn.Queues[api.QueueID(id)], allocated[api.QueueID(id)])
	}
}

// rollUp adds each queue's own allocation to every queue above it, so that a parent's
// status.allocated is its subtree's. A queue out of the tree keeps its own.
func (ssn *Session) rollUp(allocated map[api.QueueID]*api.Resource) {
	own := make(map[api.QueueID]*api.Resource, len(allocated))
	for id, a := range allocated {
		own[id] = a.Clone()
	}
	for id, a := range own {
		for _, ancestor := range ssn.QueueTree.Ancestors(id) {
			if total, ok := allocated[ancestor]; ok {
				total.Add(a)
			}
		}
	}
}

// Metrics is what the session's plugins and actions record into; nil (a no-op) when the
// caller watches no metrics.
func (ssn *Session) Metrics() *metrics.Set { return ssn.metrics }

// JobFor returns the task's job in this session.
func (ssn *Session) JobFor(t *api.TaskInfo) *api.JobInfo { return ssn.Jobs[t.Job] }
