// Package allocate is the action that finds nodes for pending pods. It walks
// queues in QueueOrderFn order, each queue's jobs in JobOrderFn order and each job's tasks in
// TaskOrderFn order; a job's placements form one statement, bound when the job is ready
// (its gang is complete), kept in the session when it is only pipelined, undone otherwise.
//
// The node search and the allocate-or-pipeline choice live in actions/internal/nodesearch,
// which backfill uses too.
//
// A job's scheduling latency (e2e_job_scheduling_latency_milliseconds) is observed when a
// commit makes its gang ready, from its PodGroup's creation: JobInfo does not carry
// upstream's ScheduleStartTimestamp. Each task decision counts in schedule_attempts_total.
//
// Left out: upstream's hyperNode (network-topology) path.
package allocate

import (
	"sort"

	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/nodesearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/priorityqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// Name is the action's name in volcano-scheduler.conf.
const Name = "allocate"

// enqueueAction is the action that admits Pending jobs. Without it, allocate admits them.
const enqueueAction = "enqueue"

// Options bound how far a node search goes; cmd/vc-scheduler fills them from its flags.
type Options = nodesearch.Options

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options { return nodesearch.DefaultOptions() }

type action struct{ search *nodesearch.NodeSearch }

// New is the action with the default search bounds.
func New() framework.Action { return NewWithOptions(DefaultOptions()) }

// NewWithOptions is the action with the search bounds the command-line flags give.
func NewWithOptions(opts Options) framework.Action { return &action{search: nodesearch.New(opts)} }

func (a *action) Name() string { return Name }

func (a *action) Execute(ssn *framework.Session) {
	c := &cycle{
		ssn:         ssn,
		search:      a.search.Open(ssn, nodesearch.PredicateErrorCacheEnabled(ssn, Name)),
		pending:     map[api.JobID]*taskList{},
		failedRoles: map[api.JobID]map[string]bool{},
	}
	c.run()
}

// cycle is one run of the action over a session.
type cycle struct {
	ssn    *framework.Session
	search *nodesearch.SessionSearch
	// pending holds each job's tasks still to try, built on the job's first turn.
	pending map[api.JobID]*taskList
	// failedRoles: roles of a job one of whose tasks found no node. Their other tasks are
	// not tried again in this run; the nodes only fill up meanwhile.
	failedRoles map[api.JobID]map[string]bool
}

// taskList is a job's tasks in TaskOrderFn order, consumed from the front.
type taskList struct {
	tasks []*api.TaskInfo
	next  int
}

func (l *taskList) empty() bool { return l.next == len(l.tasks) }

func (l *taskList) pop() *api.TaskInfo {
	t := l.tasks[l.next]
	l.next++
	return t
}

func (c *cycle) run() {
	queues, jobsByQueue := c.pickJobs()
	for queues.Len() > 0 && !c.ssn.Stopping() {
		queue := queues.Pop()
		// An overused queue is out for the rest of the action: what it gives back only
		// returns in a later session.
		if c.ssn.Overused(queue) {
			klog.V(3).InfoS("Queue is overused; skipping its jobs", "queue", queue.Name)
			continue
		}
		jobs := jobsByQueue[queue.UID]
		if jobs.Len() == 0 {
			continue
		}
		job := jobs.Pop()
		tasks := c.pendingTasks(job)
		if !tasks.empty() {
			dispatched := job.IsReady()
			stmt := c.allocateTasks(queue, job, tasks)
			// Tasks are left when the job became ready before using them all (minAvailable
			// below the replicas) or stopped early: it comes back for them after the others.
			if !tasks.empty() {
				jobs.Push(job)
			}
			if stmt != nil {
				stmt.Commit()
				if !dispatched && job.IsReady() {
					c.ssn.Metrics().ObserveJobDispatched(job.CreationTimestamp.Time)
				}
			}
		}
		// The queue's share has changed, so it takes its new place.
		queues.Push(queue)
	}
}

// pickJobs gathers the jobs to allocate, by queue. Pending jobs wait for
// enqueue when it is configured; without it, allocate admits them itself.
func (c *cycle) pickJobs() (*priorityqueue.Queue[*api.QueueInfo], map[api.QueueID]*jobQueue) {
	ssn := c.ssn
	enqueueConfigured := ssn.EnabledActions[enqueueAction]
	queues := priorityqueue.New(ssn.QueueOrderFn)
	picked := map[api.QueueID][]*api.JobInfo{}
	for _, job := range ssn.Jobs {
		if job.IsPending() {
			if enqueueConfigured {
				continue
			}
			// enqueue's rule, here when allocate admits jobs itself: a Closed or Closing
			// queue takes no new job.
			if q := ssn.Queues[job.Queue]; q != nil && q.IsClosed() {
				continue
			}
			job.Status.Phase = schedulingv1beta1.PodGroupInqueue
		}
		// A job with nothing pending has nothing to do here; skipping it before the
		// validity check keeps a cycle over a busy but settled cluster cheap.
		if len(job.TaskStatusIndex[api.Pending]) == 0 {
			continue
		}
		if res := ssn.JobValid(job); res != nil {
			klog.V(4).InfoS("Job is not valid; not allocating it", "podGroup", klog.KRef(job.Namespace, job.Name),
				"reason", res.Reason, "message", res.Message)
			continue
		}
		queue, ok := ssn.Queues[job.Queue]
		if !ok {
			klog.V(3).InfoS("Queue of the job not found; not allocating it", "podGroup", klog.KRef(job.Namespace, job.Name),
				"queue", job.Queue)
			continue
		}
		if _, ok := picked[queue.UID]; !ok {
			queues.Push(queue)
		}
		picked[queue.UID] = append(picked[queue.UID], job)
	}
	jobsByQueue := make(map[api.QueueID]*jobQueue, len(picked))
	for id, jobs := range picked {
		jobsByQueue[id] = newJobQueue(jobs, ssn.JobOrderFn)
	}
	return queues, jobsByQueue
}

// pendingTasks returns the job's tasks still to try, building the list on its first turn:
// pending tasks, less those held by scheduling gates and the best-effort ones (backfill's).
func (c *cycle) pendingTasks(job *api.JobInfo) *taskList {
	if l, ok := c.pending[job.UID]; ok {
		return l
	}
	l := &taskList{tasks: make([]*api.TaskInfo, 0, len(job.TaskStatusIndex[api.Pending]))}
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !t.SchGated && !t.BestEffort {
			l.tasks = append(l.tasks, t)
		}
	}
	// A single task needs no order, and sort.Slice allocates even for one.
	if len(l.tasks) > 1 {
		sort.Slice(l.tasks, func(i, j int) bool { return c.ssn.TaskOrderFn(l.tasks[i], l.tasks[j]) })
	}
	c.pending[job.UID] = l
	return l
}

// allocateTasks places the job's tasks in one statement. It returns the
// statement when the job is ready, for the caller to commit; otherwise it keeps the
// placements in the session if the job is pipelined, undoes them if not, and returns nil.
func (c *cycle) allocateTasks(queue *api.QueueInfo, job *api.JobInfo, tasks *taskList) *framework.Statement {
	ssn := c.ssn
	stmt := ssn.NewStatement()
	for !tasks.empty() {
		task := tasks.pop()
		if err := ssn.Allocatable(queue, task); err != nil {
			// The queue's quota says no. That is no fact about nodes (no fit error), but it
			// is the pod's reason to wait, which its PodScheduled condition should say.
			if v := klog.V(3); v.Enabled() {
				v.InfoS("Queue cannot take the pod now", "queue", queue.Name, "pod", klog.KRef(task.Namespace, task.Name), "reason", err)
			}
			if job.QueueRefusals == nil {
				job.QueueRefusals = map[api.TaskID]string{}
			}
			job.QueueRefusals[task.UID] = err.Error()
			continue
		}
		if task.TaskRole != "" && c.failedRoles[job.UID][task.TaskRole] {
			continue
		}
		if err := ssn.PrePredicate(task); err != nil {
			klog.V(3).InfoS("Pre-predicate failed", "pod", klog.KRef(task.Namespace, task.Name), "err", err)
			job.NodesFitErrors[task.UID] = c.search.FailAllNodes(err)
			ssn.Metrics().CountAttempt(metrics.AttemptUnschedulable)
			break
		}
		node, fitErrors := c.search.Find(task)
		if node != nil {
			if err := nodesearch.Place(stmt, task, node); err != nil {
				klog.ErrorS(err, "A plugin refused the placement", "pod", klog.KRef(task.Namespace, task.Name), "node", node.Name)
				node, fitErrors = nil, nodesearch.PlacementFailure(node, err)
				ssn.Metrics().CountAttempt(metrics.AttemptError)
			} else {
				ssn.Metrics().CountAttempt(metrics.AttemptScheduled)
			}
		} else {
			ssn.Metrics().CountAttempt(metrics.AttemptUnschedulable)
		}
		if node == nil {
			job.NodesFitErrors[task.UID] = fitErrors
			c.roleFailed(job, task)
			if job.NeedContinueAllocating(c.failedRoles[job.UID]) {
				continue
			}
			break
		}
		if ssn.JobReady(job) && !tasks.empty() {
			// Ready: commit now and let other jobs go before this one's extra tasks.
			break
		}
	}
	if ssn.JobReady(job) {
		return stmt
	}
	if !ssn.JobPipelined(job) {
		stmt.Discard()
	}
	return nil
}

// roleFailed remembers that a task of the job's role found no node.
func (c *cycle) roleFailed(job *api.JobInfo, task *api.TaskInfo) {
	if task.TaskRole == "" {
		return
	}
	roles := c.failedRoles[job.UID]
	if roles == nil {
		roles = map[string]bool{}
		c.failedRoles[job.UID] = roles
	}
	roles[task.TaskRole] = true
}
