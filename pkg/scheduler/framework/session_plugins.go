package framework

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// Function types plugins register. Compare functions return <0 when l goes first, >0 when r
// does, 0 for no opinion.
type (
	JobCompareFn   func(l, r *api.JobInfo) int
	TaskCompareFn  func(l, r *api.TaskInfo) int
	QueueCompareFn func(l, r *api.QueueInfo) int
	PrePredicateFn func(task *api.TaskInfo) error
	// PredicateFn returns nil (or a Success status) when the node can take the task.
	PredicateFn   func(task *api.TaskInfo, node *api.NodeInfo) *api.Status
	NodeOrderFn   func(task *api.TaskInfo, node *api.NodeInfo) (float64, error)
	QueueFn       func(queue *api.QueueInfo) bool
	AllocatableFn func(queue *api.QueueInfo, task *api.TaskInfo) bool
	JobBoolFn     func(job *api.JobInfo) bool
	// VoteFn returns Permit, Abstain or Reject.
	VoteFn       func(job *api.JobInfo) int
	JobFn        func(job *api.JobInfo)
	JobValidFn   func(job *api.JobInfo) *ValidateResult
	QueueUsageFn func(task *api.TaskInfo) *api.Resource
)

// Votes of enqueue and pipeline functions.
const (
	Reject  = -1
	Abstain = 0
	Permit  = 1
)

// ValidateResult says why a job cannot be scheduled at all.
type ValidateResult struct {
	Pass    bool
	Reason  string
	Message string
}

// sessionFns holds each extension point's functions by plugin name.
type sessionFns struct {
	jobOrder                     map[string]JobCompareFn
	queueOrder                   map[string]QueueCompareFn
	taskOrder                    map[string]TaskCompareFn
	prePredicate                 map[string]PrePredicateFn
	predicate                    map[string]PredicateFn
	nodeOrder                    map[string]NodeOrderFn
	overused                     map[string]QueueFn
	allocatable                  map[string]AllocatableFn
	jobReady                     map[string]JobBoolFn
	jobPipelined, jobEnqueueable map[string]VoteFn
	jobEnqueued                  map[string]JobFn
	jobValid                     map[string]JobValidFn
	queueUsage                   map[string]QueueUsageFn
}

func newSessionFns() sessionFns {
	return sessionFns{
		jobOrder: map[string]JobCompareFn{}, queueOrder: map[string]QueueCompareFn{}, taskOrder: map[string]TaskCompareFn{},
		prePredicate: map[string]PrePredicateFn{}, predicate: map[string]PredicateFn{},
		nodeOrder: map[string]NodeOrderFn{}, overused: map[string]QueueFn{},
		allocatable: map[string]AllocatableFn{}, jobReady: map[string]JobBoolFn{},
		jobPipelined: map[string]VoteFn{}, jobEnqueueable: map[string]VoteFn{},
		jobEnqueued: map[string]JobFn{}, jobValid: map[string]JobValidFn{},
		queueUsage: map[string]QueueUsageFn{},
	}
}

// Registration, called by plugins in OnSessionOpen.
func (ssn *Session) AddJobOrderFn(plugin string, fn JobCompareFn) { ssn.fns.jobOrder[plugin] = fn }
func (ssn *Session) AddQueueOrderFn(plugin string, fn QueueCompareFn) {
	ssn.fns.queueOrder[plugin] = fn
}
func (ssn *Session) AddTaskOrderFn(plugin string, fn TaskCompareFn) { ssn.fns.taskOrder[plugin] = fn }
func (ssn *Session) AddPrePredicateFn(plugin string, fn PrePredicateFn) {
	ssn.fns.prePredicate[plugin] = fn
}
func (ssn *Session) AddPredicateFn(plugin string, fn PredicateFn) { ssn.fns.predicate[plugin] = fn }
func (ssn *Session) AddNodeOrderFn(plugin string, fn NodeOrderFn) { ssn.fns.nodeOrder[plugin] = fn }
func (ssn *Session) AddOverusedFn(plugin string, fn QueueFn)      { ssn.fns.overused[plugin] = fn }
func (ssn *Session) AddAllocatableFn(plugin string, fn AllocatableFn) {
	ssn.fns.allocatable[plugin] = fn
}
func (ssn *Session) AddJobReadyFn(plugin string, fn JobBoolFn)  { ssn.fns.jobReady[plugin] = fn }
func (ssn *Session) AddJobPipelinedFn(plugin string, fn VoteFn) { ssn.fns.jobPipelined[plugin] = fn }
func (ssn *Session) AddJobEnqueueableFn(plugin string, fn VoteFn) {
	ssn.fns.jobEnqueueable[plugin] = fn
}
func (ssn *Session) AddJobEnqueuedFn(plugin string, fn JobFn)       { ssn.fns.jobEnqueued[plugin] = fn }
func (ssn *Session) AddJobValidFn(plugin string, fn JobValidFn)     { ssn.fns.jobValid[plugin] = fn }
func (ssn *Session) AddQueueUsageFn(plugin string, fn QueueUsageFn) { ssn.fns.queueUsage[plugin] = fn }
func (ssn *Session) AddEventHandler(h *EventHandler) {
	ssn.eventHandlers = append(ssn.eventHandlers, h)
}

// eachEnabled calls visit for every configured plugin, tier by tier, whose flag (picked by
// flag from its options) is on. visit returns false to stop; each tier end is reported by
// tierDone (nil to ignore), which also may stop the walk.
func (ssn *Session) eachEnabled(flag func(*conf.PluginOption) *bool, visit func(name string) bool, tierDone func() bool) {
	for t := range ssn.Tiers {
		for p := range ssn.Tiers[t].Plugins {
			opt := &ssn.Tiers[t].Plugins[p]
			if flag != nil && !conf.IsEnabled(flag(opt)) {
				continue
			}
			if !visit(opt.Name) {
				return
			}
		}
		if tierDone != nil && !tierDone() {
			return
		}
	}
}

func jobOrderFlag(o *conf.PluginOption) *bool     { return o.EnabledJobOrder }
func queueOrderFlag(o *conf.PluginOption) *bool   { return o.EnabledQueueOrder }
func taskOrderFlag(o *conf.PluginOption) *bool    { return o.EnabledTaskOrder }
func predicateFlag(o *conf.PluginOption) *bool    { return o.EnabledPredicate }
func nodeOrderFlag(o *conf.PluginOption) *bool    { return o.EnabledNodeOrder }
func overusedFlag(o *conf.PluginOption) *bool     { return o.EnabledOverused }
func allocatableFlag(o *conf.PluginOption) *bool  { return o.EnabledAllocatable }
func jobReadyFlag(o *conf.PluginOption) *bool     { return o.EnabledJobReady }
func jobPipelinedFlag(o *conf.PluginOption) *bool { return o.EnabledJobPipelined }
func jobEnqueuedFlag(o *conf.PluginOption) *bool  { return o.EnabledJobEnqueued }

// firstOpinion returns the first non-zero comparison over the enabled plugins.
func firstOpinion[F any](ssn *Session, fns map[string]F, flag func(*conf.PluginOption) *bool, compare func(F) int) int {
	result := 0
	ssn.eachEnabled(flag, func(name string) bool {
		if fn, ok := fns[name]; ok {
			result = compare(fn)
		}
		return result == 0
	}, nil)
	return result
}

// JobOrderFn: true when l goes before r. Plugins decide first; then the older PodGroup,
// then the smaller UID.
func (ssn *Session) JobOrderFn(l, r *api.JobInfo) bool {
	if c := firstOpinion(ssn, ssn.fns.jobOrder, jobOrderFlag, func(fn JobCompareFn) int { return fn(l, r) }); c != 0 {
		return c < 0
	}
	if !l.CreationTimestamp.Equal(&r.CreationTimestamp) {
		return l.CreationTimestamp.Before(&r.CreationTimestamp)
	}
	return l.UID < r.UID
}

// QueueOrderFn: true when l goes before r; fallback creation time, then name.
func (ssn *Session) QueueOrderFn(l, r *api.QueueInfo) bool {
	if c := firstOpinion(ssn, ssn.fns.queueOrder, queueOrderFlag, func(fn QueueCompareFn) int { return fn(l, r) }); c != 0 {
		return c < 0
	}
	lt, rt := l.Queue.CreationTimestamp, r.Queue.CreationTimestamp
	if !lt.Equal(&rt) {
		return lt.Before(&rt)
	}
	return l.UID < r.UID
}

// TaskOrderFn: true when l goes before r; fallback the pod-name index, creation time, UID.
func (ssn *Session) TaskOrderFn(l, r *api.TaskInfo) bool {
	if c := firstOpinion(ssn, ssn.fns.taskOrder, taskOrderFlag, func(fn TaskCompareFn) int { return fn(l, r) }); c != 0 {
		return c < 0
	}
	return api.CompareTasksByName(l, r)
}

// PrePredicate runs every enabled pre-predicate; the first error wins.
func (ssn *Session) PrePredicate(task *api.TaskInfo) error {
	var err error
	ssn.eachEnabled(predicateFlag, func(name string) bool {
		if fn, ok := ssn.fns.prePredicate[name]; ok {
			err = fn(task)
		}
		return err == nil
	}, nil)
	return err
}

// Predicate runs every enabled predicate; all must pass, the first failure is returned.
func (ssn *Session) Predicate(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	var status *api.Status
	ssn.eachEnabled(predicateFlag, func(name string) bool {
		if fn, ok := ssn.fns.predicate[name]; ok {
			if s := fn(task, node); s.Failed() {
				if s.Plugin == "" {
					s.Plugin = name
				}
				status = s
			}
		}
		return status == nil
	}, nil)
	return status
}

// NodeOrder sums the enabled node scores.
func (ssn *Session) NodeOrder(task *api.TaskInfo, node *api.NodeInfo) float64 {
	var score float64
	ssn.eachEnabled(nodeOrderFlag, func(name string) bool {
		if fn, ok := ssn.fns.nodeOrder[name]; ok {
			if s, err := fn(task, node); err == nil {
				score += s
			}
		}
		return true
	}, nil)
	return score
}

// HasNodeOrder: some enabled plugin scores nodes (otherwise any feasible node will do).
func (ssn *Session) HasNodeOrder() bool {
	found := false
	ssn.eachEnabled(nodeOrderFlag, func(name string) bool {
		_, found = ssn.fns.nodeOrder[name]
		return !found
	}, nil)
	return found
}

// Overused: any enabled plugin says the queue has its share.
func (ssn *Session) Overused(queue *api.QueueInfo) bool {
	over := false
	ssn.eachEnabled(overusedFlag, func(name string) bool {
		if fn, ok := ssn.fns.overused[name]; ok && fn(queue) {
			over = true
		}
		return !over
	}, nil)
	return over
}

// Allocatable: every enabled plugin lets the queue take the task.
func (ssn *Session) Allocatable(queue *api.QueueInfo, task *api.TaskInfo) bool {
	ok := true
	ssn.eachEnabled(allocatableFlag, func(name string) bool {
		if fn, found := ssn.fns.allocatable[name]; found && !fn(queue, task) {
			ok = false
		}
		return ok
	}, nil)
	return ok
}

// JobReady: every enabled plugin agrees the job may be dispatched (true when none has a say).
func (ssn *Session) JobReady(job *api.JobInfo) bool {
	ok := true
	ssn.eachEnabled(jobReadyFlag, func(name string) bool {
		if fn, found := ssn.fns.jobReady[name]; found && !fn(job) {
			ok = false
		}
		return ok
	}, nil)
	return ok
}

// vote combines votes tier by tier: a Reject ends it (false); a tier in which some plugin
// permitted ends it (true); all tiers abstaining is true.
func (ssn *Session) vote(fns map[string]VoteFn, flag func(*conf.PluginOption) *bool, job *api.JobInfo) bool {
	result, permitted, decided := true, false, false
	ssn.eachEnabled(flag, func(name string) bool {
		fn, ok := fns[name]
		if !ok {
			return true
		}
		switch fn(job) {
		case Reject:
			result, decided = false, true
			return false
		case Permit:
			permitted = true
		}
		return true
	}, func() bool {
		if decided {
			return false
		}
		if permitted {
			decided = true
			return false
		}
		return true
	})
	return result
}

// JobPipelined: the job's placed and waiting tasks are enough to keep its statement.
func (ssn *Session) JobPipelined(job *api.JobInfo) bool {
	return ssn.vote(ssn.fns.jobPipelined, jobPipelinedFlag, job)
}

// JobEnqueueable: the job may leave Pending (enqueue action).
func (ssn *Session) JobEnqueueable(job *api.JobInfo) bool {
	return ssn.vote(ssn.fns.jobEnqueueable, jobEnqueuedFlag, job)
}

// JobEnqueued tells every enabled plugin that the job was admitted.
func (ssn *Session) JobEnqueued(job *api.JobInfo) {
	ssn.eachEnabled(jobEnqueuedFlag, func(name string) bool {
		if fn, ok := ssn.fns.jobEnqueued[name]; ok {
			fn(job)
		}
		return true
	}, nil)
}

// JobValid returns the first failed validation, or nil. It has no enable flag.
func (ssn *Session) JobValid(job *api.JobInfo) *ValidateResult {
	var res *ValidateResult
	ssn.eachEnabled(nil, func(name string) bool {
		if fn, ok := ssn.fns.jobValid[name]; ok {
			if r := fn(job); r != nil && !r.Pass {
				res = r
			}
		}
		return res == nil
	}, nil)
	return res
}
