package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/consolidate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangpreempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangreclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/interpod"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/ondemand"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/binpack"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/capacity"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/drf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/nodegroup"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/nodeorder"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/overcommit"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/pdb"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/resourcequota"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/sla"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/tasktopology"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/volumes"
)

// newRegistry is the registry of a scheduler without an API server (benchmarks, tests):
// deviceshare uses the shipped device configuration, predicates decides no volumes, and
// resourcequota finds no ResourceQuota.
func newRegistry(allocateOpts allocate.Options) *framework.Registry {
	return newRegistryWith(allocateOpts, sources{devices: deviceshare.NewStaticShared()})
}

// newClusterRegistry is the registry of the scheduler of the cluster kube reaches: the
// plugins' components read it, and record their Events with recorder.
func newClusterRegistry(allocateOpts allocate.Options, kube kubernetes.Interface, recorder record.EventRecorder) *framework.Registry {
	return newRegistryWith(allocateOpts, sources{devices: deviceshare.NewSharedOn(kube, recorder), vols: volumes.NewSource(kube),
		interPod: interpod.NewSource(), quotas: resourcequota.NewSource(), budgets: pdb.NewSource()})
}

// sources are the plugins' components that read the cluster: devices is deviceshare's; vols
// and interPod are predicates' (nil: it decides no volumes, or no inter-pod affinity and
// topology spread), and interPod nodeorder's too (nil: it does not score them); quotas is
// resourcequota's (nil: it finds no ResourceQuota), budgets pdb's (nil: it finds no
// PodDisruptionBudget).
type sources struct {
	devices  *deviceshare.Shared
	vols     *volumes.Source
	interPod *interpod.Source
	quotas   *ondemand.Watch[*corev1.ResourceQuota]
	budgets  *ondemand.Watch[*policyv1.PodDisruptionBudget]
}

// newRegistryWith lists every action and plugin this binary has, each plugin with the
// argument keys it reads and the component it keeps for the life of the scheduler, from src;
// the framework knows none by name.
func newRegistryWith(allocateOpts allocate.Options, src sources) *framework.Registry {
	r := framework.NewRegistry()
	r.RegisterAction(enqueue.New())
	r.RegisterAction(allocate.NewWithOptions(allocateOpts))
	r.RegisterAction(backfill.NewWithOptions(allocateOpts))
	r.RegisterAction(preempt.New())
	r.RegisterAction(reclaim.New())
	r.RegisterAction(gangpreempt.New())
	r.RegisterAction(gangreclaim.New())
	r.RegisterAction(consolidate.New())
	for name, spec := range map[string]framework.PluginSpec{
		priority.PluginName:      {Build: priority.New, Arguments: priority.ArgumentKeys},
		gang.PluginName:          {Build: gang.New, Arguments: gang.ArgumentKeys},
		conformance.PluginName:   {Build: conformance.New, Arguments: conformance.ArgumentKeys},
		drf.PluginName:           {Build: drf.New, Arguments: drf.ArgumentKeys},
		predicates.PluginName:    predicatesSpec(src.vols, src.interPod),
		proportion.PluginName:    {Build: proportion.New, Arguments: proportion.ArgumentKeys},
		capacity.PluginName:      {Build: capacity.New, Arguments: capacity.ArgumentKeys, Hierarchy: true},
		overcommit.PluginName:    {Build: overcommit.New, Arguments: overcommit.ArgumentKeys},
		nodeorder.PluginName:     nodeorderSpec(src.interPod),
		binpack.PluginName:       {Build: binpack.New, Arguments: binpack.ArgumentKeys},
		nodegroup.PluginName:     {Build: nodegroup.New, Arguments: nodegroup.ArgumentKeys, Hierarchy: true},
		deviceshare.PluginName:   {Build: deviceshare.NewBuilder(src.devices), Arguments: deviceshare.ArgumentKeys, Component: src.devices, Owns: src.devices},
		resourcequota.PluginName: resourcequotaSpec(src.quotas),
		pdb.PluginName:           pdbSpec(src.budgets),
		// Volcano's plugins for jobs' waiting time and the placement of a job's tasks.
		sla.PluginName:          {Build: sla.New, Arguments: sla.ArgumentKeys},
		tasktopology.PluginName: {Build: tasktopology.New, Arguments: tasktopology.ArgumentKeys},
	} {
		r.Register(name, spec)
	}
	for name, does := range upstreamActions {
		r.DescribeUpstream(true, name, does)
	}
	for name, does := range upstreamPlugins {
		r.DescribeUpstream(false, name, does)
	}
	return r
}

// predicatesSpec is the predicates plugin deciding pods' volumes with the plugins of vols,
// and inter-pod affinity and topology spread with those of interPod (nil: not at all), with
// their sources as its component.
func predicatesSpec(vols *volumes.Source, interPod *interpod.Source) framework.PluginSpec {
	spec := framework.PluginSpec{Build: predicates.New, Arguments: predicates.ArgumentKeys, Ignored: predicates.IgnoredArguments}
	var volumeSource api.VolumeSource
	var interPodSource api.InterPodSource
	if vols != nil {
		volumeSource = vols
	}
	if interPod != nil {
		interPodSource = interPod
	}
	if vols != nil || interPod != nil {
		spec.Build = predicates.NewBuilder(volumeSource, interPodSource)
		spec.Component = predicatesComponent{vols: vols, interPod: interPod}
	}
	return spec
}

// nodeorderSpec is the nodeorder plugin scoring where other pods are with the scores of
// interPod (nil: not at all). interPod is predicates' component, which starts it.
func nodeorderSpec(interPod *interpod.Source) framework.PluginSpec {
	spec := framework.PluginSpec{Build: nodeorder.New, Arguments: nodeorder.ArgumentKeys}
	if interPod != nil {
		spec.Build = nodeorder.NewBuilder(interPod)
	}
	return spec
}

// resourcequotaSpec is the resourcequota plugin reading the ResourceQuotas of quotas, its
// component (nil: it finds none).
func resourcequotaSpec(quotas *ondemand.Watch[*corev1.ResourceQuota]) framework.PluginSpec {
	if quotas == nil {
		return framework.PluginSpec{Build: resourcequota.New, Arguments: resourcequota.ArgumentKeys}
	}
	return framework.PluginSpec{Build: resourcequota.NewBuilder(quotas), Arguments: resourcequota.ArgumentKeys, Component: quotas}
}

// pdbSpec is the pdb plugin reading the PodDisruptionBudgets of budgets, its component (nil:
// it finds none).
func pdbSpec(budgets *ondemand.Watch[*policyv1.PodDisruptionBudget]) framework.PluginSpec {
	if budgets == nil {
		return framework.PluginSpec{Build: pdb.New, Arguments: pdb.ArgumentKeys}
	}
	return framework.PluginSpec{Build: pdb.NewBuilder(budgets), Arguments: pdb.ArgumentKeys, Component: budgets}
}

// predicatesComponent starts predicates' sources of kube-scheduler's plugins on the cache's
// informers; they keep no metrics, and build their plugins when a configuration first asks.
type predicatesComponent struct {
	vols     *volumes.Source
	interPod *interpod.Source
}

func (c predicatesComponent) Start(ctx context.Context, cache framework.ComponentCache) {
	if c.vols != nil {
		c.vols.Start(ctx, cache)
	}
	if c.interPod != nil {
		c.interPod.Start(ctx, cache)
	}
}

func (predicatesComponent) Configure(context.Context, *conf.SchedulerConfiguration) {}

func (predicatesComponent) Collectors() []prometheus.Collector { return nil }

// upstreamActions are Volcano's actions this binary lacks, with what each does there: a
// configuration naming one loads without it, and the warning says what is not enforced.
var upstreamActions = map[string]string{
	"shuffle": "evicts running pods that the rescheduling plugin picks, so that they are placed again",
}

// upstreamPlugins are Volcano's plugins this binary lacks, with what each does there.
var upstreamPlugins = map[string]string{
	"numa-aware":             "places pods by the NUMA topology their CPU manager policy needs",
	"tdm":                    "runs pods on time-shared nodes only within their windows and evicts them when one ends",
	"usage":                  "filters and scores nodes by their measured CPU and memory load",
	"rescheduling":           "picks running pods to move (for the shuffle action) by node utilisation policies",
	"cdp":                    "shields pods that started recently from preemption for a cooldown time",
	"extender":               "asks an external HTTP scheduler extender to filter and score nodes",
	"network-topology-aware": "places a gang within as few network-topology tiers (HyperNodes) as it can",
	"resource-strategy-fit":  "scores nodes by a least- or most-allocated strategy chosen per resource",
}
