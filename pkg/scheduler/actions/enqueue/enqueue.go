// Package enqueue is the action that admits Pending PodGroups: it moves a job to
// Inqueue when the plugins' JobEnqueueable vote lets it (quota, cluster room), so that
// allocate considers it and the VolcanoJob controller creates its pods. The phase changes in
// the session only; the session writes it to the PodGroup when it closes.
//
// Left out: upstream stamps each job's ScheduleStartTimestamp here for its job latency
// metric; JobInfo has no such field yet.
package enqueue

import (
	"sort"

	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/priorityqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "enqueue"

type action struct{}

// New is the enqueue action.
func New() framework.Action { return action{} }

func (action) Name() string { return Name }

// Execute admits Pending jobs one at a time, each time from the queue that goes first by
// QueueOrderFn. The queue goes back after every job and is ranked again, so a plugin whose
// queue order reacts to what it has admitted interleaves queues; with a fixed order (the
// default plugins) the first queue is served until it has no Pending job left, as upstream.
// A job without spec.minResources asks for nothing up front and is always admitted, unless
// its queue is Closed or Closing: such a queue takes no new job, whatever plugins run.
func (action) Execute(ssn *framework.Session) {
	queues := priorityqueue.New(ssn.QueueOrderFn)
	jobsByQueue := map[api.QueueID][]*api.JobInfo{}
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil || !job.IsPending() {
			continue
		}
		queue, ok := ssn.Queues[job.Queue]
		if !ok {
			klog.V(3).InfoS("Queue of the job not found; not enqueueing it", "podGroup", klog.KRef(job.Namespace, job.Name),
				"queue", job.Queue)
			continue
		}
		if queue.IsClosed() {
			klog.V(3).InfoS("Queue is closed; not enqueueing its job", "podGroup", klog.KRef(job.Namespace, job.Name),
				"queue", queue.Name, "state", queue.Queue.Status.State)
			continue
		}
		if _, seen := jobsByQueue[queue.UID]; !seen {
			queues.Push(queue)
		}
		jobsByQueue[queue.UID] = append(jobsByQueue[queue.UID], job)
	}
	// Admitting a job does not change the order of its queue's other jobs (the job order
	// plugins look at placements, not at admissions), so each queue is sorted once.
	for _, jobs := range jobsByQueue {
		sort.Slice(jobs, func(i, j int) bool { return ssn.JobOrderFn(jobs[i], jobs[j]) })
	}

	for queues.Len() > 0 {
		queue := queues.Pop()
		jobs := jobsByQueue[queue.UID]
		if len(jobs) == 0 {
			continue
		}
		job := jobs[0]
		jobsByQueue[queue.UID] = jobs[1:]
		if job.PodGroup.Spec.MinResources == nil || ssn.JobEnqueueable(job) {
			ssn.JobEnqueued(job)
			job.Status.Phase = schedulingv1beta1.PodGroupInqueue
			// Guarded: the arguments alone cost allocations for every job admitted.
			if v := klog.V(4); v.Enabled() {
				v.InfoS("Job enqueued", "podGroup", klog.KRef(job.Namespace, job.Name), "queue", queue.Name)
			}
		}
		queues.Push(queue)
	}
}
