package gangevict

import (
	"slices"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// The action arguments (under configurations) upstream's gang actions read.
const (
	// AllowWholeBundleArg lets a whole victim job go when its surplus cannot make room; on
	// unless the file turns it off.
	AllowWholeBundleArg = "allowWholeBundle"
	// MaxDomainsArg caps, upstream, the hyper-node domains searched for each job. This
	// scheduler has no hyper-nodes: the cluster is the one domain, and the argument, read
	// and checked as upstream reads it, has no effect.
	MaxDomainsArg = "maxDomains"
	// defaultMaxDomains is upstream's default.
	defaultMaxDomains = 8
)

// Scope is what the starving jobs of one queue may take.
type Scope struct {
	// MayEvict, when set, is asked first for each pending task; its refusal ends the job's
	// turn.
	MayEvict func(*api.TaskInfo) error
	// Candidates accepts the pods a preemptor job may take from, among those that may be
	// victims at all (running or bound, asking for something, not volcano.sh/preemptable:
	// "false", nor of a job whose PodGroup is: api.JobInfo.Preemptable); pods of the
	// preemptor's own job are never taken.
	Candidates func(preemptor *api.JobInfo, t *api.TaskInfo) bool
	// Allow is the plugins' say on the candidates (Session.BundlePreemptable or
	// BundleReclaimable), for the preemptor's first pending task.
	Allow evictsearch.Chooser
}

// NewAction is the gang action under name (also what its victims' Evict events say); scope
// is what the starving jobs of a queue may take, asked at the queue's turn; ok false: they
// take nothing this cycle.
func NewAction(name string, scope func(ssn *framework.Session, queue *api.QueueInfo) (s Scope, ok bool)) framework.Action {
	return action{name: name, scope: scope}
}

type action struct {
	name  string
	scope func(*framework.Session, *api.QueueInfo) (Scope, bool)
}

func (a action) Name() string { return a.name }

// Execute gives every starving job its turn, queues in queue order and each queue's jobs in
// job order, as preempt and reclaim do.
func (a action) Execute(ssn *framework.Session) {
	wholeToo := a.arguments(ssn)
	queues, starving := evictsearch.StarvingJobs(ssn)
	for _, queue := range queues {
		scope, ok := a.scope(ssn, queue)
		if !ok {
			continue
		}
		for _, job := range starving[queue.UID] {
			if ssn.Stopping() {
				return
			}
			a.forJob(ssn, job, scope, wholeToo)
		}
	}
}

// arguments reads the action's arguments: whether whole bundles may go. A malformed value is
// reported and leaves the default.
func (a action) arguments(ssn *framework.Session) (wholeToo bool) {
	wholeToo, maxDomains := true, defaultMaxDomains
	for _, cfg := range ssn.Configurations {
		if cfg.Name != a.name {
			continue
		}
		if err := cfg.Arguments.GetBool(&wholeToo, AllowWholeBundleArg); err != nil {
			klog.ErrorS(err, "Ignoring a malformed action argument", "action", a.name)
		}
		if err := cfg.Arguments.GetInt(&maxDomains, MaxDomainsArg); err != nil {
			klog.ErrorS(err, "Ignoring a malformed action argument", "action", a.name)
		}
	}
	if maxDomains <= 0 {
		klog.InfoS("Ignoring a maxDomains below 1, as upstream; it has no effect here", "action", a.name, "maxDomains", maxDomains)
	}
	return wholeToo
}

// forJob makes room for the job from the fewest bundles, in their order, with which its whole
// gang then has a place, and commits those evictions; when even every bundle leaves it
// without a place, nothing is evicted and the tasks say why.
func (a action) forJob(ssn *framework.Session, job *api.JobInfo, scope Scope, wholeToo bool) {
	pending := evictsearch.PendingTasks(ssn, job)
	if len(pending) == 0 {
		return
	}
	need := api.EmptyResource()
	for _, t := range pending {
		need.Add(t.InitResreq)
	}
	filter := func(t *api.TaskInfo) bool {
		if victim := ssn.Jobs[t.Job]; victim != nil && !victim.Preemptable() {
			return false
		}
		return t.Job != job.UID && scope.Candidates(job, t)
	}
	all := bundles(ssn, pending[0], need, filter, scope.Allow, wholeToo)
	try := func(n int) *evictsearch.Attempt {
		c := choose(all[:n])
		return evictsearch.TryJob(ssn, job, evictsearch.Scope{
			MayEvict:   scope.MayEvict,
			Candidates: c.has,
			// The plugins had their say when the bundles were made.
			Choose:   func(_ *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo { return candidates },
			Together: func(victims []*api.TaskInfo) bool { return c.together(ssn, victims) },
		}, a.name)
	}
	attempt := try(len(all))
	pipelined := attempt.Pipelined()
	attempt.Stmt.Discard()
	if !pipelined {
		klog.V(3).InfoS("Evictions would not let the job run; nothing evicted", "podGroup", klog.KRef(job.Namespace, job.Name), "action", a.name)
		attempt.Explain()
		return
	}
	// The fewest bundles that serve: more bundles leave the search more to choose from, so
	// whether n serve grows with n, and a bisection finds the least.
	lo, hi := 0, len(all)
	for lo < hi {
		mid := (lo + hi) / 2
		attempt := try(mid)
		if attempt.Pipelined() {
			hi = mid
		} else {
			lo = mid + 1
		}
		attempt.Stmt.Discard()
	}
	attempt = try(hi)
	a.takeWhole(ssn, attempt.Stmt, all[:hi])
	attempt.Stmt.Commit()
}

// takeWhole evicts the rest of each whole bundle the attempt took pods from and left below
// its job's minMember or a role below its minTaskMember: the job cannot run without the
// pods that went.
func (a action) takeWhole(ssn *framework.Session, stmt *framework.Statement, chosen []*Bundle) {
	for _, b := range chosen {
		taken := slices.ContainsFunc(b.Tasks, func(t *api.TaskInfo) bool { return t.Status == api.Releasing })
		if !b.Whole || !taken || spareOf(b.Job).intact() {
			continue
		}
		for _, t := range b.Tasks {
			if t.Status != api.Running && t.Status != api.Bound {
				continue
			}
			if err := stmt.Evict(t, a.name); err != nil {
				klog.V(3).InfoS("Pod of a job taken whole cannot be evicted", "pod", klog.KRef(t.Namespace, t.Name), "err", err)
			}
		}
	}
}
