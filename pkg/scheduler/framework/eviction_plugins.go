package framework

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// The plugins' say on evictions, which preempt and reclaim ask (their search for victims is
// actions/internal/evictsearch): whether a job still wants what it has not got (JobStarving),
// whether its queue may take resources back (Preemptive), which pods a task may evict
// (Preemptable, Reclaimable, and victim filters, which no tier overrules) and which of those
// make room on a node (SelectVictims). The gang actions (gangpreempt, gangreclaim) ask the
// same plugins through BundlePreemptable and BundleReclaimable.

// EvictableFn answers, for a preemptor (or reclaimer) task, which of the candidate tasks its
// plugin lets it evict. abstain true: the plugin has no say on this preemptor, and victims
// is not read. A plugin that has a say and allows none returns no victims.
type EvictableFn func(preemptor *api.TaskInfo, candidates []*api.TaskInfo) (victims []*api.TaskInfo, abstain bool)

// AddPreemptableFn registers the plugin's answer for preemption within a queue.
func (ssn *Session) AddPreemptableFn(plugin string, fn EvictableFn) {
	ssn.points.preemptable.add(plugin, fn)
	ssn.points.bundlePreemptable.add(plugin, fn)
}

// AddReclaimableFn registers the plugin's answer for reclaim across queues.
func (ssn *Session) AddReclaimableFn(plugin string, fn EvictableFn) {
	ssn.points.reclaimable.add(plugin, fn)
	ssn.points.bundleReclaimable.add(plugin, fn)
}

// VictimFilterFn keeps, of the victims the tiers chose (Preemptable, Reclaimable), those its
// plugin lets go, in their order. Unlike an EvictableFn it is asked whatever tier its plugin
// is in, after the deciding tier: it is for a protection that no other plugin's say may
// overrule (a PodDisruptionBudget), where a tier rule would drop it whenever an earlier tier
// has a say, as upstream's does to its pdb plugin behind priority, gang and conformance.
type VictimFilterFn func(victims []*api.TaskInfo) []*api.TaskInfo

// AddVictimFilterFn registers the plugin's filter, for preempt where its enablePreemptable is
// on and for reclaim where its enableReclaimable is.
func (ssn *Session) AddVictimFilterFn(plugin string, fn VictimFilterFn) {
	ssn.points.preemptFilter.add(plugin, fn)
	ssn.points.reclaimFilter.add(plugin, fn)
	ssn.points.moveFilter.add(plugin, fn)
}

// VictimSetFn reports whether its plugin lets the victims all go together: a rule on the set
// chosen among the candidates its EvictableFn allows one by one, such as a gang that keeps
// its minimum whichever of its pods go. Asked, like a victim filter, whatever tier its plugin
// is in; the pods already evicted this session are gone from what it counts.
type VictimSetFn func(victims []*api.TaskInfo) bool

// AddVictimSetFn registers the plugin's rule on victim sets, for preempt where its
// enablePreemptable is on and for reclaim where its enableReclaimable is.
func (ssn *Session) AddVictimSetFn(plugin string, fn VictimSetFn) {
	ssn.points.preemptSet.add(plugin, fn)
	ssn.points.reclaimSet.add(plugin, fn)
}

// PreemptTogether reports whether every plugin whose enablePreemptable is on lets the
// victims go together.
func (ssn *Session) PreemptTogether(victims []*api.TaskInfo) bool {
	return together(ssn.points.preemptSet.chain(ssn.Tiers), victims)
}

// ReclaimTogether is PreemptTogether for reclaim, by the plugins whose enableReclaimable is on.
func (ssn *Session) ReclaimTogether(victims []*api.TaskInfo) bool {
	return together(ssn.points.reclaimSet.chain(ssn.Tiers), victims)
}

func together(c chain[VictimSetFn], victims []*api.TaskInfo) bool {
	for _, l := range c {
		if !l.fn(victims) {
			return false
		}
	}
	return true
}

// VictimSelectFn picks, among candidates a preemptor may evict on node (lowest first, as
// they are to go), the ones that make room for it and that together allows to go together
// (PreemptTogether, ReclaimTogether), for a plugin that knows better than "evict in order
// until it fits" (deviceshare: which GPUs the preemptor would use). abstain true: the plugin
// has no say on this preemptor. A plugin with a say that finds no set that makes room
// returns no victims.
type VictimSelectFn func(preemptor *api.TaskInfo, node *api.NodeInfo, candidates []*api.TaskInfo,
	together func([]*api.TaskInfo) bool) (victims []*api.TaskInfo, abstain bool)

// AddVictimSelectFn registers the plugin's choice of victims on a node.
func (ssn *Session) AddVictimSelectFn(plugin string, fn VictimSelectFn) {
	ssn.points.victimSelect.add(plugin, fn)
}

// AddPreemptiveFn registers whether a queue may take resources back for a task (reclaim);
// nil means it may, an error says why not.
func (ssn *Session) AddPreemptiveFn(plugin string, fn AllocatableFn) {
	ssn.points.preemptive.add(plugin, fn)
}

// AddJobStarvingFn registers whether a job still wants resources it has not got.
func (ssn *Session) AddJobStarvingFn(plugin string, fn JobBoolFn) {
	ssn.points.jobStarving.add(plugin, fn)
}

// KeepsJobMinimum declares that the plugin's Preemptable, Reclaimable and VictimSet functions
// are there to keep each victim job at its minimum (gang's). The gang actions keep it their
// own way, by bundles of a job's pods (a job's surplus, or the whole job), and so leave those
// functions out: asked, they would spare every single-pod job, which is always at its minimum.
func (ssn *Session) KeepsJobMinimum(plugin string) {
	ssn.points.bundlePreemptable.leaveOut(plugin)
	ssn.points.bundleReclaimable.leaveOut(plugin)
}

// Preemptable is the victims preemptor may evict among candidates, by the plugins whose
// enablePreemptable is on (see evictable), less those a victim filter of theirs keeps.
func (ssn *Session) Preemptable(preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	victims := evictable(ssn.points.preemptable.chain(ssn.Tiers), preemptor, candidates)
	return filterVictims(ssn.points.preemptFilter.chain(ssn.Tiers), victims)
}

// Reclaimable is Preemptable for reclaim, by the plugins whose enableReclaimable is on.
func (ssn *Session) Reclaimable(reclaimer *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	victims := evictable(ssn.points.reclaimable.chain(ssn.Tiers), reclaimer, candidates)
	return filterVictims(ssn.points.reclaimFilter.chain(ssn.Tiers), victims)
}

// BundlePreemptable is Preemptable for gangpreempt: the same tiers and filters, less the
// plugins that keep job minimums (KeepsJobMinimum).
func (ssn *Session) BundlePreemptable(preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	victims := evictable(ssn.points.bundlePreemptable.chain(ssn.Tiers), preemptor, candidates)
	return filterVictims(ssn.points.preemptFilter.chain(ssn.Tiers), victims)
}

// BundleReclaimable is Reclaimable for gangreclaim, less the plugins that keep job minimums.
func (ssn *Session) BundleReclaimable(reclaimer *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	victims := evictable(ssn.points.bundleReclaimable.chain(ssn.Tiers), reclaimer, candidates)
	return filterVictims(ssn.points.reclaimFilter.chain(ssn.Tiers), victims)
}

// filterVictims passes the victims through every filter of the chain, in tier order.
func filterVictims(c chain[VictimFilterFn], victims []*api.TaskInfo) []*api.TaskInfo {
	for _, l := range c {
		if len(victims) == 0 {
			return nil
		}
		victims = l.fn(victims)
	}
	return victims
}

// evictable combines the chain tier by tier, as upstream: within a tier, the candidates every
// plugin with a say allows (the intersection, in candidate order); the first tier in which a
// plugin has a say decides. Unlike upstream, a plugin with a say that allows none ends it
// with no victims whatever later tiers say: a plugin that protects every candidate (a gang at
// its minimum, kube-system pods) is never overruled. No plugin with a say: no victims.
func evictable(c chain[EvictableFn], preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	var allowed map[api.TaskID]bool // nil until a plugin of the deciding tier has a say
	for i, l := range c {
		if allowed != nil && l.tier != c[i-1].tier {
			break // the tier before decided
		}
		chosen, abstain := l.fn(preemptor, candidates)
		if abstain {
			continue
		}
		if len(chosen) == 0 {
			return nil
		}
		these := make(map[api.TaskID]bool, len(chosen))
		for _, t := range chosen {
			if allowed == nil || allowed[t.UID] {
				these[t.UID] = true
			}
		}
		if len(these) == 0 {
			return nil
		}
		allowed = these
	}
	if allowed == nil {
		return nil
	}
	var out []*api.TaskInfo
	for _, t := range candidates {
		if allowed[t.UID] {
			out = append(out, t)
		}
	}
	return out
}

// SelectVictims is the victims, among the ordered candidates, that the first plugin with a
// say picks to make room for preemptor on node, in the order they are to go; ok is false
// when no plugin has a say, and the caller evicts candidates in order as before. It has no
// enable flag: a plugin registers it only for what it schedules.
func (ssn *Session) SelectVictims(preemptor *api.TaskInfo, node *api.NodeInfo, candidates []*api.TaskInfo,
	together func([]*api.TaskInfo) bool) (victims []*api.TaskInfo, ok bool) {
	for _, l := range ssn.points.victimSelect.chain(ssn.Tiers) {
		if chosen, abstain := l.fn(preemptor, node, candidates, together); !abstain {
			return chosen, true
		}
	}
	return nil, false
}

// Preemptive: nil when every plugin whose enablePreemptive is on lets the queue take
// resources back for the task, else the first refusal.
func (ssn *Session) Preemptive(queue *api.QueueInfo, task *api.TaskInfo) error {
	for _, l := range ssn.points.preemptive.chain(ssn.Tiers) {
		if err := l.fn(queue, task); err != nil {
			return err
		}
	}
	return nil
}

// JobStarving: the first tier with a function decides, and all of that tier's must say the
// job is starving; false when no plugin has a say.
func (ssn *Session) JobStarving(job *api.JobInfo) bool {
	c := ssn.points.jobStarving.chain(ssn.Tiers)
	if len(c) == 0 {
		return false
	}
	for _, l := range c {
		if l.tier != c[0].tier {
			break
		}
		if !l.fn(job) {
			return false
		}
	}
	return true
}
