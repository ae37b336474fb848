package framework

import (
	"fmt"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Function types plugins register. Compare functions return <0 when l goes first, >0 when r
// does, 0 for no opinion.
type (
	JobCompareFn   func(l, r *api.JobInfo) int
	TaskCompareFn  func(l, r *api.TaskInfo) int
	QueueCompareFn func(l, r *api.QueueInfo) int
	// VictimQueueCompareFn orders the queues of victims for a preemptor of queue preemptor:
	// <0 when l's pods go first.
	VictimQueueCompareFn func(l, r, preemptor *api.QueueInfo) int
	PrePredicateFn       func(task *api.TaskInfo) error
	// PredicateFn returns nil (or a Success status) when the node can take the task. Calls
	// never run concurrently (see the package comment in plugin.go).
	PredicateFn func(task *api.TaskInfo, node *api.NodeInfo) *api.Status
	// SamePredicatesFn says whether the plugin's PredicateFn gives tasks a and b the same
	// verdict on every node, as the session stands: it looks at what the predicate reads of
	// a task, never at nodes.
	SamePredicatesFn func(a, b *api.TaskInfo) bool
	NodeOrderFn      func(task *api.TaskInfo, node *api.NodeInfo) (float64, error)
	// BatchNodeOrderFn adds to scores[i] its score of nodes[i] for the task. It is for scores
	// that compare the nodes with one another (kube-scheduler normalizes some over the nodes
	// it scores), which a NodeOrderFn, seeing one node, cannot give.
	BatchNodeOrderFn func(task *api.TaskInfo, nodes []*api.NodeInfo, scores []float64)
	QueueFn          func(queue *api.QueueInfo) bool
	// AllocatableFn returns nil when the queue can take the task now, else why not, naming
	// the queue: the pod's PodScheduled message shows it.
	AllocatableFn func(queue *api.QueueInfo, task *api.TaskInfo) error
	JobBoolFn     func(job *api.JobInfo) bool
	// VoteFn returns Permit, Abstain or Reject.
	VoteFn     func(job *api.JobInfo) int
	JobFn      func(job *api.JobInfo)
	JobValidFn func(job *api.JobInfo) *ValidateResult
	// QueueUsageFn adds what the task counts against its queue to total and reports true, or
	// leaves total alone and reports false when it has no say on the task. It adds in place
	// because the session sums every placed task each close. The first plugin, in tier
	// order, that reports true decides; it has no enable flag.
	QueueUsageFn func(task *api.TaskInfo, total *api.Resource) bool
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

// Registration, called by plugins in OnSessionOpen.
func (ssn *Session) AddJobOrderFn(plugin string, fn JobCompareFn) {
	ssn.points.jobOrder.add(plugin, fn)
}
func (ssn *Session) AddQueueOrderFn(plugin string, fn QueueCompareFn) {
	ssn.points.queueOrder.add(plugin, fn)
}
func (ssn *Session) AddVictimQueueOrderFn(plugin string, fn VictimQueueCompareFn) {
	ssn.points.victimQueueOrder.add(plugin, fn)
}
func (ssn *Session) AddTaskOrderFn(plugin string, fn TaskCompareFn) {
	ssn.points.taskOrder.add(plugin, fn)
}
func (ssn *Session) AddPrePredicateFn(plugin string, fn PrePredicateFn) {
	ssn.points.prePredicate.add(plugin, fn)
}
func (ssn *Session) AddPredicateFn(plugin string, fn PredicateFn) {
	ssn.points.predicate.add(plugin, fn)
}
func (ssn *Session) AddSamePredicatesFn(plugin string, fn SamePredicatesFn) {
	ssn.points.samePredicates.add(plugin, fn)
}
func (ssn *Session) AddNodeOrderFn(plugin string, fn NodeOrderFn) {
	ssn.points.nodeOrder.add(plugin, fn)
}
func (ssn *Session) AddBatchNodeOrderFn(plugin string, fn BatchNodeOrderFn) {
	ssn.points.batchNodeOrder.add(plugin, fn)
}
func (ssn *Session) AddOverusedFn(plugin string, fn QueueFn) {
	ssn.points.overused.add(plugin, fn)
}
func (ssn *Session) AddAllocatableFn(plugin string, fn AllocatableFn) {
	ssn.points.allocatable.add(plugin, fn)
}
func (ssn *Session) AddJobReadyFn(plugin string, fn JobBoolFn) {
	ssn.points.jobReady.add(plugin, fn)
}
func (ssn *Session) AddJobPipelinedFn(plugin string, fn VoteFn) {
	ssn.points.jobPipelined.add(plugin, fn)
}
func (ssn *Session) AddJobEnqueueableFn(plugin string, fn VoteFn) {
	ssn.points.jobEnqueueable.add(plugin, fn)
}
func (ssn *Session) AddJobEnqueuedFn(plugin string, fn JobFn) {
	ssn.points.jobEnqueued.add(plugin, fn)
}
func (ssn *Session) AddJobValidFn(plugin string, fn JobValidFn) {
	ssn.points.jobValid.add(plugin, fn)
}
func (ssn *Session) AddQueueUsageFn(plugin string, fn QueueUsageFn) {
	ssn.points.queueUsage.add(plugin, fn)
}
func (ssn *Session) AddEventHandler(h *EventHandler) {
	ssn.eventHandlers = append(ssn.eventHandlers, h)
}

// AddEndFn registers fn to run once when the session ends, closed or abandoned, after the
// plugins' reports and before the jobs and nodes go back to the cache. It is for what a plugin
// holds outside the session for a placement (kube-scheduler's assumed volumes): the session's
// copies are dropped, but a placement neither committed nor discarded (a pipelined gang's
// allocated pods, which allocate keeps in the session) must give back what it took there.
func (ssn *Session) AddEndFn(fn func()) {
	ssn.endFns = append(ssn.endFns, fn)
}

// firstOpinion returns the first non-zero comparison of the chain.
func firstOpinion[F any](c chain[F], compare func(F) int) int {
	for _, l := range c {
		if r := compare(l.fn); r != 0 {
			return r
		}
	}
	return 0
}

// JobOrderFn: true when l goes before r. Plugins decide first; then the older PodGroup,
// then the smaller UID.
func (ssn *Session) JobOrderFn(l, r *api.JobInfo) bool {
	if c := firstOpinion(ssn.points.jobOrder.chain(ssn.Tiers), func(fn JobCompareFn) int { return fn(l, r) }); c != 0 {
		return c < 0
	}
	if !l.CreationTimestamp.Equal(&r.CreationTimestamp) {
		return l.CreationTimestamp.Before(&r.CreationTimestamp)
	}
	return l.UID < r.UID
}

// QueueOrderFn: true when l goes before r; fallback creation time, then name.
func (ssn *Session) QueueOrderFn(l, r *api.QueueInfo) bool {
	if c := firstOpinion(ssn.points.queueOrder.chain(ssn.Tiers), func(fn QueueCompareFn) int { return fn(l, r) }); c != 0 {
		return c < 0
	}
	lt, rt := l.Queue.CreationTimestamp, r.Queue.CreationTimestamp
	if !lt.Equal(&rt) {
		return lt.Before(&rt)
	}
	return l.UID < r.UID
}

// VictimQueueOrderFn: true when the victims of queue l go before those of queue r for a
// preemptor of queue preemptor. The first plugin with an opinion decides (no enable flag, as
// upstream); without one, the queue served last gives up its pods first.
func (ssn *Session) VictimQueueOrderFn(l, r, preemptor *api.QueueInfo) bool {
	if c := firstOpinion(ssn.points.victimQueueOrder.chain(ssn.Tiers), func(fn VictimQueueCompareFn) int { return fn(l, r, preemptor) }); c != 0 {
		return c < 0
	}
	return ssn.QueueOrderFn(r, l)
}

// TaskOrderFn: true when l goes before r; fallback the pod-name index, creation time, UID.
func (ssn *Session) TaskOrderFn(l, r *api.TaskInfo) bool {
	if c := firstOpinion(ssn.points.taskOrder.chain(ssn.Tiers), func(fn TaskCompareFn) int { return fn(l, r) }); c != 0 {
		return c < 0
	}
	return api.CompareTasksByName(l, r)
}

// PrePredicate refuses a pod that asks for what this scheduler does not allocate
// (api.UnallocatedClaims), whatever plugins the configuration names, and a task that requests
// a resource only a plugin the configuration does not turn on can place, naming that plugin
// (ResourceOwner); then it runs every enabled pre-predicate. The first error wins.
func (ssn *Session) PrePredicate(task *api.TaskInfo) error {
	if task.Pod != nil {
		if err := api.UnallocatedClaims(task.Pod); err != nil {
			return err
		}
	}
	for _, r := range ssn.unplaced {
		if task.Resreq.Get(r.name) > 0 {
			return fmt.Errorf("pod %s requests %s, which only the %s plugin places, and the scheduler configuration in force does not turn it on",
				task.Key(), r.name, r.plugin)
		}
	}
	for _, l := range ssn.points.prePredicate.chain(ssn.Tiers) {
		if err := l.fn(task); err != nil {
			return err
		}
	}
	return nil
}

// Predicate runs every enabled predicate; all must pass, the first failure is returned.
func (ssn *Session) Predicate(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	for _, l := range ssn.points.predicate.chain(ssn.Tiers) {
		if s := l.fn(task, node); s.Failed() {
			if s.Plugin == "" {
				s.Plugin = l.plugin
			}
			return s
		}
	}
	return nil
}

// SamePredicates says whether every enabled predicate gives tasks a and b the same verdict on
// every node, as the session stands, so that a search for one answers for the other. Each
// plugin whose predicate is enabled must say so with its SamePredicatesFn; one that has none
// says no.
func (ssn *Session) SamePredicates(a, b *api.TaskInfo) bool {
	for _, l := range ssn.points.predicate.chain(ssn.Tiers) {
		same, ok := ssn.points.samePredicates.fns[l.plugin]
		if !ok || !same(a, b) {
			return false
		}
	}
	return true
}

// NodeOrder sums the enabled node scores.
func (ssn *Session) NodeOrder(task *api.TaskInfo, node *api.NodeInfo) float64 {
	var score float64
	for _, l := range ssn.points.nodeOrder.chain(ssn.Tiers) {
		if s, err := l.fn(task, node); err == nil {
			score += s
		}
	}
	return score
}

// NodeScores sets scores[i] to the task's total on nodes[i]: the NodeOrder sum, and what the
// enabled batch scorers, which compare the nodes with one another, add.
func (ssn *Session) NodeScores(task *api.TaskInfo, nodes []*api.NodeInfo, scores []float64) {
	for i, node := range nodes {
		scores[i] = ssn.NodeOrder(task, node)
	}
	for _, l := range ssn.points.batchNodeOrder.chain(ssn.Tiers) {
		l.fn(task, nodes, scores)
	}
}

// HasNodeOrder: some enabled plugin scores nodes (otherwise any feasible node will do).
func (ssn *Session) HasNodeOrder() bool {
	return len(ssn.points.nodeOrder.chain(ssn.Tiers)) > 0 || len(ssn.points.batchNodeOrder.chain(ssn.Tiers)) > 0
}

// Overused: any enabled plugin says the queue has its share.
func (ssn *Session) Overused(queue *api.QueueInfo) bool {
	for _, l := range ssn.points.overused.chain(ssn.Tiers) {
		if l.fn(queue) {
			return true
		}
	}
	return false
}

// Allocatable: nil when every enabled plugin lets the queue take the task, else the first
// refusal.
func (ssn *Session) Allocatable(queue *api.QueueInfo, task *api.TaskInfo) error {
	for _, l := range ssn.points.allocatable.chain(ssn.Tiers) {
		if err := l.fn(queue, task); err != nil {
			return err
		}
	}
	return nil
}

// JobReady: every enabled plugin agrees the job may be dispatched (true when none has a say).
func (ssn *Session) JobReady(job *api.JobInfo) bool {
	for _, l := range ssn.points.jobReady.chain(ssn.Tiers) {
		if !l.fn(job) {
			return false
		}
	}
	return true
}

// vote combines votes tier by tier: a Reject ends it (false); a tier in which some plugin
// permitted ends it (true); all tiers abstaining is true.
func vote(c chain[VoteFn], job *api.JobInfo) bool {
	permitted := false
	for i, l := range c {
		switch l.fn(job) {
		case Reject:
			return false
		case Permit:
			permitted = true
		}
		if permitted && (i+1 == len(c) || c[i+1].tier != l.tier) {
			return true
		}
	}
	return true
}

// JobPipelined: the job's placed and waiting tasks are enough to keep its statement.
func (ssn *Session) JobPipelined(job *api.JobInfo) bool {
	return vote(ssn.points.jobPipelined.chain(ssn.Tiers), job)
}

// JobEnqueueable: the job may leave Pending (enqueue action).
func (ssn *Session) JobEnqueueable(job *api.JobInfo) bool {
	return vote(ssn.points.jobEnqueueable.chain(ssn.Tiers), job)
}

// JobEnqueued tells every enabled plugin that the job was admitted.
func (ssn *Session) JobEnqueued(job *api.JobInfo) {
	for _, l := range ssn.points.jobEnqueued.chain(ssn.Tiers) {
		l.fn(job)
	}
}

// JobValid returns the first failed validation, or nil. It has no enable flag.
func (ssn *Session) JobValid(job *api.JobInfo) *ValidateResult {
	for _, l := range ssn.points.jobValid.chain(ssn.Tiers) {
		if r := l.fn(job); r != nil && !r.Pass {
			return r
		}
	}
	return nil
}

// AddQueueUsage adds to total what a task counts against its queue's status.allocated: what
// the first plugin with a say reports (deviceshare replaces vGPU requests with the devices
// really booked), else the task's request.
func (ssn *Session) AddQueueUsage(total *api.Resource, t *api.TaskInfo) {
	for _, l := range ssn.points.queueUsage.chain(ssn.Tiers) {
		if l.fn(t, total) {
			return
		}
	}
	total.Add(t.Resreq)
}
