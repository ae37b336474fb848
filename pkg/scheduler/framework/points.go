package framework

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"

// sessionPoints are the session's extension points, each with the function type plugins
// register for it and the gate (the flag of a plugin's configuration entry) that enables it.
// An extension point is a field here, the typed Add*Fn that registers into it and the Session
// method that combines its chain; nothing else names it. Some registrations feed several
// points, one for each way the functions are asked.
type sessionPoints struct {
	jobOrder         point[JobCompareFn, enableJobOrder]
	queueOrder       point[QueueCompareFn, enableQueueOrder]
	victimQueueOrder point[VictimQueueCompareFn, ungated]
	taskOrder        point[TaskCompareFn, enableTaskOrder]
	prePredicate     point[PrePredicateFn, enablePredicate]
	predicate        point[PredicateFn, enablePredicate]
	// samePredicates is never chained: SamePredicates asks it for the predicate chain's
	// plugins.
	samePredicates point[SamePredicatesFn, ungated]
	nodeOrder      point[NodeOrderFn, enableNodeOrder]
	batchNodeOrder point[BatchNodeOrderFn, enableNodeOrder]
	overused       point[QueueFn, enabledOverused]
	allocatable    point[AllocatableFn, enabledAllocatable]
	jobReady       point[JobBoolFn, enableJobReady]
	jobPipelined   point[VoteFn, enableJobPipelined]
	jobEnqueueable point[VoteFn, enableJobEnqueued]
	jobEnqueued    point[JobFn, enableJobEnqueued]
	jobValid       point[JobValidFn, ungated]
	queueUsage     point[QueueUsageFn, ungated]
	// bundlePreemptable and bundleReclaimable are preemptable and reclaimable less the
	// plugins that keep job minimums (KeepsJobMinimum), for the gang actions.
	preemptable, bundlePreemptable point[EvictableFn, enablePreemptable]
	reclaimable, bundleReclaimable point[EvictableFn, enableReclaimable]
	// A victim filter is asked for preempt, for reclaim and, whatever its plugin's flags,
	// for moves (MovesAllowed); a victim set rule for preempt and for reclaim.
	preemptFilter point[VictimFilterFn, enablePreemptable]
	reclaimFilter point[VictimFilterFn, enableReclaimable]
	moveFilter    point[VictimFilterFn, ungated]
	preemptSet    point[VictimSetFn, enablePreemptable]
	reclaimSet    point[VictimSetFn, enableReclaimable]
	preemptive    point[AllocatableFn, enablePreemptive]
	jobStarving   point[JobBoolFn, enableJobStarving]
	victimSelect  point[VictimSelectFn, ungated]
	room          point[RoomFn, ungated]
}

// gate picks the flag of a plugin's configuration entry that enables an extension point
// (read with conf.IsEnabled, so nil enables it).
type gate interface {
	flag(*conf.PluginOption) *bool
}

// The gates, named by the configuration keys they read; ungated points have no flag.
type (
	ungated            struct{}
	enableJobOrder     struct{}
	enableQueueOrder   struct{}
	enableTaskOrder    struct{}
	enablePredicate    struct{}
	enableNodeOrder    struct{}
	enabledOverused    struct{}
	enabledAllocatable struct{}
	enableJobReady     struct{}
	enableJobPipelined struct{}
	enableJobEnqueued  struct{}
	enablePreemptable  struct{}
	enableReclaimable  struct{}
	enablePreemptive   struct{}
	enableJobStarving  struct{}
)

func (ungated) flag(*conf.PluginOption) *bool              { return nil }
func (enableJobOrder) flag(o *conf.PluginOption) *bool     { return o.EnabledJobOrder }
func (enableQueueOrder) flag(o *conf.PluginOption) *bool   { return o.EnabledQueueOrder }
func (enableTaskOrder) flag(o *conf.PluginOption) *bool    { return o.EnabledTaskOrder }
func (enablePredicate) flag(o *conf.PluginOption) *bool    { return o.EnabledPredicate }
func (enableNodeOrder) flag(o *conf.PluginOption) *bool    { return o.EnabledNodeOrder }
func (enabledOverused) flag(o *conf.PluginOption) *bool    { return o.EnabledOverused }
func (enabledAllocatable) flag(o *conf.PluginOption) *bool { return o.EnabledAllocatable }
func (enableJobReady) flag(o *conf.PluginOption) *bool     { return o.EnabledJobReady }
func (enableJobPipelined) flag(o *conf.PluginOption) *bool { return o.EnabledJobPipelined }
func (enableJobEnqueued) flag(o *conf.PluginOption) *bool  { return o.EnabledJobEnqueued }
func (enablePreemptable) flag(o *conf.PluginOption) *bool  { return o.EnabledPreemptable }
func (enableReclaimable) flag(o *conf.PluginOption) *bool  { return o.EnabledReclaimable }
func (enablePreemptive) flag(o *conf.PluginOption) *bool   { return o.EnablePreemptive }
func (enableJobStarving) flag(o *conf.PluginOption) *bool  { return o.EnabledJobStarving }

// point is one extension point: the function each plugin registered for it, and their chain.
// The chain is laid out on its first use after a registration; the tiers it follows are the
// configuration's and do not change once the session is open. The gate G is a type rather
// than a value so that a sessionPoints field declares the whole point, with no constructor.
type point[F any, G gate] struct {
	fns map[string]F
	// leftOut are the plugins whose functions the chain leaves out, whatever their flags.
	leftOut map[string]bool
	laid    chain[F]
	laidOut bool
}

// add records a plugin's function, replacing one it registered before.
func (p *point[F, G]) add(plugin string, fn F) {
	if p.fns == nil {
		p.fns = map[string]F{}
	}
	p.fns[plugin] = fn
	p.laidOut = false
}

// leaveOut drops the plugin's function from the chain, registered or yet to be.
func (p *point[F, G]) leaveOut(plugin string) {
	if p.leftOut == nil {
		p.leftOut = map[string]bool{}
	}
	p.leftOut[plugin] = true
	p.laidOut = false
}

// chain returns the point's chain, laying it out after a registration. It is small enough
// to inline: the predicate and scoring chains are asked for every node of every search.
func (p *point[F, G]) chain(tiers []conf.Tier) chain[F] {
	if !p.laidOut {
		p.layOut(tiers)
	}
	return p.laid
}

// layOut lays the functions out in the order of tiers, skipping the plugins whose gate
// flag is off and those left out.
func (p *point[F, G]) layOut(tiers []conf.Tier) {
	var g G
	p.laid = nil
	for t := range tiers {
		for i := range tiers[t].Plugins {
			opt := &tiers[t].Plugins[i]
			if !conf.IsEnabled(g.flag(opt)) || p.leftOut[opt.Name] {
				continue
			}
			if fn, ok := p.fns[opt.Name]; ok {
				p.laid = append(p.laid, link[F]{plugin: opt.Name, tier: t, fn: fn})
			}
		}
	}
	p.laidOut = true
}

// link is one function of a chain: the plugin that registered it and its tier's index.
type link[F any] struct {
	plugin string
	tier   int
	fn     F
}

// chain is an extension point's functions in the order calls combine them: tier by tier, in
// configuration order, those of the plugins whose flag enables the point (a plugin listed
// twice comes twice). The predicate and scoring calls run for every node of every search;
// walking the tiers and looking each plugin up by name there cost more than the plugins'
// own checks.
type chain[F any] []link[F]
