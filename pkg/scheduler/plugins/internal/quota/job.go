package quota

import (
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// WithoutGated returns r less what the job's scheduling-gated pods request, in r's dimensions
// and never below zero. A gated pod cannot start, so the quota it would take stays free for
// other jobs. r is not changed.
func WithoutGated(job *api.JobInfo, r *api.Resource) *api.Resource {
	return withoutGatedOwned(job, r.Clone())
}

// withoutGatedOwned is WithoutGated of an r the caller owns: it returns r itself where no pod
// is gated (nearly every job), so that summing every job's reservation each session does not
// copy each one again.
func withoutGatedOwned(job *api.JobInfo, r *api.Resource) *api.Resource {
	var gated *api.Resource
	for _, t := range job.Tasks {
		if t.SchGated {
			if gated == nil {
				gated = api.EmptyResource()
			}
			gated.Add(t.Resreq)
		}
	}
	if gated == nil || gated.IsEmpty() {
		return r
	}
	return ExceededPart(r, gated)
}

// Reserved is what an admitted job holds against its queue and the cluster on top of what its
// pods already hold, so that jobs admitted earlier keep their room until their pods are
// placed:
//   - an Inqueue job: its whole minResources;
//   - a Running job with at least minMember pods placed: the part of minResources its placed
//     pods do not cover yet (a job whose minMember pods are no longer all placed, such as a
//     Spark job whose driver finished, reserves nothing more);
//   - any other job: nothing.
//
// Gated pods' requests are left out in both cases. Unlike upstream, the Running remainder is
// computed in the same milli-units on both sides, so scalar resources are not misread.
func Reserved(job *api.JobInfo) *api.Resource {
	minReq := job.MinResources
	if minReq == nil {
		return api.EmptyResource()
	}
	switch job.Status.Phase {
	case schedulingv1beta1.PodGroupInqueue:
		return WithoutGated(job, minReq)
	case schedulingv1beta1.PodGroupRunning:
		if placedTasks(job) >= job.MinAvailable {
			return withoutGatedOwned(job, ExceededPart(minReq, job.Allocated))
		}
	}
	return api.EmptyResource()
}

// AddElastic adds to dst, and returns it, the part of what the job holds above its
// minResources: room the queue could give back without breaking the gang, which enqueue
// therefore discounts. A job without minResources needs none of what it holds, so all of it
// is elastic (as upstream). Added in place: the ledger sums it over every job every session.
func AddElastic(dst *api.Resource, job *api.JobInfo) *api.Resource {
	minReq := job.MinResources
	if minReq == nil {
		minReq = api.EmptyResource()
	}
	return addExceededPart(dst, job.Allocated, minReq)
}

// placedTasks counts the job's tasks that hold a node (Allocated, Binding, Bound, Running).
func placedTasks(job *api.JobInfo) int32 {
	return job.TaskCount(api.Allocated) + job.TaskCount(api.Binding) + job.TaskCount(api.Bound) + job.TaskCount(api.Running)
}
