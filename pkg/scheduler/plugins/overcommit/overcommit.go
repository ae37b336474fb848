// Package overcommit is the cluster-wide enqueue gate of upstream's default configuration:
// a job leaves Pending only while the minResources of all admitted jobs fit in the
// cluster's allocatable scaled by overcommit-factor, less what pods already use. It keeps
// VolcanoJob controllers from creating pods the cluster cannot hold even with some slack.
package overcommit

import (
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota"
)

const (
	// PluginName is the plugin's name in the scheduler configuration.
	PluginName = "overcommit"
	// FactorArgument scales the cluster's allocatable before jobs are admitted against it.
	FactorArgument = "overcommit-factor"
	// DefaultFactor is used when the argument is absent or below 1.
	DefaultFactor = 1.2
	// ClusterOverused opens the message of the PodGroup event a rejection emits:
	// "resource in cluster is overused: overused cpu, overused volcano.sh/vgpu-memory".
	ClusterOverused = "resource in cluster is overused"
)

// ArgumentKeys are the arguments New reads.
var ArgumentKeys = conf.ArgumentKeys{FactorArgument}

type overcommitPlugin struct {
	factor float64
	// idle is the allocatable times factor, less what nodes' pods use.
	idle *api.Resource
	// inqueue is what admitted jobs have reserved (quota.Reserved), grown by JobEnqueued.
	inqueue *api.Resource
}

// New reads overcommit-factor. A value that is not a number is an error (the configuration is
// rejected); a number below 1 (which would admit less than the cluster holds) is replaced by
// the default, as upstream.
func New(args conf.Arguments) (framework.Plugin, error) {
	factor := DefaultFactor
	if err := args.GetFloat64(&factor, FactorArgument); err != nil {
		return nil, err
	}
	if !(factor >= 1) { // also catches NaN
		klog.V(4).InfoS("overcommit-factor below 1; using the default", "value", factor, "default", DefaultFactor)
		factor = DefaultFactor
	}
	return &overcommitPlugin{factor: factor}, nil
}

func (*overcommitPlugin) Name() string { return PluginName }

func (p *overcommitPlugin) OnSessionOpen(ssn *framework.Session) {
	p.idle = ssn.TotalResource.Clone().Multi(p.factor)
	for _, node := range ssn.NodeList {
		p.idle.Sub(node.Used)
	}
	p.inqueue = api.EmptyResource()
	for _, job := range ssn.Jobs {
		p.inqueue.Add(quota.Reserved(job))
	}
	klog.V(4).InfoS("Cluster room for admitted jobs", "factor", p.factor, "idle", p.idle, "inqueue", p.inqueue)

	ssn.AddJobEnqueueableFn(PluginName, func(job *api.JobInfo) int { return p.jobEnqueueable(ssn, job) })
	ssn.AddJobEnqueuedFn(PluginName, p.jobEnqueued)
}

func (*overcommitPlugin) OnSessionClose(*framework.Session) {}

// jobEnqueueable permits a job without minResources, and otherwise one whose minResources fits
// in the room left next to the jobs already admitted, in the dimensions it asks for ("pods"
// aside). A rejection emits the PodGroup event naming the overused dimensions.
func (p *overcommitPlugin) jobEnqueueable(ssn *framework.Session, job *api.JobInfo) int {
	minReq := job.MinResources
	if minReq == nil {
		return framework.Permit
	}
	wanted := p.inqueue.Clone().Add(minReq)
	overused := wanted.ExceedingWithDimension(p.idle, minReq)
	if len(overused) == 0 {
		return framework.Permit
	}
	klog.V(3).InfoS("Cluster overused; job stays Pending", "podGroup", klog.KRef(job.Namespace, job.Name),
		"overused", overused, "minResources", minReq, "inqueue", p.inqueue, "idle", p.idle)
	quota.RecordRejection(ssn, job, quota.Message(ClusterOverused, "overused", overused))
	return framework.Reject
}

// jobEnqueued reserves the admitted job's minResources (gated pods aside) for the rest of the
// cycle.
func (p *overcommitPlugin) jobEnqueued(job *api.JobInfo) {
	if minReq := job.MinResources; minReq != nil {
		p.inqueue.Add(quota.WithoutGated(job, minReq))
	}
}
