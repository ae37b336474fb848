// Package gangevict is what gangpreempt and gangreclaim share, as Volcano v1.15 decides them:
// a starving job takes its victims a victim job at a time, in bundles. Each victim job gives
// a surplus bundle (its pods, of which only as many may go as keep it at its minMember and
// each of its roles at its minTaskMember) and, where losing more would break it, a whole
// bundle (the whole job goes). Surplus bundles come before whole ones, then the least
// important victim jobs first (of other queues, the session's victim queue order; then the
// lower job priority), then those that cover most of the need for what they cost, then job
// order, reversed; the job evicts only from the fewest bundles, in that order, with which its
// whole gang then has a place.
//
// Upstream ranks by the session's whole job order before what a bundle costs: drf's share
// there puts a 3-pod gang before a single-pod job of the same priority, so the gang goes
// whole where the single-pod job beside its surplus member would have made the same room. A single-pod job is at its minimum, so
// it is a whole bundle of one.
//
// Within the chosen bundles, which pods go is evictsearch's: for each pending task a node
// where evicting some of them makes room (deviceshare choosing per GPU for a vGPU pod), all
// in one statement that is kept only when the whole job is then pipelined. A whole bundle
// that loses a pod then loses the rest of its pods too: a job broken below its minimum (or a
// role below its own) cannot run, and its other pods would only hold their room.
package gangevict

import (
	"cmp"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Bundle is a victim job's pods that the preemptor may take together.
type Bundle struct {
	Job *api.JobInfo
	// Tasks are the job's candidates: running or bound pods the action and the plugins let go.
	Tasks []*api.TaskInfo
	// Whole: the whole job may go. Otherwise only its surplus may: as many of Tasks as keep
	// it at its minimum, its roles at theirs (any number when it is below its minMember
	// already).
	Whole bool
	// roi is how much of the need its pods cover for what the job loses; +Inf for a surplus
	// bundle, which costs the job nothing it needs.
	roi float64
}

// bundles are the bundles a preemptor job may take from, in the order they are to be
// chosen: the candidates that filter accepts, grouped by job, less those allow (the plugins)
// refuses; need is what the job's pending tasks ask for. A whole bundle needs all its pods
// allowed; wholeToo false leaves whole bundles out.
func bundles(ssn *framework.Session, preemptor *api.TaskInfo, need *api.Resource, filter func(*api.TaskInfo) bool,
	allow evictsearch.Chooser, wholeToo bool) []*Bundle {
	byJob := map[api.JobID][]*api.TaskInfo{}
	for _, node := range ssn.NodeList {
		for _, t := range evictsearch.CandidatesOn(ssn, node, filter) {
			byJob[t.Job] = append(byJob[t.Job], t)
		}
	}
	var all []*Bundle
	for id, tasks := range byJob {
		job := ssn.Jobs[id]
		slices.SortFunc(tasks, func(a, b *api.TaskInfo) int { return cmp.Compare(a.UID, b.UID) })
		left := spareOf(job)
		if left.job < 0 {
			all = append(all, &Bundle{Job: job, Tasks: tasks, roi: math.Inf(1)})
			continue
		}
		surplus, n := left.surplus(tasks)
		if len(surplus) > 0 {
			all = append(all, &Bundle{Job: job, Tasks: surplus, roi: math.Inf(1)})
		}
		if n < len(tasks) && wholeToo {
			all = append(all, &Bundle{Job: job, Tasks: tasks, Whole: true, roi: roi(tasks, job, need)})
		}
	}
	sortBundles(ssn, preemptor, all)
	// The plugins see each candidate once, in the order the bundles are chosen: rules that
	// count what goes before (a queue's share) count in that order.
	var flat []*api.TaskInfo
	seen := map[api.TaskID]bool{}
	for _, b := range all {
		for _, t := range b.Tasks {
			if !seen[t.UID] {
				seen[t.UID] = true
				flat = append(flat, t)
			}
		}
	}
	allowed := map[api.TaskID]bool{}
	for _, t := range allow(preemptor, flat) {
		allowed[t.UID] = true
	}
	out := all[:0]
	for _, b := range all {
		kept := slices.DeleteFunc(slices.Clone(b.Tasks), func(t *api.TaskInfo) bool { return !allowed[t.UID] })
		switch {
		case b.Whole && len(kept) == len(b.Tasks), !b.Whole && len(kept) > 0:
			b.Tasks = kept
			out = append(out, b)
		}
	}
	return out
}

// sortBundles orders the bundles as they are to be chosen: surplus before whole, then the
// least important victim job first (its queue first in the session's victim queue order
// for the preemptor's; then the lower priority), then the higher roi, then the job that
// goes last in job order, then by job.
func sortBundles(ssn *framework.Session, preemptor *api.TaskInfo, bundles []*Bundle) {
	var preemptorQueue *api.QueueInfo
	if job := ssn.JobFor(preemptor); job != nil {
		preemptorQueue = ssn.Queues[job.Queue]
	}
	first := func(l, r bool) int {
		switch {
		case l && !r:
			return -1
		case r && !l:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(bundles, func(l, r *Bundle) int {
		if c := first(!l.Whole, !r.Whole); c != 0 {
			return c
		}
		lq, rq := ssn.Queues[l.Job.Queue], ssn.Queues[r.Job.Queue]
		if lq != rq && lq != nil && rq != nil && preemptorQueue != nil {
			if c := first(ssn.VictimQueueOrderFn(lq, rq, preemptorQueue), ssn.VictimQueueOrderFn(rq, lq, preemptorQueue)); c != 0 {
				return c
			}
		}
		if c := cmp.Or(cmp.Compare(l.Job.Priority, r.Job.Priority), cmp.Compare(r.roi, l.roi)); c != 0 {
			return c
		}
		// Reversed: the job scheduled last goes first.
		if c := first(ssn.JobOrderFn(r.Job, l.Job), ssn.JobOrderFn(l.Job, r.Job)); c != 0 {
			return c
		}
		return cmp.Compare(l.Job.UID, r.Job.UID)
	})
}

// spare is what a victim job can lose and still run, as gang counts its readiness: its
// placed pods above minMember, and for each role with a minTaskMember (where the roles bind)
// that role's placed pods above it. Upstream's bundles (actions/utils/bundle.go in v1.15.1)
// count the same.
type spare struct {
	job   int32
	roles map[string]int32
}

func spareOf(job *api.JobInfo) spare {
	return spare{job: job.ReadyTaskNum() - job.MinAvailable, roles: job.RoleSurplus()}
}

// allows: a pod of the role may go, the job and the role keeping their minimum.
func (s spare) allows(role string) bool {
	n, bound := s.roles[role]
	return s.job > 0 && (!bound || n > 0)
}

// take counts a pod of the role gone.
func (s *spare) take(role string) {
	s.job--
	if _, bound := s.roles[role]; bound {
		s.roles[role]--
	}
}

// intact: the job keeps minMember, and each role its minTaskMember.
func (s spare) intact() bool {
	for _, n := range s.roles {
		if n < 0 {
			return false
		}
	}
	return s.job >= 0
}

// surplus are the tasks of roles the job can lose a pod of, and n how many of tasks may go
// together, the job and its roles keeping their minimum.
func (s spare) surplus(tasks []*api.TaskInfo) (surplus []*api.TaskInfo, n int) {
	left := spare{job: s.job, roles: maps.Clone(s.roles)}
	for _, t := range tasks {
		if !s.allows(t.TaskRole) {
			continue
		}
		surplus = append(surplus, t)
		if left.allows(t.TaskRole) {
			left.take(t.TaskRole)
			n++
		}
	}
	return surplus, n
}

// roi is how much of need the tasks cover, each dimension of need up to its amount, for
// what the whole job holds in the same dimensions: of two whole jobs, the one that frees the
// need with less lost goes first.
func roi(tasks []*api.TaskInfo, job *api.JobInfo, need *api.Resource) float64 {
	local, whole := api.EmptyResource(), api.EmptyResource()
	for _, t := range tasks {
		local.Add(t.Resreq)
	}
	for _, t := range job.Tasks {
		whole.Add(t.Resreq)
	}
	cost := share(whole, need, false)
	if cost == 0 {
		return math.Inf(1)
	}
	return share(local, need, true) / cost
}

// share sums, over the dimensions need asks for, res's amount as a fraction of need's,
// each at most 1 when capped.
func share(res, need *api.Resource, capped bool) float64 {
	total := 0.0
	add := func(v, n float64) {
		if n <= 0 {
			return
		}
		if capped {
			v = min(v, n)
		}
		total += v / n
	}
	add(res.MilliCPU, need.MilliCPU)
	add(res.Memory, need.Memory)
	for name, n := range need.ScalarResources {
		if name == corev1.ResourcePods {
			continue
		}
		add(res.Get(name), n)
	}
	return total
}

// chosen is the victims the first n bundles allow: which pods may go, and which jobs may go
// whole.
type chosen struct {
	tasks map[api.TaskID]bool
	whole map[api.JobID]bool
	// broken are the jobs below their minimum before anything went: any of their pods may go.
	broken map[api.JobID]bool
}

func choose(bundles []*Bundle) chosen {
	c := chosen{tasks: map[api.TaskID]bool{}, whole: map[api.JobID]bool{}, broken: map[api.JobID]bool{}}
	for _, b := range bundles {
		for _, t := range b.Tasks {
			c.tasks[t.UID] = true
		}
		if b.Whole {
			c.whole[b.Job.UID] = true
		} else if b.Job.ReadyTaskNum() < b.Job.MinAvailable {
			c.broken[b.Job.UID] = true
		}
	}
	return c
}

// has: the task is one of the chosen bundles'.
func (c chosen) has(t *api.TaskInfo) bool { return c.tasks[t.UID] }

// together: the victims may all go, each job whose whole bundle is not chosen keeping its
// minimum and its roles theirs. The pods already evicted in the session are gone from what
// it counts.
func (c chosen) together(ssn *framework.Session, victims []*api.TaskInfo) bool {
	left := map[api.JobID]*spare{}
	for _, v := range victims {
		job := ssn.JobFor(v)
		if job == nil || c.whole[job.UID] || c.broken[job.UID] {
			continue
		}
		s := left[job.UID]
		if s == nil {
			s = new(spareOf(job))
			left[job.UID] = s
		}
		if !s.allows(v.TaskRole) {
			return false
		}
		s.take(v.TaskRole)
	}
	return true
}
