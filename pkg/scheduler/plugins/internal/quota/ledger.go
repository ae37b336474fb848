// Package quota is the queue accounting that the proportion and capacity plugins share, and
// the job amounts the overcommit plugin also needs: what each queue holds, asks for and has
// promised to admitted jobs, its real capability, its share, and the enqueue check against
// that capability with its PodGroup event. It is internal to the plugins: no action or
// framework code depends on it.
package quota

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// QueueQuotaInsufficient opens the message of the PodGroup event a queue-quota rejection
// emits: "queue resource quota insufficient: insufficient volcano.sh/vgpu-memory".
const QueueQuotaInsufficient = "queue resource quota insufficient"

// Message formats an enqueue rejection as upstream does: "<prefix>: <verb> <name>, <verb>
// <name>", or the prefix alone when no name is given.
func Message(prefix, verb string, names []corev1.ResourceName) string {
	if len(names) == 0 {
		return prefix
	}
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(": ")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(verb)
		b.WriteByte(' ')
		b.WriteString(string(name))
	}
	return b.String()
}

// RecordRejection emits the Normal "Unschedulable" PodGroup event with which enqueue
// rejections explain themselves (the job stays Pending and has no other trace).
func RecordRejection(ssn *framework.Session, job *api.JobInfo, message string) {
	ssn.RecordJobEvent(job, corev1.EventTypeNormal, string(schedulingv1beta1.PodGroupUnschedulableType), message)
}

// Queue is one queue's accounts for a session.
type Queue struct {
	Info *api.QueueInfo

	// Guarantee is spec.guarantee.resource: reserved for this queue, taken out of every other
	// queue's real capability. Empty when unset.
	Guarantee *api.Resource
	// Capability is spec.capability, with cpu and memory unbounded when it leaves them out (or
	// sets them to zero, as upstream reads it); nil when the queue sets no capability.
	Capability *api.Resource
	// RealCapability is the most the queue can ever hold: the cluster less every queue's
	// guarantee, plus its own, capped by Capability where Capability names a dimension.
	RealCapability *api.Resource
	// Deserved is the queue's fair share, which the plugin computes (proportion by weight,
	// capacity from spec.deserved). Starts empty.
	Deserved *api.Resource

	// Allocated: requests of the queue's tasks that hold a node; kept current by EventHandler.
	Allocated *api.Resource
	// Request: Allocated plus the requests of pending tasks.
	Request *api.Resource
	// Inqueue: what admitted jobs have reserved (see Reserved), grown by JobEnqueued.
	Inqueue *api.Resource
	// Elastic: the part of Allocated above the jobs' minResources (see AddElastic).
	Elastic *api.Resource

	// Share is the largest Allocated/Deserved ratio over the dimensions Deserved has; lower
	// shares are served first.
	Share float64
}

// Ledger holds the accounts of the queues that have jobs in the session.
type Ledger struct {
	ssn *framework.Session
	// Total is the cluster's allocatable, the amount deserved shares divide.
	Total  *api.Resource
	Queues map[api.QueueID]*Queue
	// Idle are empty accounts (nothing allocated, requested or deserved) of the session's
	// queues without a job, in name order. They take no part in the plugins' decisions; the
	// queue metrics show them, so that a queue whose jobs are gone reads zero rather than
	// keeping its last figures. A ledger of a queue hierarchy has none: every queue has an
	// account there.
	Idle []*Queue
	// tree is the queue hierarchy the checks follow (NewTreeLedger); nil for flat queues.
	tree *queuetree.Tree
}

// NewLedger opens the accounts of every queue that has a job in the session. A job whose
// queue does not exist gets no account; JobEnqueueable rejects it.
func NewLedger(ssn *framework.Session) *Ledger {
	l := &Ledger{ssn: ssn, Total: ssn.TotalResource.Clone(), Queues: map[api.QueueID]*Queue{}}
	guaranteed := api.EmptyResource()
	for _, info := range ssn.Queues {
		if g := info.Queue.Spec.Guarantee.Resource; len(g) > 0 {
			guaranteed.Add(api.NewResource(g))
		}
	}
	unguaranteed := ExceededPart(l.Total, guaranteed)
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		q := l.Queues[job.Queue]
		if q == nil {
			info := ssn.Queues[job.Queue]
			if info == nil {
				continue
			}
			q = newQueue(info, unguaranteed)
			l.Queues[job.Queue] = q
		}
		q.addJob(job)
	}
	for _, info := range ssn.Queues {
		if l.Queues[info.UID] == nil {
			l.Idle = append(l.Idle, newQueue(info, unguaranteed))
		}
	}
	sort.Slice(l.Idle, func(i, j int) bool { return l.Idle[i].Info.Name < l.Idle[j].Info.Name })
	return l
}

func newQueue(info *api.QueueInfo, unguaranteed *api.Resource) *Queue {
	q := &Queue{
		Info:      info,
		Guarantee: api.NewResource(info.Queue.Spec.Guarantee.Resource),
		Deserved:  api.EmptyResource(),
		Allocated: api.EmptyResource(),
		Request:   api.EmptyResource(),
		Inqueue:   api.EmptyResource(),
		Elastic:   api.EmptyResource(),
	}
	q.RealCapability = unguaranteed.Clone().Add(q.Guarantee)
	if capability := info.Queue.Spec.Capability; len(capability) > 0 {
		q.Capability = api.NewResource(capability)
		if q.Capability.MilliCPU <= 0 {
			q.Capability.MilliCPU = math.MaxFloat64
		}
		if q.Capability.Memory <= 0 {
			q.Capability.Memory = math.MaxFloat64
		}
		q.RealCapability.MinDimension(q.Capability, api.MissingAsInfinity)
	}
	return q
}

// addJob counts the job in its queue: the requests of its tasks holding resources (the total
// the job keeps) as allocated, those and its pending tasks' as requested.
func (q *Queue) addJob(job *api.JobInfo) {
	q.Allocated.Add(job.Allocated)
	q.Request.Add(job.Allocated)
	for _, t := range job.TaskStatusIndex[api.Pending] {
		q.Request.Add(t.Resreq)
	}
	q.Inqueue.Add(Reserved(job))
	AddElastic(q.Elastic, job)
}

// Sorted returns the queues in name order, so that computations over them and their logs do
// not depend on map order.
func (l *Ledger) Sorted() []*Queue {
	queues := make([]*Queue, 0, len(l.Queues))
	for _, q := range l.Queues {
		queues = append(queues, q)
	}
	sort.Slice(queues, func(i, j int) bool { return queues[i].Info.Name < queues[j].Info.Name })
	return queues
}

// UpdateShare recomputes Share from Allocated and Deserved. A queue that deserves nothing
// (best effort) has share 1 whatever it holds, so it goes after every queue still below its
// share, as upstream's capacity has it: with share 0 it would go first for ever.
func (q *Queue) UpdateShare() {
	if q.Deserved.IsEmpty() {
		q.Share = 1
		return
	}
	share := 0.0
	ratio := func(allocated, deserved float64) {
		if deserved >= api.Tolerance {
			share = math.Max(share, allocated/deserved)
		}
	}
	ratio(q.Allocated.MilliCPU, q.Deserved.MilliCPU)
	ratio(q.Allocated.Memory, q.Deserved.Memory)
	for name, deserved := range q.Deserved.ScalarResources {
		ratio(q.Allocated.ScalarResources[name], deserved)
	}
	q.Share = share
}

// HoldsDeserved reports whether the queue holds its deserved share in every dimension of
// Deserved (cpu and memory always).
func (q *Queue) HoldsDeserved() bool {
	return q.Deserved.LessEqual(q.Allocated, api.MissingAsZero)
}

// CompareQueues is the queue order: higher spec.priority first, then the lower share.
func (l *Ledger) CompareQueues(a, b *api.QueueInfo) int {
	if a.Priority != b.Priority {
		if a.Priority > b.Priority {
			return -1
		}
		return 1
	}
	return l.compareShares(a.UID, b.UID)
}

// compareShares: the lower share first; of equal shares, a queue with a deserved share
// before a best-effort one (deserving nothing), so that a best-effort queue is served only
// once every other has its share, as upstream's capacity orders them.
func (l *Ledger) compareShares(a, b api.QueueID) int {
	qa, qb := l.Queues[a], l.Queues[b]
	sa, sb := 0.0, 0.0
	if qa != nil {
		sa = qa.Share
	}
	if qb != nil {
		sb = qb.Share
	}
	switch {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	ea, eb := qa == nil || qa.Deserved.IsEmpty(), qb == nil || qb.Deserved.IsEmpty()
	switch {
	case !ea && eb:
		return -1
	case ea && !eb:
		return 1
	}
	return 0
}

// JobEnqueueable votes on admitting a Pending job: Reject when its queue is missing or not
// Open; Permit when it sets no minResources; otherwise Permit exactly when minResources fits
// in the queue's real capability next to what the queue holds and has reserved, less its
// elastic part. Only the dimensions minResources asks for are compared ("pods" aside); one
// the real capability lacks counts as zero, so a job asking for a resource no node has is
// rejected. With a hierarchy every ancestor but the root is checked alike, except that an
// ancestor's lack of room is passed over where the job's queue is owed it (owedPast); the
// root, only against a capability declared on it. A quota rejection emits the PodGroup
// event naming the short dimensions.
func (l *Ledger) JobEnqueueable(job *api.JobInfo) int {
	q := l.Queues[job.Queue]
	if q == nil {
		klog.V(3).InfoS("Job's queue does not exist; job stays Pending", "podGroup", klog.KRef(job.Namespace, job.Name), "queue", job.Queue)
		return framework.Reject
	}
	if !q.Info.IsOpen() {
		klog.V(3).InfoS("Queue is not Open; job stays Pending", "podGroup", klog.KRef(job.Namespace, job.Name),
			"queue", q.Info.Name, "state", q.Info.Queue.Status.State)
		return framework.Reject
	}
	if why := l.LeafRefusal(q.Info.UID); why != "" {
		klog.V(3).InfoS("Queue takes no jobs; job stays Pending", "podGroup", klog.KRef(job.Namespace, job.Name),
			"queue", q.Info.Name, "reason", why)
		return framework.Reject
	}
	minReq := job.MinResources
	if minReq == nil {
		return framework.Permit
	}
	// With a hierarchy the queue and each ancestor must have room, as upstream checks them:
	// the first one short decides the event.
	for _, a := range l.chain(q.Info.UID) {
		limit := a.RealCapability
		if a.Info.UID == queuetree.Root && l.tree != nil {
			// The root is bounded at admission only by a capability declared on it, as
			// upstream's: a job is admitted into a full cluster to reclaim there, and the
			// cluster's size is allocate's to enforce.
			if a.Capability == nil {
				continue
			}
			limit = a.Capability
		}
		wanted := minReq.Clone().Add(a.Allocated).Add(a.Inqueue).Sub(a.Elastic)
		short := wanted.ExceedingWithDimension(limit, minReq)
		if len(short) == 0 {
			continue
		}
		if a != q && owedPast(q, minReq, short) {
			klog.V(3).InfoS("Ancestor queue is full, but the job's queue is owed the room; job admitted to reclaim it",
				"podGroup", klog.KRef(job.Namespace, job.Name), "queue", q.Info.Name, "ancestor", a.Info.Name, "insufficient", short)
			continue
		}
		klog.V(3).InfoS("Queue quota insufficient; job stays Pending", "podGroup", klog.KRef(job.Namespace, job.Name),
			"queue", a.Info.Name, "jobQueue", q.Info.Name, "insufficient", short, "minResources", minReq, "allocated", a.Allocated,
			"inqueue", a.Inqueue, "elastic", a.Elastic, "limit", limit)
		RecordRejection(l.ssn, job, Message(QueueQuotaInsufficient, "insufficient", short))
		return framework.Reject
	}
	return framework.Permit
}

// owedPast: the job's queue is owed the room its ancestor lacks: its deserved share names
// each short dimension and covers the job there beside what the queue holds and has
// reserved. The ancestor's other queues then hold more than their shares (when the shares
// under it fit in it), and reclaim takes the room back from them: the ancestor's cap moves
// nothing but its own total, so it cannot stand between a team and its share.
func owedPast(q *Queue, minReq *api.Resource, short []corev1.ResourceName) bool {
	for _, name := range short {
		deserved := q.Deserved.Get(name)
		if deserved < api.Tolerance || q.Allocated.Get(name)+q.Inqueue.Get(name)+minReq.Get(name) > deserved+api.Tolerance {
			return false
		}
	}
	return true
}

// JobEnqueued reserves an admitted job's minResources (gated pods aside) in its queue, so the
// next job of the same cycle sees it. Done here rather than in JobEnqueueable, which a later
// plugin's Reject can overrule.
func (l *Ledger) JobEnqueued(job *api.JobInfo) {
	minReq := job.MinResources
	if minReq == nil {
		return
	}
	reserved := WithoutGated(job, minReq)
	for _, q := range l.chain(job.Queue) {
		q.Inqueue.Add(reserved)
	}
}

// FitsDeserved is nil when the Open queue can take the task within its deserved share
// (proportion's Allocatable), else why not.
func (l *Ledger) FitsDeserved(queue *api.QueueInfo, task *api.TaskInfo) error {
	return l.fits(queue, task, func(q *Queue) *api.Resource { return q.Deserved }, "deserved share")
}

// FitsRealCapability is nil when the Open queue can take the task within its real capability
// (capacity's Allocatable), else why not.
// With a hierarchy, every ancestor of the queue must have room too.
func (l *Ledger) FitsRealCapability(queue *api.QueueInfo, task *api.TaskInfo) error {
	return l.fitsRealCapability(queue, task, true)
}

// fitsRealCapability is FitsRealCapability, the root checked or not.
func (l *Ledger) fitsRealCapability(queue *api.QueueInfo, task *api.TaskInfo, root bool) error {
	if err := l.fits(queue, task, func(q *Queue) *api.Resource { return q.RealCapability }, "real capability"); err != nil {
		return err
	}
	if l.tree == nil {
		return nil
	}
	return l.fitsAncestors(l.Queues[queue.UID], task, root)
}

// fits: the queue is Open and Allocated plus the task's request stays within limit in every
// dimension the task asks for ("pods" aside; a dimension limit lacks counts as zero). The
// refusal names the queue and the dimensions, because upstream's bare "pod group is not
// ready" on the pod leaves its author guessing (for one whose vGPUs the queue's share no
// longer covers: "queue default has no room for the pod within its deserved share:
// volcano.sh/vgpu-number").
func (l *Ledger) fits(queue *api.QueueInfo, task *api.TaskInfo, limitOf func(*Queue) *api.Resource, limitName string) error {
	q := l.Queues[queue.UID]
	if q == nil {
		return fmt.Errorf("queue %s is not known to the scheduler", queue.Name)
	}
	if !q.Info.IsOpen() {
		klog.V(3).InfoS("Queue is not Open; task not allocated", "pod", task.Key(), "queue", q.Info.Name, "state", q.Info.Queue.Status.State)
		return fmt.Errorf("queue %s is %s, not Open", q.Info.Name, q.Info.Queue.Status.State)
	}
	if why := l.LeafRefusal(q.Info.UID); why != "" {
		return fmt.Errorf("queue %s takes no pods: %s", q.Info.Name, why)
	}
	limit := limitOf(q)
	wanted := q.Allocated.Clone().Add(task.Resreq)
	short := wanted.ExceedingWithDimension(limit, task.Resreq)
	if len(short) == 0 {
		return nil
	}
	klog.V(3).InfoS("Task does not fit in its queue", "pod", task.Key(), "queue", q.Info.Name, "insufficient", short,
		"request", task.Resreq, "allocated", q.Allocated, "limit", limitName, "limitValue", limit)
	return fmt.Errorf("queue %s has no room for the pod within its %s: %s", q.Info.Name, limitName, joinNames(short))
}

// joinNames lists resource names as "cpu, volcano.sh/vgpu-memory".
func joinNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Reclaimable are the candidates reclaim may take: each from a queue that, without the victims
// taken before it, still holds more than its deserved share (in some dimension of it, cpu and
// memory always: ExceedsIn), and keeps its guarantee without this one too. So a queue gives
// back down to about its deserved share, never below its guarantee.
func (l *Ledger) Reclaimable(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
	left := map[api.QueueID]*api.Resource{}
	victims := make([]*api.TaskInfo, 0, len(candidates))
	for _, c := range candidates {
		q := l.queueOf(c)
		if q == nil {
			continue
		}
		allocated, ok := left[q.Info.UID]
		if !ok {
			allocated = q.Allocated.Clone()
			left[q.Info.UID] = allocated
		}
		if !ExceedsIn(allocated, q.Deserved) {
			continue
		}
		after := allocated.Clone().SubTotal(c.Resreq)
		if !q.Guarantee.LessEqual(after, api.MissingAsZero) {
			continue
		}
		left[q.Info.UID] = after
		victims = append(victims, c)
	}
	return victims, false
}

// EventHandler keeps Allocated and Share current as the session places and takes back tasks.
func (l *Ledger) EventHandler() *framework.EventHandler {
	return &framework.EventHandler{
		AllocateFunc: func(e *framework.Event) {
			for _, q := range l.chainOf(e.Task) {
				q.Allocated.Add(e.Task.Resreq)
				q.UpdateShare()
			}
		},
		DeallocateFunc: func(e *framework.Event) {
			for _, q := range l.chainOf(e.Task) {
				q.Allocated.SubTotal(e.Task.Resreq)
				q.UpdateShare()
			}
		},
	}
}

// chainOf is the account of the task's queue and, with a hierarchy, its ancestors'.
func (l *Ledger) chainOf(t *api.TaskInfo) []*Queue {
	job := l.ssn.JobFor(t)
	if job == nil {
		return nil
	}
	return l.chain(job.Queue)
}

func (l *Ledger) queueOf(t *api.TaskInfo) *Queue {
	job := l.ssn.JobFor(t)
	if job == nil {
		return nil
	}
	return l.Queues[job.Queue]
}
