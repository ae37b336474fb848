// Package predicates keeps a task off nodes that the node object or the pods already there
// rule out: a full pod count, spec.unschedulable, the pod's node selector and required node
// affinity, NoSchedule and NoExecute taints, and host ports in use. Whether the node has the
// resources is the allocate action's check, not this plugin's; this one only holds cpu and
// memory back for idle GPUs when asked to (below).
//
// With predicate.ProportionalEnable (upstream's proportional check; off by default) a node
// keeps cpu and memory for its idle amount of each resource predicate.resources lists: a
// task that requests none of them is refused ("proportional of resource <name> check
// failed", unresolvable, upstream's words) where, once it is placed, the node's idle cpu
// would fall below predicate.resources.<name>.cpu cores per idle unit of <name>, or its idle
// memory below predicate.resources.<name>.memory GB (10^9 bytes, not GiB) per unit. Each
// listed resource is held to its own reserve, not to the sum of them; rates default to 1. A
// task that requests a listed resource is never held back, and a node without one keeps
// nothing for it. With nvidia.com/gpu the idle units are the GPUs no pod requests. With
// volcano.sh/vgpu-number they are vGPU slots: the device plugin advertises the split count
// per GPU and every vGPU a pod asks for takes one (docs/protocol.md), so the rates are per
// slot; with a split count of 10, cpu 0.4 keeps 4 cores per GPU no pod uses. A pod that asks
// for volcano.sh/vgpu-memory without vgpu-number gets one vGPU from deviceshare but requests
// no vgpu-number; listing volcano.sh/vgpu-memory too, with both rates 0, lets it through
// without reserving anything for vGPU memory.
//
// Pods' volumes are decided by kube-scheduler's volume plugins (an api.VolumePlugins,
// pkg/scheduler/volumes): VolumeBinding, VolumeZone and NodeVolumeLimits, each with its
// predicate.<Name>Enable switch, and VolumeRestrictions with any of them. A node the volumes
// cannot use is refused in kube-scheduler's words, a placement reserves the PVs its claims
// were matched to (given back if the placement is undone, or left uncommitted when the
// session ends: a pipelined gang's allocated pods), and the claims are bound in the bind
// worker before the pod's Binding, which waits for the PV controller up to
// volumebinding.bindTimeoutSeconds (upstream's key and default, 600; 0: no wait).
//
// Where other pods are is decided by kube-scheduler's InterPodAffinity and PodTopologySpread
// filters (an api.InterPodPlugins, pkg/scheduler/interpod), each with its predicate.<Name>Enable
// switch: a pod's required affinity and anti-affinity, the required anti-affinity of the pods
// already placed, and its DoNotSchedule spread constraints, counted over the session's nodes
// when the task's nodes are about to be tried, so that a gang's earlier placements count for
// its later pods and an undone one no longer does. A pod the session evicts no longer counts,
// for the task being tried at once: a preemptor kept away by a victim passes once it is gone. A pod without constraints of its own
// reaches them only where a pod with required anti-affinity is placed (repelling), and
// then only with those pods' nodes. Preferred terms and ScheduleAnyway constraints only score:
// the nodeorder plugin reads them.
//
// Not checked (upstream runs kube-scheduler's plugin for it): dynamic resource allocation. No
// pod with resource claims gets this far (the session refuses it, api.UnallocatedClaims); the
// upstream switch is accepted and reported as ignored.
//
// The predicate runs for every (task, node) pair, so everything that depends only on the
// pod is worked out once per task (taskFacts), the failure verdicts are built once per
// session, and a node that passes costs no allocation.
package predicates

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "predicates"

// Arguments switching each check; all default to true.
const (
	PodNumberEnable         = "predicate.PodNumberEnable"
	NodeUnschedulableEnable = "predicate.NodeUnschedulableEnable"
	NodeAffinityEnable      = "predicate.NodeAffinityEnable"
	TaintTolerationEnable   = "predicate.TaintTolerationEnable"
	NodePortsEnable         = "predicate.NodePortsEnable"
	VolumeBindingEnable     = "predicate.VolumeBindingEnable"
	VolumeZoneEnable        = "predicate.VolumeZoneEnable"
	NodeVolumeLimitsEnable  = "predicate.NodeVolumeLimitsEnable"
	PodAffinityEnable       = "predicate.PodAffinityEnable"
	PodTopologySpreadEnable = "predicate.PodTopologySpreadEnable"
)

// BindTimeoutSeconds is how long, in whole seconds, a pod's bind waits for the PV controller
// to bind its claims (kube-scheduler's VolumeBindingArgs.BindTimeoutSeconds; 0: it does not
// wait), DefaultBindTimeoutSeconds unless set, as upstream.
const (
	BindTimeoutSeconds        = "volumebinding.bindTimeoutSeconds"
	DefaultBindTimeoutSeconds = 600
	// maxBindTimeoutSeconds is the most a time.Duration holds.
	maxBindTimeoutSeconds = int(math.MaxInt64 / int64(time.Second))
)

// IgnoredArguments are upstream's switches this plugin does not act on, each with why. A file
// written for upstream may set them; they are read only so that a malformed value is still
// reported, and loading says they are not acted on, and why.
var IgnoredArguments = map[string]string{
	"predicate.DynamicResourceAllocationEnable": "this scheduler allocates no DRA resource claims, whatever the switch says: " +
		"a pod with spec.resourceClaims is refused, naming its claims",
	"predicate.CacheEnable": "Volcano's predicates keeps its filters' results per pod template when it is true; " +
		"this scheduler's has no such cache (allocate's predicateErrorCacheEnable switches its cache of failures per task role)",
}

// ArgumentKeys are the arguments New reads: the switches, upstream's ignored ones included,
// the bind timeout, and the proportional check's list and rates (ProportionalRatePrefix + <resource>.cpu or
// .memory, any resource: readProportional refuses the keys of unlisted ones).
var ArgumentKeys = append(conf.ArgumentKeys{PodNumberEnable, NodeUnschedulableEnable, NodeAffinityEnable,
	TaintTolerationEnable, NodePortsEnable, VolumeBindingEnable, VolumeZoneEnable, NodeVolumeLimitsEnable,
	PodAffinityEnable, PodTopologySpreadEnable, BindTimeoutSeconds, ProportionalEnable, ProportionalResources, ProportionalRatePrefix + "*"},
	slices.Sorted(maps.Keys(IgnoredArguments))...)

// Reasons users see in "0/N nodes are unavailable: ...". All but the pod-number one are
// kube-scheduler's own words.
const (
	ReasonPodNumberExceeded = "node(s) pod number exceeded"
	ReasonUnschedulable     = "node(s) were unschedulable"
	ReasonNodeAffinity      = "node(s) didn't match Pod's node affinity/selector"
	ReasonHostPorts         = "node(s) didn't have free ports for the requested pod ports"
	// ReasonUnknownNode: the scheduler knows the node only from pods bound to it.
	ReasonUnknownNode = "node(s) had unknown conditions"
)

// UntoleratedTaintReason is the reason for a NoSchedule or NoExecute taint the pod does not
// tolerate. It names the taint as kube-scheduler did up to v1.34 (and upstream Volcano still
// does), so the histogram tells which taint keeps pods away; kube-scheduler v1.35 dropped
// the key and value ("node(s) had untolerated taint(s)").
func UntoleratedTaintReason(t *corev1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
}

// checks says which checks are switched on.
type checks struct {
	podNumber, unschedulable, nodeAffinity, taints, hostPorts bool
	volumes                                                   api.VolumeChecks
	interPod                                                  api.InterPodChecks
	// proportional are the reserves of predicate.ProportionalEnable, nil when it is off.
	proportional proportional
}

// verdicts are the session's failure statuses. They are shared by every node that fails the
// same way, which keeps the failure path free of allocations; callers only read them.
type verdicts struct {
	unknownNode, podNumber, unschedulable, nodeAffinity, hostPorts *api.Status
}

func newVerdicts() verdicts {
	status := func(code api.StatusCode, reason string) *api.Status {
		return &api.Status{Code: code, Reasons: []string{reason}, Plugin: PluginName}
	}
	return verdicts{
		unknownNode:   status(api.UnschedulableAndUnresolvable, ReasonUnknownNode),
		podNumber:     status(api.Unschedulable, ReasonPodNumberExceeded),
		unschedulable: status(api.UnschedulableAndUnresolvable, ReasonUnschedulable),
		nodeAffinity:  status(api.UnschedulableAndUnresolvable, ReasonNodeAffinity),
		hostPorts:     status(api.Unschedulable, ReasonHostPorts),
	}
}

type predicatesPlugin struct {
	enabled  checks
	verdicts verdicts
	// logger is what the toleration helpers want; they log only for comparison operators,
	// which stay off (the TaintTolerationComparisonOperators gate is alpha).
	logger klog.Logger

	// lastFacts is the most recent task's facts: predicates for one task over many nodes
	// find them with one atomic load.
	lastFacts atomic.Pointer[taskFacts]
	// taintVerdicts maps a node's *corev1.Taint to its status, built on first use.
	taintVerdicts sync.Map

	// nodes and ports: host ports in use per node, indexed on first need (most sessions
	// have no pod asking for a host port) and then kept current by the event handlers.
	nodes     []*api.NodeInfo
	portsOnce sync.Once
	ports     hostPortIndex

	// volumes are kube-scheduler's volume plugins the switches turn on, nil when none is (or
	// in a scheduler without them: in-process benchmarks); volumesOf holds the session's
	// tasks that have volumes they read.
	volumes   api.VolumePlugins
	volumesOf volumesByTask

	// interPod are kube-scheduler's InterPodAffinity and PodTopologySpread as the switches
	// turn them on, nil when neither is (or in a scheduler without them); interPodOf holds
	// the session's tasks they have something to check for, and repelling the nodes whose
	// tasks' anti-affinity may keep a pod without constraints away.
	interPod   api.InterPodPlugins
	interPodOf interPodByTask
	repelling  *api.NodesHolding
	// attempt is the task being tried (its pre-predicate ran last): the session's evictions
	// meanwhile, and their undo, change its counts at once.
	attempt api.TaskID
}

// New is NewBuilder without kube-scheduler's plugins: pods' volumes, inter-pod affinity and
// topology spread are not looked at.
func New(args conf.Arguments) (framework.Plugin, error) { return NewBuilder(nil, nil)(args) }

// NewBuilder builds the plugin from its predicate.<Check>Enable arguments, deciding pods'
// volumes with the plugins volumes gives, and where other pods are with those interPod gives
// (nil: not at all). A switch that is not a bool, or a proportional argument readProportional
// refuses, is an error naming the argument.
func NewBuilder(volumes api.VolumeSource, interPod api.InterPodSource) framework.PluginBuilder {
	return func(args conf.Arguments) (framework.Plugin, error) { return build(args, volumes, interPod) }
}

func build(args conf.Arguments, volumes api.VolumeSource, interPod api.InterPodSource) (framework.Plugin, error) {
	p := &predicatesPlugin{
		enabled: checks{podNumber: true, unschedulable: true, nodeAffinity: true, taints: true, hostPorts: true,
			volumes:  api.VolumeChecks{Binding: true, Zone: true, Limits: true},
			interPod: api.InterPodChecks{Affinity: true, Spread: true}},
		verdicts: newVerdicts(),
		logger:   klog.Background(),
	}
	switches := []struct {
		key string
		on  *bool
	}{
		{PodNumberEnable, &p.enabled.podNumber},
		{NodeUnschedulableEnable, &p.enabled.unschedulable},
		{NodeAffinityEnable, &p.enabled.nodeAffinity},
		{TaintTolerationEnable, &p.enabled.taints},
		{NodePortsEnable, &p.enabled.hostPorts},
		{VolumeBindingEnable, &p.enabled.volumes.Binding},
		{VolumeZoneEnable, &p.enabled.volumes.Zone},
		{NodeVolumeLimitsEnable, &p.enabled.volumes.Limits},
		{PodAffinityEnable, &p.enabled.interPod.Affinity},
		{PodTopologySpreadEnable, &p.enabled.interPod.Spread},
	}
	for _, s := range switches {
		if err := args.GetBool(s.on, s.key); err != nil {
			return nil, err
		}
	}
	for key := range IgnoredArguments {
		var ignored bool
		if err := args.GetBool(&ignored, key); err != nil {
			return nil, err
		}
	}
	reserves, err := readProportional(args)
	if err != nil {
		return nil, err
	}
	p.enabled.proportional = reserves
	bindTimeout, err := readBindTimeout(args)
	if err != nil {
		return nil, err
	}
	if volumes != nil {
		v, err := volumes.Volumes(p.enabled.volumes, bindTimeout)
		if err != nil {
			return nil, err
		}
		p.volumes = v
	}
	if interPod != nil {
		p.interPod = interPod.InterPod(p.enabled.interPod)
	}
	return p, nil
}

// readBindTimeout reads BindTimeoutSeconds: a whole number of seconds, 0 or more.
func readBindTimeout(args conf.Arguments) (time.Duration, error) {
	seconds := DefaultBindTimeoutSeconds
	if err := args.GetInt(&seconds, BindTimeoutSeconds); err != nil {
		return 0, err
	}
	if seconds < 0 || seconds > maxBindTimeoutSeconds {
		return 0, conf.InvalidArgument(BindTimeoutSeconds, seconds,
			fmt.Sprintf("%d seconds: want 0 (no wait for the PV controller) to %d", seconds, maxBindTimeoutSeconds))
	}
	return time.Duration(seconds) * time.Second, nil
}

func (p *predicatesPlugin) Name() string { return PluginName }

func (p *predicatesPlugin) OnSessionOpen(ssn *framework.Session) {
	p.nodes = ssn.NodeList
	ssn.AddPrePredicateFn(PluginName, p.prePredicate)
	ssn.AddPredicateFn(PluginName, p.predicate)
	ssn.AddSamePredicatesFn(PluginName, p.samePredicates)
	if p.enabled.hostPorts {
		ssn.AddEventHandler(&framework.EventHandler{
			AllocateFunc:   func(e *framework.Event) { p.trackPorts(e, 1) },
			DeallocateFunc: func(e *framework.Event) { p.trackPorts(e, -1) },
		})
	}
	if p.volumes != nil {
		p.volumesOf = volumesByTask{m: map[api.TaskID]*taskVolumes{}}
		ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: p.reserveVolumes, DeallocateFunc: p.unreserveVolumes})
		ssn.AddEndFn(p.unreserveUncommitted)
	}
	if p.interPod != nil {
		p.interPodOf = interPodByTask{m: map[api.TaskID]api.InterPodState{}}
		p.repelling = api.NewNodesHolding(api.HasRequiredAntiAffinity)
		ssn.AddEventHandler(&framework.EventHandler{AllocateFunc: p.placed, DeallocateFunc: p.taken})
	}
}

func (p *predicatesPlugin) OnSessionClose(*framework.Session) {}

// prePredicate works out the task's facts once, before the per-node calls, and refuses a
// task whose required node affinity cannot be parsed: no node can match it.
func (p *predicatesPlugin) prePredicate(task *api.TaskInfo) error {
	f := p.facts(task)
	if p.enabled.nodeAffinity && f.affinityErr != nil {
		return fmt.Errorf("pod %s: invalid required node affinity: %w", task.Key(), f.affinityErr)
	}
	if p.volumes != nil {
		if err := p.readVolumes(task); err != nil {
			return err
		}
	}
	if p.interPod != nil {
		return p.readInterPod(task)
	}
	return nil
}

// predicate runs the enabled checks, cheapest and most common first, and returns the first
// failure. A node with no object (known only from pods bound to it) fails them all.
func (p *predicatesPlugin) predicate(task *api.TaskInfo, node *api.NodeInfo) *api.Status {
	n := node.Node
	if n == nil {
		return p.verdicts.unknownNode
	}
	if p.enabled.podNumber && len(node.Tasks) >= node.Allocatable.MaxTaskNum {
		return p.verdicts.podNumber
	}
	f := p.facts(task)
	if p.enabled.unschedulable && n.Spec.Unschedulable && !f.toleratesUnschedulable {
		return p.verdicts.unschedulable
	}
	if p.enabled.nodeAffinity && !f.matchesNode(n) {
		return p.verdicts.nodeAffinity
	}
	if p.enabled.taints {
		if t := f.untoleratedTaint(p.logger, n.Spec.Taints); t != nil {
			return p.taintVerdict(t)
		}
	}
	if p.enabled.hostPorts && len(f.hostPorts) > 0 && p.portIndex().conflicts(node.Name, f.hostPorts) {
		return p.verdicts.hostPorts
	}
	if s := p.enabled.proportional.check(task, node); s != nil {
		return s
	}
	if p.volumes != nil && f.hasVolumes {
		if s := p.filterVolumes(task, node); s != nil {
			return s
		}
	}
	if p.interPod != nil && (f.podConstraints || p.repelling.Some()) {
		return p.filterInterPod(task, node)
	}
	return nil
}

// samePredicates says whether predicate answers tasks a and b alike on every node: it reads
// their pods' facts (sameFacts) and, for the proportional check, their requests. Tasks whose
// volumes the volume plugins check, or whose place among other pods the inter-pod plugins
// check (their own constraints, or a placed pod's required anti-affinity that may select
// them), are not compared.
func (p *predicatesPlugin) samePredicates(a, b *api.TaskInfo) bool {
	if p.volumes != nil && (api.HasSchedulingVolumes(a.Pod) || api.HasSchedulingVolumes(b.Pod)) {
		return false
	}
	if p.interPod != nil && (p.repelling.Some() || api.HasPodConstraints(a.Pod) || api.HasPodConstraints(b.Pod)) {
		return false
	}
	return p.enabled.proportional.same(a.Resreq, b.Resreq) && sameFacts(a.Pod, b.Pod)
}

// facts returns the task's facts, computing them when the task is not the last one seen.
// Tasks are visited one after another, each over many nodes, so recomputing on a switch
// back is rare; a task's pod does not change within a session.
func (p *predicatesPlugin) facts(task *api.TaskInfo) *taskFacts {
	if f := p.lastFacts.Load(); f != nil && f.task == task {
		return f
	}
	f := newTaskFacts(task, p.logger)
	p.lastFacts.Store(f)
	return f
}

// taintVerdict returns the status for an untolerated taint, built once per taint.
func (p *predicatesPlugin) taintVerdict(t *corev1.Taint) *api.Status {
	if s, ok := p.taintVerdicts.Load(t); ok {
		return s.(*api.Status)
	}
	s, _ := p.taintVerdicts.LoadOrStore(t, &api.Status{
		Code: api.UnschedulableAndUnresolvable, Reasons: []string{UntoleratedTaintReason(t)}, Plugin: PluginName,
	})
	return s.(*api.Status)
}

// portIndex returns the host ports in use per node, indexing the session's pods on the
// first call. Predicates may run in parallel; the index is only read while they do.
func (p *predicatesPlugin) portIndex() hostPortIndex {
	p.portsOnce.Do(func() { p.ports = newHostPortIndex(p.nodes) })
	return p.ports
}

// trackPorts follows a tentative placement (delta 1) or its undo (-1) in the port index.
// Before the index exists there is nothing to follow: it will be built from node.Tasks,
// which already holds the placement.
func (p *predicatesPlugin) trackPorts(e *framework.Event, delta int) {
	if p.ports == nil {
		return
	}
	if ports := appendHostPorts(nil, e.Task.Pod); len(ports) > 0 {
		p.ports.add(e.Node.Name, ports, delta)
	}
}
