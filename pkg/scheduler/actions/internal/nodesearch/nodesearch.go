// Package nodesearch finds the node a task goes to, for the actions that place tasks
// (allocate and backfill): the nodes with room for it that pass every predicate, searched
// from where the previous search stopped and bounded by Options, then the best-scored one.
package nodesearch

import (
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PredicateErrorCacheArg is the action argument (under configurations) that switches the
// predicate error cache; it defaults to on.
const PredicateErrorCacheArg = "predicateErrorCacheEnable"

// PredicateErrorCacheEnabled reads predicateErrorCacheEnable from the action's
// configuration; it is on unless the file turns it off. A value that is not a bool is
// reported and leaves it on.
func PredicateErrorCacheEnabled(ssn *framework.Session, actionName string) bool {
	enabled := true
	for _, cfg := range ssn.Configurations {
		if cfg.Name != actionName {
			continue
		}
		if err := cfg.Arguments.GetBool(&enabled, PredicateErrorCacheArg); err != nil {
			klog.ErrorS(err, "Ignoring a malformed action argument", "action", actionName)
		}
	}
	return enabled
}

// NodeSearch finds the node a task goes to: the nodes that have room for it
// and pass every predicate, searched from where the previous search stopped, then the best
// of them. allocate and backfill each keep one for the life of the scheduler, holding only
// what outlives a session; Open gives the search over one session.
//
// The search is sequential. Upstream fans it out over 16 workers; here a predicate is a few
// hundred nanoseconds and the target is one core, where the fan-out costs more than it saves
// and makes the result depend on timing.
type NodeSearch struct {
	opts Options
	// offset is where the next search starts. It moves past every node a search examined,
	// so that every node gets its turn at being first and, with no scoring, pods spread
	// instead of piling onto the first nodes of the list.
	offset int
}

// New makes a search bounded by opts.
func New(opts Options) *NodeSearch { return &NodeSearch{opts: opts} }

// SessionSearch is a NodeSearch over one session's nodes. It is dropped with the session
// (so that it keeps no snapshot alive), and is not safe for concurrent use: actions run one
// at a time.
type SessionSearch struct {
	owner     *NodeSearch // whose offset the searches move
	ssn       *framework.Session
	nodes     []*api.NodeInfo
	numToFind int
	// scoring: some plugin ranks nodes. Without one any feasible node is as good as the next,
	// so the search stops at the first node that can run the task now.
	scoring bool
	// errorCache remembers, per job and role, why each node failed (by its position in
	// nodes; nil until one has): the role's other tasks ask the same of the node and get the
	// same answer. nil when disabled. A task whose nodes depend on where other pods are
	// (api.HasPodConstraints) neither reads nor fills it: a node its spread constraint
	// refused one pod of the role takes the next once another has gone to the other zone,
	// and one its affinity refused takes it once a pod it selects is placed there. Nor does
	// a task with volumes the volume plugins read (api.HasSchedulingVolumes): each pod of a
	// role may have a claim of its own (per-pod ephemeral volumes), whose only PV sits on
	// another node than its sibling's.
	errorCache map[roleKey][]*api.Status
	// caching: the task being searched for reads and fills the cache under role, whose
	// entry cached is (nil while no node has failed).
	caching bool
	role    roleKey
	cached  []*api.Status
	// unplaceable are the searches that found no node since the last placement or undo
	// (forget drops them), newest last: a task that every predicate answers as it answered
	// one of them (Session.SamePredicates) and that asks the same resources finds no node
	// either, for the same reasons, and is not searched again. Pending gangs of one shape
	// that cannot fit are the case: each was searched over every node in turn, cycle after
	// cycle. At most maxUnplaceable are kept, so that a task is compared with few.
	unplaceable []unplaceable
	// insufficient holds one "Insufficient <name>" status per resource name, shared by every
	// node that lacks it (statuses are read-only once made).
	insufficient map[corev1.ResourceName]*api.Status
	// Scratch reused by every search, so that a search allocates nothing when it succeeds.
	// failures are the statuses of the nodes that failed, in the order examined.
	feasible []candidate
	failures []*api.Status
	// ranked are the feasible nodes best chooses among, and scores their scores.
	ranked []*api.NodeInfo
	scores []float64
	// demands are the resources the task being searched for requests; demandsID numbers
	// them, changing only when a task requests something else. scratch holds the next
	// task's until they are compared.
	demands, scratch []demand
	demandsID        uint64
	// rooms memoizes each node's room for the demands (by its position in nodes), built on
	// the first search. The pods of a gang or a deployment ask every node the same, search
	// after search, and reading a node's resource maps (each its own allocation) was the
	// largest cost of a search. A node's accounting changes only with a placement on it or
	// its undo, and forget clears the node's entry then; a placement refused by an earlier
	// event handler than the search's leaves the node as it was.
	rooms     []roomMemo
	positions map[*api.NodeInfo]int
}

// roomMemo is what room said of a node for the demands numbered demands; 0 is none.
type roomMemo struct {
	demands uint64
	now     bool
	short   corev1.ResourceName
}

// maxUnplaceable bounds SessionSearch.unplaceable.
const maxUnplaceable = 8

// unplaceable is a search that found no node: the task, the resources it asked, each node's
// status (by position) and the record Find returned.
type unplaceable struct {
	task      *api.TaskInfo
	demands   []demand
	statuses  []*api.Status
	fitErrors *api.FitErrors
}

type roleKey struct {
	job  api.JobID
	role string
}

// candidate is a node that passed; now says it has room at once (gradient 1), not only once
// releasing tasks are gone (gradient 2).
type candidate struct {
	node *api.NodeInfo
	now  bool
}

// Open starts searching the session's nodes. cacheErrors turns on the predicate error cache.
func (s *NodeSearch) Open(ssn *framework.Session, cacheErrors bool) *SessionSearch {
	ss := &SessionSearch{
		owner:        s,
		ssn:          ssn,
		nodes:        ssn.NodeList,
		numToFind:    s.opts.feasibleNodesToFind(len(ssn.NodeList)),
		scoring:      ssn.HasNodeOrder(),
		insufficient: map[corev1.ResourceName]*api.Status{},
	}
	if cacheErrors {
		ss.errorCache = map[roleKey][]*api.Status{}
	}
	ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: ss.forget, DeallocateFunc: ss.forget})
	return ss
}

// forget drops the memo of the node a task was placed on or taken from, and the searches
// that found no node: the node may take one of them now.
func (s *SessionSearch) forget(e *framework.Event) {
	if i, ok := s.positions[e.Node]; ok {
		s.rooms[i] = roomMemo{}
	}
	clear(s.unplaceable)
	s.unplaceable = s.unplaceable[:0]
}

// Find returns the node the task should go to, or nil and why every node examined failed.
// A node the pod was nominated to (by a preemption) is tried first.
func (s *SessionSearch) Find(task *api.TaskInfo) (*api.NodeInfo, *api.FitErrors) {
	if node := s.nominated(task); node != nil {
		return node, nil
	}
	s.feasible, s.failures = s.feasible[:0], s.failures[:0]
	s.setDemands(task)
	s.caching = s.errorCache != nil && task.TaskRole != "" &&
		!api.HasPodConstraints(task.Pod) && !api.HasSchedulingVolumes(task.Pod)
	s.cached = nil
	if s.caching {
		s.role = roleKey{job: task.Job, role: task.TaskRole}
		s.cached = s.errorCache[s.role]
	}
	// A role's cached statuses may be older than the session's last change: a search that
	// read them neither answers from another search nor answers for one.
	fresh := s.cached == nil
	if fresh {
		if u := s.sameAsUnplaceable(task); u != nil {
			if s.caching {
				s.cached = u.statuses
				s.errorCache[s.role] = u.statuses
			}
			return nil, u.fitErrors
		}
	}
	n := len(s.nodes)
	start := s.owner.offset
	examined := 0
	for examined < n {
		i := (start + examined) % n
		node := s.nodes[i]
		examined++
		status, now := s.check(task, i, node)
		if status != nil {
			s.failures = append(s.failures, status)
			continue
		}
		s.feasible = append(s.feasible, candidate{node: node, now: now})
		if (now && !s.scoring) || len(s.feasible) >= s.numToFind {
			break
		}
	}
	if n > 0 {
		s.owner.offset = (start + examined) % n
	}
	if len(s.feasible) == 0 {
		fe := countFailures(s.failures)
		if fresh {
			s.addUnplaceable(task, start, fe)
		}
		return nil, fe
	}
	return s.best(task), nil
}

// sameAsUnplaceable returns the search that found no node for a task asking the same
// resources that every predicate answers alike, or nil.
func (s *SessionSearch) sameAsUnplaceable(task *api.TaskInfo) *unplaceable {
	for i := len(s.unplaceable) - 1; i >= 0; i-- {
		u := &s.unplaceable[i]
		if slices.Equal(u.demands, s.demands) && s.ssn.SamePredicates(u.task, task) {
			return u
		}
	}
	return nil
}

// addUnplaceable keeps the search that just failed on every node, starting at node start,
// for the tasks that would fail alike.
func (s *SessionSearch) addUnplaceable(task *api.TaskInfo, start int, fe *api.FitErrors) {
	n := len(s.nodes)
	statuses := make([]*api.Status, n)
	for k, status := range s.failures {
		statuses[(start+k)%n] = status
	}
	if len(s.unplaceable) == maxUnplaceable {
		s.unplaceable = slices.Delete(s.unplaceable, 0, 1)
	}
	s.unplaceable = append(s.unplaceable, unplaceable{task: task, demands: slices.Clone(s.demands), statuses: statuses, fitErrors: fe})
}

// FailAllNodes is the record of a task that failed before any node was looked at (a
// pre-predicate): the same reason for every node, as upstream reports it.
func (s *SessionSearch) FailAllNodes(err error) *api.FitErrors { return FailAll(s.nodes, err) }

// FailAll records err as every node's unresolvable reason.
func FailAll(nodes []*api.NodeInfo, err error) *api.FitErrors {
	fe := api.NewFitErrors()
	fe.AddNodes(len(nodes), api.NewStatus(api.UnschedulableAndUnresolvable, err.Error()))
	return fe
}

// countFailures records the failed nodes' statuses, one per node: nodes that fail alike share
// a status (a plugin's verdicts, the search's insufficient ones), so a run of them is counted
// at once.
func countFailures(failures []*api.Status) *api.FitErrors {
	fe := api.NewFitErrors()
	for i := 0; i < len(failures); {
		j := i + 1
		for j < len(failures) && failures[j] == failures[i] {
			j++
		}
		fe.AddNodes(j-i, failures[i])
		i = j
	}
	return fe
}

// InsufficientReason is allocate's reason for a node short of a resource, in kube-scheduler's
// words.
func InsufficientReason(name corev1.ResourceName) string { return "Insufficient " + string(name) }

// nominated returns the node a preemption nominated the pod to, when it still takes the task.
func (s *SessionSearch) nominated(task *api.TaskInfo) *api.NodeInfo {
	if task.Pod == nil || task.Pod.Status.NominatedNodeName == "" {
		return nil
	}
	node, ok := s.ssn.Nodes[task.Pod.Status.NominatedNodeName]
	if !ok {
		return nil
	}
	if _, short := roomFor(task.InitResreq, node); short != "" || s.ssn.Predicate(task, node).Failed() {
		return nil
	}
	return node
}

// setDemands reads what the task requests for the searches of its nodes.
func (s *SessionSearch) setDemands(task *api.TaskInfo) {
	if s.rooms == nil {
		s.rooms = make([]roomMemo, len(s.nodes))
		s.positions = make(map[*api.NodeInfo]int, len(s.nodes))
		for i, node := range s.nodes {
			s.positions[node] = i
		}
	}
	s.scratch = demandsOf(s.scratch[:0], task.InitResreq)
	if s.demandsID == 0 || !slices.Equal(s.scratch, s.demands) {
		s.demands, s.scratch = s.scratch, s.demands
		s.demandsID++
	}
}

// check says why node i cannot take the task, or nil: first the resources (s.demands),
// then every predicate, through the error cache of the task's job and role. When it can,
// now says whether it has the room at once.
func (s *SessionSearch) check(task *api.TaskInfo, i int, node *api.NodeInfo) (status *api.Status, now bool) {
	if s.cached != nil && s.cached[i] != nil {
		return s.cached[i], false
	}
	m := &s.rooms[i]
	if m.demands != s.demandsID {
		now, short := room(s.demands, node)
		*m = roomMemo{demands: s.demandsID, now: now, short: short}
	}
	now, short := m.now, m.short
	if short == "" {
		status = s.ssn.Predicate(task, node)
	} else {
		status = s.insufficientStatus(short)
	}
	if status != nil && s.caching {
		if s.cached == nil {
			s.cached = make([]*api.Status, len(s.nodes))
			s.errorCache[s.role] = s.cached
		}
		s.cached[i] = status
	}
	return status, now
}

// best picks among the feasible nodes: only those with room now if there are any; the one
// node if there is one; otherwise the highest score (Session.NodeScores, over those nodes
// alone), ties broken by tieKey.
func (s *SessionSearch) best(task *api.TaskInfo) *api.NodeInfo {
	wantNow := slices.ContainsFunc(s.feasible, func(c candidate) bool { return c.now })
	s.ranked = s.ranked[:0]
	for _, c := range s.feasible {
		if c.now == wantNow {
			s.ranked = append(s.ranked, c.node)
		}
	}
	if len(s.ranked) == 1 || !s.scoring {
		return s.ranked[0]
	}
	s.scores = slices.Grow(s.scores[:0], len(s.ranked))[:len(s.ranked)]
	s.ssn.NodeScores(task, s.ranked, s.scores)
	var best *api.NodeInfo
	var bestScore float64
	var bestTie uint64
	for i, node := range s.ranked {
		score := s.scores[i]
		if best != nil && score < bestScore {
			continue
		}
		tie := tieKey(task.UID, node.Name)
		if best == nil || score > bestScore || tie < bestTie {
			best, bestScore, bestTie = node, score, tie
		}
	}
	return best
}

// tieKey orders the nodes of equal score for a task. Upstream picks one of them at random,
// which spreads pods that no plugin tells apart (no CPU or memory request, no GPU policy)
// over the nodes, as users see in the tutorials; always taking the first by name would stack
// them on one node. An FNV-1a hash of the pod's UID and the node's name spreads them alike
// and gives the same node for the same pod and nodes, so a decision can still be replayed.
// It is written out rather than taken from hash/fnv, whose Hash64 would allocate for every
// node compared; hash/maphash is seeded per process, so not replayable.
func tieKey(uid api.TaskID, node string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(uid); i++ {
		h = (h ^ uint64(uid[i])) * prime
	}
	h *= prime // a 0 byte between the two, so that ("ab", "c") and ("a", "bc") differ
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * prime
	}
	return h
}

// Place puts the task on the node in the statement: allocated when the node has room now,
// pipelined when the room is still held by releasing tasks, as the node's resources or a
// plugin (framework.ErrRoomReleasing: the GPUs the task needs are still held) say.
func Place(stmt *framework.Statement, task *api.TaskInfo, node *api.NodeInfo) error {
	if now, _ := roomFor(task.InitResreq, node); now {
		err := stmt.Allocate(task, node)
		if !errors.Is(err, framework.ErrRoomReleasing) {
			return err
		}
	}
	return stmt.Pipeline(task, node)
}

// PlacementFailure is the record of a task whose placement a plugin refused (an event
// handler's error, e.g. no device left): the node and the plugin's reason.
func PlacementFailure(node *api.NodeInfo, err error) *api.FitErrors {
	// The statement wraps the handler's error in "place <pod> on <node>: ..."; the histogram
	// already names the node, so it shows the handler's reason alone.
	if inner := errors.Unwrap(err); inner != nil {
		err = inner
	}
	fe := api.NewFitErrors()
	fe.SetNodeError(node.Name, api.NewStatus(api.Error, err.Error()))
	return fe
}

// demand is an amount of one resource a task requests, in api.Resource's units.
type demand struct {
	name   corev1.ResourceName
	amount float64
}

// demandsOf appends to dst the resources req requests (pods and extended resources
// included): cpu, memory, then the extended resources by name, the order in which a
// shortfall is reported (upstream reports the first in map order, so its message changes
// from run to run). Only requested dimensions are listed, so a node short of a resource the
// task does not use still takes it. A search reads the request once, not its map for every
// node.
func demandsOf(dst []demand, req *api.Resource) []demand {
	if requested(req.MilliCPU) {
		dst = append(dst, demand{name: corev1.ResourceCPU, amount: req.MilliCPU})
	}
	if requested(req.Memory) {
		dst = append(dst, demand{name: corev1.ResourceMemory, amount: req.Memory})
	}
	scalars := len(dst)
	for name, amount := range req.ScalarResources {
		if requested(amount) {
			dst = append(dst, demand{name: name, amount: amount})
		}
	}
	slices.SortFunc(dst[scalars:], func(a, b demand) int { return strings.Compare(string(a.name), string(b.name)) })
	return dst
}

// requested: the task asks for some of the resource.
func requested(amount float64) bool { return amount >= api.Tolerance }

// room says whether the node has every demand available now (Idle), and names the first
// one it lacks in the future (Idle + Releasing - Pipelined, computed here so that no
// Resource is built per node); short is "" when the node has room in the future.
func room(demands []demand, node *api.NodeInfo) (now bool, short corev1.ResourceName) {
	now = true
	for _, d := range demands {
		idle := node.Idle.Get(d.name)
		if !fitsAmount(d.amount, idle) {
			now = false
		}
		if short == "" && !fitsAmount(d.amount, idle+(node.Releasing.Get(d.name)-node.Pipelined.Get(d.name))) {
			short = d.name
		}
	}
	return now, short
}

// roomFor is room for a request outside a search.
func roomFor(req *api.Resource, node *api.NodeInfo) (now bool, short corev1.ResourceName) {
	var buf [8]demand // more than a pod requests, so that nothing is allocated
	return room(demandsOf(buf[:0], req), node)
}

// fitsAmount is "amount <= avail" with api.Tolerance.
func fitsAmount(amount, avail float64) bool {
	return amount <= avail || amount-avail < api.Tolerance
}

func (s *SessionSearch) insufficientStatus(name corev1.ResourceName) *api.Status {
	status, ok := s.insufficient[name]
	if !ok {
		status = api.NewStatus(api.Unschedulable, InsufficientReason(name))
		s.insufficient[name] = status
	}
	return status
}
