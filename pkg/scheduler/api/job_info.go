package api

import (
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Reasons a task gets in its PodScheduled condition (upstream's, kept for autoscalers).
const (
	ReasonSchedulable    = "Schedulable"
	ReasonUnschedulable  = "Unschedulable"
	ReasonSchedulerError = "SchedulerError"
)

// PodGroupNotReady opens every gang failure message.
const PodGroupNotReady = "pod group is not ready"

// JobInfo is one PodGroup and its pods.
type JobInfo struct {
	UID       JobID
	Name      string
	Namespace string
	Queue     QueueID
	Priority  int32
	// PriorityClassMissing: the PodGroup names a PriorityClass the cluster does not have,
	// so Priority is the default's. Set with Priority by the snapshot.
	PriorityClassMissing bool

	MinAvailable          int32
	TaskMinAvailable      map[string]int32
	TaskMinAvailableTotal int32
	// MinResources is the PodGroup's spec.minResources in scheduler units (scalars in
	// milli-units: "volcano.sh/vgpu-memory: 3000" is 3e6), nil when it sets none: such a job
	// bypasses every queue and cluster quota at enqueue. Computed once from the PodGroup
	// (the quota plugins read it for every job every session) and never modified: clones
	// share it.
	MinResources *Resource

	// PodGroup is the informer's object: shared, never modified. The session changes
	// Status, its own copy, and the cache writes it back only when it differs.
	PodGroup *schedulingv1beta1.PodGroup
	Status   schedulingv1beta1.PodGroupStatus

	Tasks           map[TaskID]*TaskInfo
	TaskStatusIndex map[TaskStatus]map[TaskID]*TaskInfo
	Allocated       *Resource
	TotalRequest    *Resource

	// taskCounts and pendingBestEffort count what TaskStatusIndex holds, kept with it: job
	// ordering asks IsReady of both jobs at every comparison, and walking the index there
	// (thousands of jobs, sorted every session) cost more than placing their pods.
	taskCounts        [numTaskStatuses]int32
	pendingBestEffort int32

	// NodesFitErrors: why each task found no node in this session.
	NodesFitErrors map[TaskID]*FitErrors
	// QueueRefusals: why the job's queue could not take a task in this session (nil until
	// one is refused). Only the pod's own message shows it: upstream's gang message counts
	// such a task as Unschedulable with no origin reason, and that message is a contract.
	QueueRefusals map[TaskID]string
	// JobFitErrors: a job-level reason (set by plugins that reject the job as a whole).
	JobFitErrors string

	CreationTimestamp metav1.Time
}

// NewJobInfo is an empty job; SetPodGroup and AddTask fill it.
func NewJobInfo(uid JobID) *JobInfo {
	return &JobInfo{
		UID:             uid,
		Tasks:           map[TaskID]*TaskInfo{},
		TaskStatusIndex: map[TaskStatus]map[TaskID]*TaskInfo{},
		Allocated:       EmptyResource(),
		TotalRequest:    EmptyResource(),
		NodesFitErrors:  map[TaskID]*FitErrors{},
	}
}

// SetPodGroup takes the job's identity, gang sizes and queue from its PodGroup. An empty
// queue means defaultQueue.
func (j *JobInfo) SetPodGroup(pg *schedulingv1beta1.PodGroup, defaultQueue string) {
	j.Name, j.Namespace = pg.Name, pg.Namespace
	j.PodGroup = pg
	j.Status = *pg.Status.DeepCopy()
	j.MinAvailable = pg.Spec.MinMember
	j.MinResources = nil
	if pg.Spec.MinResources != nil {
		j.MinResources = NewResource(*pg.Spec.MinResources)
	}
	j.TaskMinAvailable = pg.Spec.MinTaskMember
	j.TaskMinAvailableTotal = 0
	for _, n := range pg.Spec.MinTaskMember {
		j.TaskMinAvailableTotal += n
	}
	j.Queue = QueueID(pg.Spec.Queue)
	if j.Queue == "" {
		j.Queue = QueueID(defaultQueue)
	}
	j.CreationTimestamp = pg.CreationTimestamp
}

// Preemptable is false where the job's PodGroup is annotated, or where it has no such
// annotation labelled, volcano.sh/preemptable: "false", the value read as a pod's is (see
// NewTaskInfo). gangpreempt and gangreclaim then take none of its pods, whatever the pods' own
// marks, as upstream v1.15.1's do; preempt and reclaim read only the pods' marks, as
// upstream's. Read from the PodGroup, which a session never modifies, so clones agree.
func (j *JobInfo) Preemptable() bool {
	return j.PodGroup == nil || annotationOrLabel(&j.PodGroup.ObjectMeta, schedulingv1beta1.PodPreemptable) != "false"
}

// AddTask adds (or replaces) a task.
func (j *JobInfo) AddTask(t *TaskInfo) {
	if old, ok := j.Tasks[t.UID]; ok {
		j.DeleteTask(old)
	}
	j.Tasks[t.UID] = t
	j.indexTask(t)
	j.TotalRequest.Add(t.Resreq)
	if AllocatedStatus(t.Status) {
		j.Allocated.Add(t.Resreq)
	}
}

// DeleteTask removes a task.
func (j *JobInfo) DeleteTask(t *TaskInfo) {
	cur, ok := j.Tasks[t.UID]
	if !ok {
		return
	}
	j.TotalRequest.SubTotal(cur.Resreq)
	if AllocatedStatus(cur.Status) {
		j.Allocated.SubTotal(cur.Resreq)
	}
	j.unindexTask(cur)
	delete(j.Tasks, t.UID)
}

// UpdateTaskStatus moves a task to a new status, keeping indexes and totals right.
func (j *JobInfo) UpdateTaskStatus(t *TaskInfo, status TaskStatus) {
	j.unindexTask(t)
	if AllocatedStatus(t.Status) {
		j.Allocated.SubTotal(t.Resreq)
	}
	t.Status = status
	j.indexTask(t)
	if AllocatedStatus(status) {
		j.Allocated.Add(t.Resreq)
	}
}

func (j *JobInfo) indexTask(t *TaskInfo) {
	m := j.TaskStatusIndex[t.Status]
	if m == nil {
		m = map[TaskID]*TaskInfo{}
		j.TaskStatusIndex[t.Status] = m
	}
	m[t.UID] = t
	j.count(t, 1)
}

func (j *JobInfo) unindexTask(t *TaskInfo) {
	if m := j.TaskStatusIndex[t.Status]; m != nil {
		if _, ok := m[t.UID]; !ok {
			return
		}
		delete(m, t.UID)
		if len(m) == 0 {
			delete(j.TaskStatusIndex, t.Status)
		}
		j.count(t, -1)
	}
}

// count adds delta to the counts of the task's status.
func (j *JobInfo) count(t *TaskInfo, delta int32) {
	j.taskCounts[t.Status] += delta
	if t.Status == Pending && t.BestEffort {
		j.pendingBestEffort += delta
	}
}

// Clone copies the job and its tasks for a session.
func (j *JobInfo) Clone() *JobInfo {
	c := NewJobInfo(j.UID)
	c.Name, c.Namespace, c.Queue, c.Priority, c.PriorityClassMissing = j.Name, j.Namespace, j.Queue, j.Priority, j.PriorityClassMissing
	c.MinAvailable, c.TaskMinAvailable, c.TaskMinAvailableTotal = j.MinAvailable, j.TaskMinAvailable, j.TaskMinAvailableTotal
	c.MinResources = j.MinResources
	c.PodGroup = j.PodGroup
	c.Status = *j.Status.DeepCopy()
	c.CreationTimestamp = j.CreationTimestamp
	c.JobFitErrors = j.JobFitErrors
	// The totals and counts are copied and the indexes built at their sizes: a snapshot
	// clones every job every cycle, and adding the tasks one by one cost it a fifth of its time.
	c.Allocated, c.TotalRequest = j.Allocated.Clone(), j.TotalRequest.Clone()
	c.taskCounts, c.pendingBestEffort = j.taskCounts, j.pendingBestEffort
	c.Tasks = make(map[TaskID]*TaskInfo, len(j.Tasks))
	for id, t := range j.Tasks {
		ct := t.Clone()
		c.Tasks[id] = ct
		m := c.TaskStatusIndex[ct.Status]
		if m == nil {
			m = make(map[TaskID]*TaskInfo, j.taskCounts[ct.Status])
			c.TaskStatusIndex[ct.Status] = m
		}
		m[id] = ct
	}
	return c
}

// Refresh makes c, a clone of j that a closed session had, what Clone would return now, and
// reports whether it could: when everything of c but its PodGroup status is still what j
// holds (neither the cache nor that session changed the job's tasks, their states, its totals
// or its session findings), only the status, which every session rewrites, is copied again.
// A snapshot of a large cluster thus copies the few jobs that changed, not all of them. false
// leaves c as it was: clone j instead.
func (j *JobInfo) Refresh(c *JobInfo) bool {
	if !j.sameBeyondStatus(c) {
		return false
	}
	c.Priority, c.PriorityClassMissing = j.Priority, j.PriorityClassMissing
	c.Status = *j.Status.DeepCopy()
	return true
}

// sameBeyondStatus: every field of c but Priority, PriorityClassMissing and Status equals j's as Clone copies it;
// the shared objects (PodGroup, the tasks' pods and requests) are the same ones.
func (j *JobInfo) sameBeyondStatus(c *JobInfo) bool {
	if c.UID != j.UID || c.Name != j.Name || c.Namespace != j.Namespace || c.Queue != j.Queue ||
		c.MinAvailable != j.MinAvailable || c.TaskMinAvailableTotal != j.TaskMinAvailableTotal ||
		!maps.Equal(c.TaskMinAvailable, j.TaskMinAvailable) || c.MinResources != j.MinResources || c.PodGroup != j.PodGroup ||
		c.CreationTimestamp != j.CreationTimestamp || c.JobFitErrors != j.JobFitErrors ||
		c.NodesFitErrors == nil || len(c.NodesFitErrors) != 0 || c.QueueRefusals != nil ||
		c.taskCounts != j.taskCounts || c.pendingBestEffort != j.pendingBestEffort ||
		!c.Allocated.identical(j.Allocated) || !c.TotalRequest.identical(j.TotalRequest) ||
		len(c.Tasks) != len(j.Tasks) || len(c.TaskStatusIndex) != len(j.TaskStatusIndex) {
		return false
	}
	for id, t := range j.Tasks {
		ct := c.Tasks[id]
		if ct == nil || !t.sameAs(ct) || c.TaskStatusIndex[ct.Status][id] != ct {
			return false
		}
	}
	// Every task is in its status's index; no index holds more.
	indexed := 0
	for _, m := range c.TaskStatusIndex {
		indexed += len(m)
	}
	return indexed == len(c.Tasks)
}

// Key is "<namespace>/<name>" of the PodGroup.
func (j *JobInfo) Key() string { return string(j.UID) }

// TaskCount is the number of tasks in a status.
func (j *JobInfo) TaskCount(s TaskStatus) int32 { return j.taskCounts[s] }

// ReadyTaskNum: tasks holding or about to hold their node (Bound, Binding, Running,
// Allocated) plus finished ones.
func (j *JobInfo) ReadyTaskNum() int32 {
	return j.TaskCount(Bound) + j.TaskCount(Binding) + j.TaskCount(Running) + j.TaskCount(Allocated) + j.TaskCount(Succeeded)
}

// WaitingTaskNum: tasks waiting for resources being released.
func (j *JobInfo) WaitingTaskNum() int32 { return j.TaskCount(Pipelined) }

// PendingBestEffortTaskNum: pending tasks that request nothing and so always fit.
func (j *JobInfo) PendingBestEffortTaskNum() int32 { return j.pendingBestEffort }

// ValidTaskNum: tasks that may still run (allocated, succeeded, pipelined or pending).
func (j *JobInfo) ValidTaskNum() int32 {
	return j.ReadyTaskNum() + j.TaskCount(Pipelined) + j.TaskCount(Pending)
}

// GangArrivalGrace is how long after its PodGroup was created a gang short of its minimum
// counts as arriving rather than unschedulable: its controller is still creating its pods.
const GangArrivalGrace = 30 * time.Second

// Arriving reports whether the job is a gang still being created: fewer of its pods exist
// than its minimum, within GangArrivalGrace of its PodGroup's creation. Nothing is wrong
// with it yet, so nothing about it is written (no status, no Unschedulable condition or event
// on the PodGroup or its pods); past the grace it is explained as any other gang. A pod that
// failed or is being deleted was created all the same: a job short of its minimum because
// of one is not arriving, and its status says so at once (a job whose only pod failed was
// left Running until 30 s after its PodGroup's creation; upstream shows it Completed in its
// next cycle).
func (j *JobInfo) Arriving(now time.Time) bool {
	return j.PodGroup != nil && int32(len(j.Tasks)) < j.MinAvailable &&
		now.Sub(j.PodGroup.CreationTimestamp.Time) < GangArrivalGrace
}

// IsReady: the gang's minimum is placed (best-effort pending tasks count, they always fit).
func (j *JobInfo) IsReady() bool {
	return j.ReadyTaskNum()+j.PendingBestEffortTaskNum() >= j.MinAvailable
}

// IsPipelined: the gang's minimum is placed or waiting for released resources.
func (j *JobInfo) IsPipelined() bool {
	return j.WaitingTaskNum()+j.ReadyTaskNum()+j.PendingBestEffortTaskNum() >= j.MinAvailable
}

// IsStarving: fewer than the minimum are placed or waiting.
func (j *JobInfo) IsStarving() bool {
	return j.WaitingTaskNum()+j.ReadyTaskNum() < j.MinAvailable
}

// IsPending: the PodGroup has not been admitted (phase empty or Pending).
func (j *JobInfo) IsPending() bool {
	return j.Status.Phase == "" || j.Status.Phase == schedulingv1beta1.PodGroupPending
}

// roleCounts counts tasks per role among those for which counted returns true.
func (j *JobInfo) roleCounts(counted func(*TaskInfo) bool) map[string]int32 {
	counts := map[string]int32{}
	for _, t := range j.Tasks {
		if counted(t) {
			counts[t.TaskRole]++
		}
	}
	return counts
}

// rolesBind: the job has roles with a minTaskMember, and they count. They do not when the
// job's minMember is below the roles' total, as upstream: then only minMember binds.
func (j *JobInfo) rolesBind() bool {
	return len(j.TaskMinAvailable) > 0 && j.MinAvailable >= j.TaskMinAvailableTotal
}

// checkRoles: every role with a minTaskMember reaches it, or the roles do not bind. A job
// without roles has nothing to count (gang asks this after every placement).
func (j *JobInfo) checkRoles(counted func(*TaskInfo) bool) bool {
	if !j.rolesBind() {
		return true
	}
	counts := j.roleCounts(counted)
	for role, min := range j.TaskMinAvailable {
		if counts[role] < min {
			return false
		}
	}
	return true
}

// CheckTaskValid: every role has enough tasks that may still run.
func (j *JobInfo) CheckTaskValid() bool {
	return j.checkRoles(func(t *TaskInfo) bool {
		return AllocatedStatus(t.Status) || t.Status == Succeeded || t.Status == Pipelined || t.Status == Pending
	})
}

// readyForRole: the task counts as placed toward its role's minimum.
func readyForRole(t *TaskInfo) bool {
	return AllocatedStatus(t.Status) || t.Status == Succeeded || (t.Status == Pending && t.BestEffort)
}

// CheckTaskReady: every role has enough tasks placed (or best-effort pending).
func (j *JobInfo) CheckTaskReady() bool { return j.checkRoles(readyForRole) }

// RoleSurplus is, for each role with a minTaskMember, how many tasks it has placed (as
// CheckTaskReady counts them) above that minimum, negative when below; nil when the roles do
// not bind. A role without a minTaskMember is not in it: only minMember bounds its tasks.
func (j *JobInfo) RoleSurplus() map[string]int32 {
	if !j.rolesBind() {
		return nil
	}
	counts := j.roleCounts(readyForRole)
	surplus := make(map[string]int32, len(j.TaskMinAvailable))
	for role, min := range j.TaskMinAvailable {
		surplus[role] = counts[role] - min
	}
	return surplus
}

// CheckTaskPipelined: every role has enough tasks placed or waiting.
func (j *JobInfo) CheckTaskPipelined() bool {
	return j.checkRoles(func(t *TaskInfo) bool {
		return AllocatedStatus(t.Status) || t.Status == Succeeded || t.Status == Pipelined || (t.Status == Pending && t.BestEffort)
	})
}

// NeedContinueAllocating says, after one task found no node, whether trying the job's other
// tasks can still make the gang.
func (j *JobInfo) NeedContinueAllocating(failedRoles map[string]bool) bool {
	if int(j.MinAvailable) == len(j.Tasks) {
		return false
	}
	if j.MinAvailable < j.TaskMinAvailableTotal {
		n := j.ReadyTaskNum()
		for _, t := range j.TaskStatusIndex[Pending] {
			if !failedRoles[t.TaskRole] {
				n++
			}
		}
		return n >= j.MinAvailable
	}
	allocated := j.roleCounts(func(t *TaskInfo) bool { return AllocatedStatus(t.Status) || t.Status == Succeeded })
	for role := range failedRoles {
		if allocated[role] < j.TaskMinAvailable[role] {
			return false
		}
	}
	return true
}

// FitError is the gang's explanation, e.g. "pod group is not ready, 2 Pending,
// 2 minAvailable; Pending: 1 Schedulable, 1 Unschedulable. Origin reason is w-1: 0/1 nodes
// are unavailable: 1 Insufficient volcano.sh/vgpu-memory."
func (j *JobInfo) FitError() string {
	byStatus := map[string]int{"minAvailable": int(j.MinAvailable)}
	for s, m := range j.TaskStatusIndex {
		byStatus[s.String()] += len(m)
	}
	msg := PodGroupNotReady + ", " + histogram(byStatus)
	if pending := j.TaskStatusIndex[Pending]; len(pending) > 0 {
		byReason := map[string]int{}
		for _, t := range pending {
			reason, _ := j.TaskSchedulingReason(t)
			byReason[reason]++
		}
		msg += "; Pending: " + histogram(byReason)
	}
	if j.JobFitErrors != "" {
		return msg + ". Origin reason is: " + j.JobFitErrors
	}
	// The first task (by name, so the message is stable) that found no node explains why.
	var origin *TaskInfo
	for uid := range j.NodesFitErrors {
		if t, ok := j.Tasks[uid]; ok && (origin == nil || t.Name < origin.Name) {
			origin = t
		}
	}
	if origin != nil {
		msg += fmt.Sprintf(". Origin reason is %s: %s", origin.Name, j.NodesFitErrors[origin.UID].Error())
	}
	return msg
}

// TaskSchedulingReason is the PodScheduled reason and message for a task that is not yet
// bound. The task's last tentative placement, if any, is what it reports.
func (j *JobInfo) TaskSchedulingReason(t *TaskInfo) (reason, msg string) {
	ctx := TransactionContext{NodeName: t.NodeName, Status: t.Status}
	if t.LastTransaction != nil {
		ctx = *t.LastTransaction
	}
	switch ctx.Status {
	case Allocated:
		return ReasonSchedulable, fmt.Sprintf("Pod %s/%s can possibly be assigned to %s, once minAvailable is satisfied", t.Namespace, t.Name, ctx.NodeName)
	case Pipelined:
		return ReasonUnschedulable, fmt.Sprintf("Pod %s/%s can possibly be assigned to %s, once resource is released and minAvailable is satisfied", t.Namespace, t.Name, ctx.NodeName)
	}
	if fe := j.NodesFitErrors[t.UID]; fe != nil {
		return ReasonUnschedulable, fe.Error()
	}
	if r := j.QueueRefusals[t.UID]; r != "" {
		return ReasonUnschedulable, r
	}
	return ReasonUnschedulable, j.JobFitErrors
}

// PodScheduledMessage is TaskSchedulingReason with an empty message replaced by the gang's
// explanation (FitError, which walks every task: fitError may be one computed once per job),
// as written into the pod's PodScheduled condition and FailedScheduling event.
func (j *JobInfo) PodScheduledMessage(t *TaskInfo, fitError func() string) (reason, msg string) {
	reason, msg = j.TaskSchedulingReason(t)
	if msg == "" {
		msg = fitError()
	}
	return reason, msg
}
