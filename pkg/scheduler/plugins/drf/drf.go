// Package drf orders jobs by dominant resource fairness: a job's share is the largest
// fraction of any cluster resource it holds, and the job with the smaller share goes first.
// A job holding much of one resource (say GPU memory) thus waits behind jobs holding little
// of everything. Shares are read from the session's jobs, which every tentative placement
// and its undo change (an event handler drops the job's cached share), so ordering inside a
// session sees the session's own decisions.
//
// For preempt it lets a task evict only where the eviction leaves its job's share no larger
// than the victim's job's: preemption moves resources only towards the smaller share, so two
// jobs never take pods from each other by turns.
//
// Hierarchical DRF (enableHierarchy: true on the drf entry) is not supported: the flag is a
// plugin option, not an argument, so this plugin never sees it; it orders jobs flat either
// way. Namespace shares are not computed, so upstream's volcano_namespace_* metrics are not
// exposed.
//
// When the session closes the plugin publishes volcano_job_share and, because it already
// follows every job's placements, upstream's volcano_e2e_job_scheduling_* gauges.
package drf

import (
	"math"
	"time"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "drf"

// shareTolerance: shares closer than this are equal, so that float rounding after many
// placements and undos never turns a tie into an order.
const shareTolerance = 1e-6

type drfPlugin struct {
	// total is the cluster's allocatable, the denominator of every share.
	total *api.Resource
	// jobs are the session's, whose tasks say what each job holds (see allocation).
	jobs map[api.JobID]*api.JobInfo
	// shares caches dominantShare(allocation(job), total), read by every comparison; a
	// placement or its undo drops its job's entry. Filled as jobs are compared: at session
	// open, copying every job's allocation cost more than the comparisons.
	shares map[api.JobID]float64
	// placed are the tasks placed in this session. Those the binder got (Binding at close;
	// a discarded or refused placement is Pending again) mark their job as scheduled for the
	// e2e metrics.
	placed map[api.TaskID]*api.TaskInfo
}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin. It takes no arguments; any given are ignored, as upstream.
func New(conf.Arguments) (framework.Plugin, error) { return &drfPlugin{}, nil }

func (d *drfPlugin) Name() string { return PluginName }

func (d *drfPlugin) OnSessionOpen(ssn *framework.Session) {
	d.total = ssn.TotalResource
	d.jobs = ssn.Jobs
	d.shares = make(map[api.JobID]float64, len(ssn.Jobs)) // the close reads every job's
	d.placed = map[api.TaskID]*api.TaskInfo{}
	ssn.AddJobOrderFn(PluginName, d.smallerShareFirst)
	ssn.AddPreemptableFn(PluginName, func(preemptor *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		return d.noLargerShare(preemptor, candidates), false
	})
	ssn.AddEventHandler(&framework.EventHandler{
		AllocateFunc: func(e *framework.Event) {
			delete(d.shares, e.Task.Job)
			d.placed[e.Task.UID] = e.Task
		},
		DeallocateFunc: func(e *framework.Event) { delete(d.shares, e.Task.Job) },
	})
}

// OnSessionClose publishes the job metrics for every job of the session whose PodGroup is
// not Completed; finished and deleted jobs are left out, which deletes their series.
func (d *drfPlugin) OnSessionClose(ssn *framework.Session) {
	scheduled := map[api.JobID]bool{}
	for _, t := range d.placed {
		if t.Status == api.Binding {
			scheduled[t.Job] = true
		}
	}
	figures := make([]metrics.JobFigures, 0, len(ssn.Jobs))
	for uid, job := range ssn.Jobs {
		if job.PodGroup == nil || job.PodGroup.Status.Phase == schedulingv1beta1.PodGroupCompleted {
			continue
		}
		figures = append(figures, metrics.JobFigures{
			Namespace: job.Namespace, Name: job.Name, Queue: string(job.Queue),
			Created: job.CreationTimestamp.Time, Share: d.share(job), Scheduled: scheduled[uid],
		})
	}
	ssn.Metrics().ReportJobs(figures, time.Now())
}

func (d *drfPlugin) smallerShareFirst(l, r *api.JobInfo) int {
	ls, rs := d.share(l), d.share(r)
	switch {
	case math.Abs(ls-rs) < shareTolerance:
		return 0
	case ls < rs:
		return -1
	default:
		return 1
	}
}

// noLargerShare are the candidates whose eviction leaves the preemptor's job, holding the
// preemptor too, with a share no larger than the candidate's job keeps without it, taken in
// candidate order: each victim lowers what its job keeps for the next. As upstream's, a
// candidate of the preemptor's own job is weighed the same way, so drf, where it decides,
// allows no eviction within a job.
func (d *drfPlugin) noLargerShare(preemptor *api.TaskInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	preemptorShare := dominantShare(d.held(preemptor.Job).Add(preemptor.Resreq), d.total)
	kept := map[api.JobID]*api.Resource{}
	victims := make([]*api.TaskInfo, 0, len(candidates))
	for _, c := range candidates {
		left, ok := kept[c.Job]
		if !ok {
			left = d.held(c.Job)
		}
		after := left.Clone().SubTotal(c.Resreq)
		if preemptorShare > dominantShare(after, d.total)+shareTolerance {
			continue
		}
		kept[c.Job] = after
		victims = append(victims, c)
	}
	return victims
}

// held is a copy of what the job holds in the session; nothing for a job the session lacks.
func (d *drfPlugin) held(job api.JobID) *api.Resource {
	if j, ok := d.jobs[job]; ok {
		return allocation(j).Clone()
	}
	return api.EmptyResource()
}

// share is the job's dominant share of the cluster, as the session left it so far.
func (d *drfPlugin) share(job *api.JobInfo) float64 {
	if s, ok := d.shares[job.UID]; ok {
		return s
	}
	s := dominantShare(allocation(job), d.total)
	d.shares[job.UID] = s
	return s
}

// allocation is what the job holds in the session: the requests of its tasks that hold a
// node (job.Allocated, which the session's statements keep current) and of those pipelined
// onto resources being released, which it will hold. job.Allocated itself, not a copy, when
// none is pipelined.
func allocation(job *api.JobInfo) *api.Resource {
	pipelined := job.TaskStatusIndex[api.Pipelined]
	if len(pipelined) == 0 {
		return job.Allocated
	}
	a := job.Allocated.Clone()
	for _, t := range pipelined {
		a.Add(t.Resreq)
	}
	return a
}

// dominantShare is the largest fraction of total that allocated holds, over the resources
// the cluster has. A resource the cluster offers none of has no fair share and is skipped.
// Pod slots ("pods", one per task) count like any resource: they are what orders jobs of
// best-effort pods, which hold no cpu or memory.
func dominantShare(allocated, total *api.Resource) float64 {
	share := 0.0
	consider := func(held, offered float64) {
		if offered >= api.Tolerance {
			share = math.Max(share, held/offered)
		}
	}
	consider(allocated.MilliCPU, total.MilliCPU)
	consider(allocated.Memory, total.Memory)
	for name, offered := range total.ScalarResources {
		consider(allocated.Get(name), offered)
	}
	return share
}
