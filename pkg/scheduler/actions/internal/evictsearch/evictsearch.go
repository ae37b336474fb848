// Package evictsearch is what preempt and reclaim share, and what the gang actions
// (gangpreempt, gangreclaim) search with inside the victim jobs they choose: the action itself, which gives each
// starving job in turn the pods it may evict (an action's own Rules say which), and the search
// that follows: for each pending task of the job, a node where evicting some of those pods
// makes room, those evictions and the task pipelined onto the node's releasing resources kept
// in the job's statement only when the whole job is then pipelined. Which pods the plugins let
// go is theirs to say (framework's Preemptable, Reclaimable and SelectVictims).
//
// Unlike upstream's default, evictions are tried in a statement of their own per node and
// kept only when the task then fits there (resources and every predicate): a task that would
// still not fit evicts nothing. An evicted pod no longer counts for the inter-pod filters
// (the predicates plugin follows evictions), so a node whose only objections are its room and
// required anti-affinity between the task and pods that may go is made room on, as with
// upstream's enableTopologyAwarePreemption and in kube-scheduler; as there, the victims the
// task turns out not to need are then given back (reprieve).
//
// A task that finds no such node says why, node by node, in the words of the Reason
// constants and of the predicates (the node search's own style, "0/1 nodes are unavailable:
// 1 Insufficient cpu even with every allowed victim evicted."): a gang that evicts nothing
// then tells its users that preemption was tried and could not help, rather than leaving
// them the queue's or allocate's reason alone.
package evictsearch

import (
	"cmp"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/nodesearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Reasons a node gives a preemptor (or reclaimer) it cannot take, as they read after a count
// in "0/<N> nodes are unavailable: <count> <reason>, ...". Predicates' own reasons are used
// as they are; what still fails once the victims are gone ends with AfterEvictions.
const (
	// ReasonNothingToEvict: no pod on the node may be a victim at all (none running of the
	// jobs the action may take from, or all marked volcano.sh/preemptable: "false").
	ReasonNothingToEvict = "node(s) had no pod that may be evicted for it"
	// ReasonNoVictimAllowed: the plugins (priority, gang, conformance, ...) let it evict none
	// of the node's pods.
	ReasonNoVictimAllowed = "node(s) had no pod the plugins let it evict"
	// AfterEvictions ends the reason of a node that would still refuse the task with every
	// victim the plugins allow gone: "Insufficient cpu" + AfterEvictions, or a predicate's
	// reason, such as deviceshare's, + AfterEvictions.
	AfterEvictions = " even with every allowed victim evicted"
)

// Chooser is the plugins' say on which candidates may go: Session.Preemptable or
// Session.Reclaimable.
type Chooser func(preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo

// Together is the plugins' say on which victims may go together: Session.PreemptTogether
// or Session.ReclaimTogether.
type Together func(victims []*api.TaskInfo) bool

// forJob lets the job's pending tasks make room by TryJob, evicting pods of other jobs that
// scope allows (reason as there). The evictions stand only if the job is then pipelined (its
// whole gang has a place): otherwise nothing is evicted, and Explain records why.
func forJob(ssn *framework.Session, job *api.JobInfo, scope Scope, reason string) {
	candidates := scope.Candidates
	scope.Candidates = func(t *api.TaskInfo) bool { return t.Job != job.UID && candidates(t) }
	a := TryJob(ssn, job, scope, reason)
	if a.Pipelined() {
		a.Stmt.Commit()
		return
	}
	klog.V(3).InfoS("Evictions would not let the job run; nothing evicted", "podGroup", klog.KRef(job.Namespace, job.Name), "action", reason)
	a.Stmt.Discard()
	a.Explain()
}

// Attempt is one try at making room for a job: its evictions and placements, applied to the
// session in Stmt, which the caller commits or discards.
type Attempt struct {
	Stmt *framework.Statement
	ssn  *framework.Session
	job  *api.JobInfo
	// placed are the tasks that found a place; unplaced, why the others found none where
	// that says more than an earlier record.
	placed   []*api.TaskInfo
	unplaced map[api.TaskID]*api.FitErrors
}

// Pipelined reports whether the job, with the attempt's placements, is pipelined: its whole
// gang has a place, so the evictions serve.
func (a *Attempt) Pipelined() bool { return a.ssn.JobPipelined(a.job) }

// TryJob lets the job's pending tasks, in task order and while the job is starving, each make
// room by Search, evicting candidates that scope allows (reason as there), all in one new
// statement. scope.MayEvict, when set, is asked first for each task; its refusal ends the
// job's turn.
func TryJob(ssn *framework.Session, job *api.JobInfo, scope Scope, reason string) *Attempt {
	a := &Attempt{Stmt: ssn.NewStatement(), ssn: ssn, job: job}
	for _, task := range PendingTasks(ssn, job) {
		if !ssn.JobStarving(job) {
			break
		}
		if scope.MayEvict != nil {
			if err := scope.MayEvict(task); err != nil {
				klog.V(3).InfoS("Pod may not evict", "pod", klog.KRef(task.Namespace, task.Name), "action", reason, "reason", err)
				break
			}
		}
		r := search(ssn, a.Stmt, task, scope.Candidates, scope.Choose, scope.Together, reason)
		switch {
		case r.placed:
			a.placed = append(a.placed, task)
		case r.why != nil && (r.victimsSeen || job.NodesFitErrors[task.UID] == nil):
			// A search that found no pod it might evict anywhere says less than an earlier
			// record (allocate's, or preempt's before reclaim's): that one stands.
			if a.unplaced == nil {
				a.unplaced = map[api.TaskID]*api.FitErrors{}
			}
			a.unplaced[task.UID] = r.why
		}
	}
	return a
}

// Explain records, after the attempt is discarded, why its tasks found no place as their
// NodesFitErrors, which the pods' PodScheduled condition and the PodGroup's Unschedulable
// condition ("Origin reason is <pod>: ...", api.JobInfo.FitError) then state.
func (a *Attempt) Explain() {
	job := a.job
	if len(a.unplaced) == 0 {
		return
	}
	if job.NodesFitErrors == nil {
		job.NodesFitErrors = map[api.TaskID]*api.FitErrors{}
	}
	// The tasks that found a place are not what kept the gang back: an older record of
	// theirs (allocate's, from before any eviction) would be the PodGroup's origin reason if
	// its pod's name sorts first. Their pods' own message says where they would go.
	for _, t := range a.placed {
		delete(job.NodesFitErrors, t.UID)
	}
	for uid, why := range a.unplaced {
		job.NodesFitErrors[uid] = why
	}
}

// Search makes room for preemptor on one node, by evicting candidates that filter accepts
// and choose allows, in victim order until it fits; where a plugin's SelectVictims picks
// among them (deviceshare for a vGPU pod: the GPUs it will use decide), its picks first, in
// its order, then the others; then giving back those it does not need after all; reason is
// what the victims' Evict events say. It returns whether the task was pipelined (its
// evictions then stand in stmt) and, when it was not, why not on each node (nil when
// evictions were not what it lacked: it may not preempt, or a node has room for it as it is).
func Search(ssn *framework.Session, stmt *framework.Statement, preemptor *api.TaskInfo,
	filter func(*api.TaskInfo) bool, choose Chooser, together Together, reason string) (placed bool, why *api.FitErrors) {
	r := search(ssn, stmt, preemptor, filter, choose, together, reason)
	return r.placed, r.why
}

// outcome is what search found for a task.
type outcome struct {
	placed bool
	why    *api.FitErrors
	// victimsSeen: some node had pods the task may evict (filter's), so why is more than
	// ReasonNothingToEvict and the predicates' refusals.
	victimsSeen bool
}

func search(ssn *framework.Session, stmt *framework.Statement, preemptor *api.TaskInfo,
	filter func(*api.TaskInfo) bool, choose Chooser, together Together, reason string) outcome {
	if p := preemptor.Pod.Spec.PreemptionPolicy; p != nil && *p == corev1.PreemptNever {
		return outcome{}
	}
	if err := ssn.PrePredicate(preemptor); err != nil {
		// Every node refuses it alike, as allocate's node search reports it.
		if len(ssn.NodeList) == 0 {
			return outcome{}
		}
		return outcome{why: nodesearch.FailAll(ssn.NodeList, err)}
	}
	why := api.NewFitErrors()
	out := outcome{why: why}
	roomNow := false
	// Shared by the nodes that fail alike: a search over many nodes allocates one each.
	nothingToEvict := api.NewStatus(api.Unschedulable, ReasonNothingToEvict)
	noVictimAllowed := api.NewStatus(api.Unschedulable, ReasonNoVictimAllowed)
	for _, node := range candidateNodes(ssn, preemptor, why) {
		candidates := CandidatesOn(ssn, node, filter)
		if len(candidates) == 0 {
			if roomNow = roomNow || fits(ssn, preemptor, node); !roomNow {
				why.SetNodeError(node.Name, nothingToEvict)
			}
			continue
		}
		out.victimsSeen = true
		chosen := choose(preemptor, candidates)
		ssn.Metrics().VictimsChosen(len(chosen))
		// Every candidate, whatever the plugins allow, would leave it short: that is the
		// node's reason, the plugins' choice could not change it.
		if short := shortOf(preemptor, node, candidates); short != "" {
			why.SetNodeError(node.Name, insufficient(short))
			continue
		}
		if len(chosen) == 0 {
			if roomNow = roomNow || fits(ssn, preemptor, node); !roomNow {
				why.SetNodeError(node.Name, noVictimAllowed)
			}
			continue
		}
		if short := shortOf(preemptor, node, chosen); short != "" {
			why.SetNodeError(node.Name, insufficient(short))
			continue
		}
		ssn.Metrics().CountPreemptionAttempt()
		order(ssn, preemptor, chosen)
		first, picked := ssn.SelectVictims(preemptor, node, chosen, together)
		if !picked {
			first = chosen
		}
		try := ssn.NewStatement()
		room := fits(ssn, preemptor, node)
		var evicted []*api.TaskInfo
		evictUntilRoom := func(victims []*api.TaskInfo) {
			for _, v := range victims {
				if room {
					return
				}
				// The victims evicted before it are gone from what together counts.
				if slices.Contains(evicted, v) || !together([]*api.TaskInfo{v}) {
					continue
				}
				if err := try.Evict(v, reason); err != nil {
					klog.V(3).InfoS("Victim cannot be evicted", "pod", klog.KRef(v.Namespace, v.Name), "err", err)
					continue
				}
				evicted = append(evicted, v)
				room = fits(ssn, preemptor, node)
			}
		}
		evictUntilRoom(first)
		if !room && picked {
			// The plugin's picks make room only for what it judges (a GPU): what else the task
			// lacks, room in its queue or a pod whose required anti-affinity (or the task's)
			// keeps it off the node, the others make, in victim order; reprieve then gives
			// back the picks they made needless.
			evictUntilRoom(chosen)
		}
		if !room {
			if refusal := refusalOf(ssn, preemptor, node); refusal != nil {
				why.SetNodeError(node.Name, afterEvictions(refusal))
			}
			try.Discard()
			continue
		}
		if err := reprieve(ssn, try, preemptor, node, evicted, reason); err != nil {
			// Not expected: the victim was evictable a moment before.
			klog.ErrorS(err, "A victim given back cannot be evicted again", "pod", klog.KRef(preemptor.Namespace, preemptor.Name), "node", node.Name)
			try.Discard()
			continue
		}
		if err := try.Pipeline(preemptor, node); err != nil {
			klog.V(3).InfoS("Pipelining the preemptor failed", "pod", klog.KRef(preemptor.Namespace, preemptor.Name), "node", node.Name, "err", err)
			// The statement wraps the handler's error in "place <pod> on <node>: ..."; the
			// histogram names no node, so the handler's reason is what it shows.
			if inner := errors.Unwrap(err); inner != nil {
				err = inner
			}
			why.SetNodeError(node.Name, afterEvictions(api.NewStatus(api.Error, err.Error())))
			try.Discard()
			continue
		}
		stmt.Merge(try)
		return outcome{placed: true}
	}
	if roomNow || why.Nodes() == 0 {
		return outcome{}
	}
	return out
}

// reprieve gives back, the last evicted first (the highest ranked), each of the victims
// without which the preemptor still fits the node, as kube-scheduler reprieves its victims:
// evicting in victim order until the preemptor fits can take a pod that a later victim made
// needless, as a low-priority pod whose room the preemptor no longer needs once the
// higher-ranked pod whose anti-affinity (or its own) kept it away is evicted too, and frees
// its room. The last victim is never given back: without it the preemptor did not fit. An
// error, when a victim given back cannot be evicted again, leaves the preemptor without room.
func reprieve(ssn *framework.Session, try *framework.Statement, preemptor *api.TaskInfo, node *api.NodeInfo,
	evicted []*api.TaskInfo, reason string) error {
	for i := len(evicted) - 2; i >= 0; i-- {
		v := evicted[i]
		try.Unevict(v)
		if fits(ssn, preemptor, node) {
			continue
		}
		if err := try.Evict(v, reason); err != nil {
			return err
		}
	}
	return nil
}

// candidateNodes are the nodes the task could use once pods leave them: those whose only
// objection is a resolvable one (too little room now), best scored first. The others'
// objections go to why.
func candidateNodes(ssn *framework.Session, task *api.TaskInfo, why *api.FitErrors) []*api.NodeInfo {
	var nodes []*api.NodeInfo
	for _, n := range ssn.NodeList {
		if s := ssn.Predicate(task, n); s != nil && s.Code != api.Unschedulable {
			why.SetNodeError(n.Name, s)
			continue
		}
		nodes = append(nodes, n)
	}
	scores := make([]float64, len(nodes))
	ssn.NodeScores(task, nodes, scores)
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(nodes[a].Name, nodes[b].Name))
	})
	out := make([]*api.NodeInfo, len(nodes))
	for i, j := range order {
		out[i] = nodes[j]
	}
	return out
}

// CandidatesOn are the session's tasks on node that may be victims at all: running or bound,
// asking for something, not marked volcano.sh/preemptable: "false", and accepted by filter.
func CandidatesOn(ssn *framework.Session, node *api.NodeInfo, filter func(*api.TaskInfo) bool) []*api.TaskInfo {
	var out []*api.TaskInfo
	for uid, nt := range node.Tasks {
		job := ssn.Jobs[nt.Job]
		if job == nil {
			continue
		}
		t := job.Tasks[uid]
		if t == nil || (t.Status != api.Running && t.Status != api.Bound) || !t.Preemptable || t.Resreq.IsEmpty() || !filter(t) {
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *api.TaskInfo) int { return cmp.Compare(a.UID, b.UID) })
	return out
}

// shortOf is the first resource (cpu, memory, then the others by name) that the node's
// future idle and every victim together would still lack for the task; "" when they cover it.
func shortOf(task *api.TaskInfo, node *api.NodeInfo, victims []*api.TaskInfo) corev1.ResourceName {
	room := node.FutureIdle()
	for _, v := range victims {
		room.Add(v.Resreq)
	}
	if short := task.InitResreq.Exceeding(room, api.MissingAsZero); len(short) > 0 {
		return short[0]
	}
	return ""
}

// fits: the task can be pipelined onto the node now, its resources released or free, every
// predicate passing, and its queue with room for it (Allocatable, which allocate asks before
// it binds the task: a queue or department at its capability on a node with room is made
// room in by evicting from it, not by pipelining the task where allocate will refuse it).
func fits(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) bool {
	return nodeFits(ssn, task, node) && queueRefusal(ssn, task) == nil
}

// nodeFits: the node can take the task now, its resources released or free and every
// predicate passing, whatever its queue says.
func nodeFits(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) bool {
	return task.InitResreq.LessEqual(node.FutureIdle(), api.MissingAsZero) && ssn.Predicate(task, node) == nil
}

// queueRefusal is why the task's queue cannot take it now (Session.Allocatable); nil when it can.
func queueRefusal(ssn *framework.Session, task *api.TaskInfo) error {
	job := ssn.JobFor(task)
	if job == nil {
		return nil
	}
	queue := ssn.Queues[job.Queue]
	if queue == nil {
		return nil
	}
	return ssn.Allocatable(queue, task)
}

// refusalOf is why the task cannot be pipelined onto a node it does not fit: a predicate's
// refusal first, as the more precise (deviceshare's names the GPU constraint where a plugin's
// SelectVictims found no victims that free one GPU, while the node's totals would only say
// that nothing was evicted), else the first resource its released or free room lacks, in
// allocate's words ("Insufficient <resource>"), else its queue's refusal; nil where it fits.
func refusalOf(ssn *framework.Session, task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	if s := ssn.Predicate(task, node); s != nil {
		return s
	}
	if short := task.InitResreq.Exceeding(node.FutureIdle(), api.MissingAsZero); len(short) > 0 {
		return api.NewStatus(api.Unschedulable, nodesearch.InsufficientReason(short[0]))
	}
	if err := queueRefusal(ssn, task); err != nil {
		return api.NewStatus(api.Unschedulable, err.Error())
	}
	return nil
}

// insufficient is the reason of a node that even its victims' resources would leave short.
func insufficient(name corev1.ResourceName) *api.Status {
	return api.NewStatus(api.Unschedulable, nodesearch.InsufficientReason(name)+AfterEvictions)
}

// afterEvictions is s for a node that still refuses with its victims gone: each reason ends
// with AfterEvictions. s itself is left alone (predicates share their statuses).
func afterEvictions(s *api.Status) *api.Status {
	out := &api.Status{Code: s.Code, Plugin: s.Plugin, Reasons: make([]string, len(s.Reasons))}
	for i, r := range s.Reasons {
		out.Reasons[i] = r + AfterEvictions
	}
	return out
}

// order sorts the victims of preemptor lowest first: of different queues, in the session's
// victim queue order (capacity's with a hierarchy: the queues nearest the preemptor's in the
// tree first; else the queue served last first); of different jobs of one queue, the job
// that goes last in job order first; of one job, the task that goes last in task order first.
func order(ssn *framework.Session, preemptor *api.TaskInfo, victims []*api.TaskInfo) {
	byTask, byJob := compareBy(ssn.TaskOrderFn), compareBy(ssn.JobOrderFn)
	var preemptorQueue *api.QueueInfo
	if job := ssn.JobFor(preemptor); job != nil {
		preemptorQueue = ssn.Queues[job.Queue]
	}
	byQueue := compareBy(func(l, r *api.QueueInfo) bool { return ssn.VictimQueueOrderFn(l, r, preemptorQueue) })
	slices.SortStableFunc(victims, func(l, r *api.TaskInfo) int {
		// Reversed: what is scheduled last is evicted first.
		if l.Job == r.Job {
			return byTask(r, l)
		}
		lj, rj := ssn.Jobs[l.Job], ssn.Jobs[r.Job]
		if lq, rq := ssn.Queues[lj.Queue], ssn.Queues[rj.Queue]; lq != rq && lq != nil && rq != nil && preemptorQueue != nil {
			if c := byQueue(lq, rq); c != 0 {
				return c
			}
		}
		return byJob(rj, lj)
	})
}

// PendingTasks are the job's tasks waiting for a node, in task order; gated and best-effort
// ones are not preemptors.
func PendingTasks(ssn *framework.Session, job *api.JobInfo) []*api.TaskInfo {
	var tasks []*api.TaskInfo
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !t.SchGated && !t.BestEffort {
			tasks = append(tasks, t)
		}
	}
	slices.SortStableFunc(tasks, compareBy(ssn.TaskOrderFn))
	return tasks
}

// compareBy turns a session order ("l goes first") into a comparison for sorting.
func compareBy[T any](first func(l, r T) bool) func(l, r T) int {
	return func(l, r T) int {
		switch {
		case first(l, r):
			return -1
		case first(r, l):
			return 1
		}
		return 0
	}
}
