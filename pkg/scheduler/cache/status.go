package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Event reasons and messages users and tests read.
const (
	// EventReasonUnschedulable: on a PodGroup whose gang could not be placed, when the reason
	// changes.
	EventReasonUnschedulable = "Unschedulable"
	// EventReasonScheduled: on a PodGroup whose status changed to ready, and on a bound pod.
	EventReasonScheduled = "Scheduled"
	// EventReasonFailedScheduling: on a pod whose PodScheduled condition changed to False.
	EventReasonFailedScheduling = "FailedScheduling"
	// PodGroupReady is the message of a PodGroup's Scheduled event.
	PodGroupReady = "pod group is ready"
)

// UpdateJobStatus writes what the session decided about a job:
//   - the PodGroup, with a full Update (the CRD has no status subresource), when statusChanged
//     and that status was not already sent for the PodGroup as the informer shows it (a write
//     still in flight when the next cycle closes is not sent twice); the write waits
//     StatusWriteDelay, or startingWriteDelay while bound pods are still to start, and none
//     is sent while binds of its pods are pending, so that a gang's Inqueue, Running
//     and its pods starting over a few cycles cost one write, not one per change, unless a
//     controller waits for it (createsPodsOnInqueue) or the job has completed;
//   - an event on the PodGroup: Warning Unschedulable while it waits, else Normal Scheduled
//     when its status changed; either only when it differs from the last one emitted on that
//     PodGroup. Upstream repeats Unschedulable every cycle and Scheduled with every status
//     write (each running pod counted); the API server then spends a write on the same words
//     per waiting gang per second, and per started pod.
//   - for every unplaced pod (Allocated, Pending or Pipelined, not gated), the PodScheduled=False
//     condition with the task's reason and message, and a Warning FailedScheduling event, both
//     only when the condition changed.
//
// A gang whose pods are still arriving (api.JobInfo.Arriving) gets no status write (unless
// its controller waits for Inqueue to create them), no event and no pod condition: it is not
// unschedulable, only incomplete, and its Inqueue would be out of date within seconds.
//
// The writes run on the status workers; events go through the recorder. Neither blocks the
// session.
func (sc *SchedulerCache) UpdateJobStatus(job *api.JobInfo, statusChanged bool) {
	if job.PodGroup == nil {
		return
	}
	arriving := job.Arriving(sc.clock.Now())
	delay, write := statusWriteDelay(job, arriving, sc.statusWriteDelay)
	if statusChanged && write &&
		sc.podGroupStatuses.change(job.PodGroup.UID, sentStatusOf(job.PodGroup, job.Status), nil) {
		pg := job.PodGroup.DeepCopy()
		pg.Status = *job.Status.DeepCopy()
		sc.writes.enqueueAfter(writeKey{resource: "podgroups", namespace: pg.Namespace, name: pg.Name}, func(ctx context.Context) error {
			err := sc.updatePodGroup(ctx, pg)
			if err != nil {
				sc.podGroupStatuses.forget(pg.UID)
			}
			return err
		}, delay)
	}
	if arriving {
		return
	}
	// FitError walks every task; pods without their own reason share it, so it is computed
	// once per job rather than once per pod.
	fitError := sync.OnceValue(job.FitError)
	switch job.Status.Phase {
	case "", schedulingv1beta1.PodGroupPending, schedulingv1beta1.PodGroupInqueue, schedulingv1beta1.PodGroupUnknown:
		msg := fmt.Sprintf("%d/%d tasks in gang unschedulable: %s", job.TaskCount(api.Pending), len(job.Tasks), fitError())
		if sc.jobEvents.change(job.PodGroup.UID, EventReasonUnschedulable+": "+msg, nil) {
			sc.recorder.Event(job.PodGroup, corev1.EventTypeWarning, EventReasonUnschedulable, msg)
		}
	default:
		if statusChanged && sc.jobEvents.change(job.PodGroup.UID, EventReasonScheduled, nil) {
			sc.recorder.Event(job.PodGroup, corev1.EventTypeNormal, EventReasonScheduled, PodGroupReady)
		}
	}
	for _, status := range []api.TaskStatus{api.Allocated, api.Pending, api.Pipelined} {
		for _, t := range job.TaskStatusIndex[status] {
			if t.SchGated {
				continue
			}
			reason, msg := job.PodScheduledMessage(t, fitError)
			sc.setPodUnscheduled(t.Pod, reason, msg)
		}
	}
}

// RecordJobEvent emits an event on the job's PodGroup.
func (sc *SchedulerCache) RecordJobEvent(job *api.JobInfo, eventType, reason, message string) {
	if job.PodGroup == nil {
		return
	}
	sc.recorder.Event(job.PodGroup, eventType, reason, message)
}

// updatePodGroup writes pg whole, re-reading it on a conflict so that a newer spec is kept.
func (sc *SchedulerCache) updatePodGroup(ctx context.Context, pg *schedulingv1beta1.PodGroup) error {
	client := sc.vc.SchedulingV1beta1().PodGroups(pg.Namespace)
	status := pg.Status
	err := updateRefreshingOnConflict(pg,
		func(pg *schedulingv1beta1.PodGroup) error {
			_, err := client.Update(ctx, pg, metav1.UpdateOptions{})
			return err
		},
		func() (*schedulingv1beta1.PodGroup, error) { return client.Get(ctx, pg.Name, metav1.GetOptions{}) },
		func(latest *schedulingv1beta1.PodGroup) { latest.Status = status })
	if err != nil {
		return fmt.Errorf("update PodGroup %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	return nil
}

// updateRefreshingOnConflict sends obj with update. On a conflict it re-reads the object,
// applies the change to the fresh copy and tries again.
func updateRefreshingOnConflict[T any](obj T, update func(T) error, get func() (T, error), apply func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := update(obj)
		if apierrors.IsConflict(err) {
			latest, getErr := get()
			if getErr != nil {
				return getErr
			}
			apply(latest)
			obj = latest
		}
		return err
	})
}

// setPodUnscheduled sets the pod's PodScheduled condition to False with reason and message,
// and emits a Warning FailedScheduling event, when that changes the condition.
func (sc *SchedulerCache) setPodUnscheduled(pod *corev1.Pod, reason, msg string) {
	want := podCondition{status: corev1.ConditionFalse, reason: reason, message: msg}
	if !sc.conditions.change(pod.UID, want, func() podCondition { return currentCondition(pod) }) {
		return
	}
	sc.recorder.Event(pod, corev1.EventTypeWarning, EventReasonFailedScheduling, msg)
	cond := corev1.PodCondition{
		Type: corev1.PodScheduled, Status: want.status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(sc.clock.Now()),
	}
	if cur := podScheduledCondition(pod); cur != nil && cur.Status == want.status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	sc.writes.enqueue(writeKey{resource: "pods", namespace: pod.Namespace, name: pod.Name}, func(ctx context.Context) error {
		err := sc.patchPodCondition(ctx, pod, cond)
		if err != nil {
			sc.conditions.forget(pod.UID)
		}
		return err
	})
}

// patchPodCondition patches one condition into the pod's status (conditions merge by type).
// The UID in the patch makes it fail on a pod recreated under the same name.
func (sc *SchedulerCache) patchPodCondition(ctx context.Context, pod *corev1.Pod, cond corev1.PodCondition) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	if err != nil {
		return fmt.Errorf("encode condition patch for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	_, err = sc.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("set %s=%s (%s) on pod %s/%s: %w", cond.Type, cond.Status, cond.Reason, pod.Namespace, pod.Name, err)
	}
	return nil
}

func podScheduledCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podCondition is what makes a PodScheduled condition different: not its time stamps.
type podCondition struct {
	status          corev1.ConditionStatus
	reason, message string
}

// StatusWriteDelay is how long a PodGroup status write waits for more changes, which then go
// in the same write. A gang typically changes its status three times within seconds (Inqueue,
// Running as its pods are bound, its running count as they start), and the CRD has no status
// subresource, so each change would be a whole-object Update: waiting halves the PodGroup
// writes the API server serves per pod. The one write that is not delayed is the one a
// controller waits for (createsPodsOnInqueue).
const StatusWriteDelay = 3 * time.Second

// statusWriteDelay is how long the job's changed status waits before it is written, and
// whether it is written at all yet: not while the gang is arriving, unless its controller
// waits for it (then at once); not while binds of its pods are pending (Binding; a pipelined
// job's Allocated tasks are not binds), whose outcome changes it again (under load binds wait
// seconds for the API server); at once when the job has completed (every pod it ran has
// finished: no change of its pods follows to share the write, and users and controllers wait
// for that phase); longer while bound pods are still to start (see startingWriteDelay); else
// delay.
func statusWriteDelay(job *api.JobInfo, arriving bool, delay time.Duration) (time.Duration, bool) {
	switch {
	case len(job.Tasks) == 0 && createsPodsOnInqueue(job.PodGroup):
		return 0, true
	case arriving, job.TaskCount(api.Binding) > 0:
		return 0, false
	case job.Status.Phase == schedulingv1beta1.PodGroupCompleted:
		return 0, true
	case job.TaskCount(api.Bound) > 0:
		return startingWriteDelay(delay), true
	}
	return delay, true
}

// startingWriteDelay is how long a status waits, given the usual delay, while the gang's bound
// pods have yet to start (the kubelet runs them: seconds, more under load). Their running
// count then changes the status again, and that change, due the usual delay later, brings the
// write forward: phase Running and the running count go in one write rather than two. A pod
// that takes longer to start costs a second write, not a stale status.
func startingWriteDelay(delay time.Duration) time.Duration { return 3 * delay }

// createsPodsOnInqueue: the PodGroup belongs to a Volcano Job, whose controller creates the
// pods only once the PodGroup is Inqueue. Other owners (Kubeflow's training operator, KubeRay,
// plain pods' PodGroups) create their pods regardless.
func createsPodsOnInqueue(pg *schedulingv1beta1.PodGroup) bool {
	owner := metav1.GetControllerOf(pg)
	return owner != nil && owner.Kind == "Job" && strings.HasPrefix(owner.APIVersion, batchv1alpha1.SchemeGroupVersion.Group+"/")
}

// sentStatus is a PodGroup status as sent, with the version of the PodGroup it was computed
// from: once the informer shows a newer version (the write landed, or someone else wrote),
// the session's own comparison with it decides again.
type sentStatus struct {
	resourceVersion string
	phase           schedulingv1beta1.PodGroupPhase
	running         int32
	succeeded       int32
	failed          int32
	conditions      string
}

// sentStatusOf runs for every job whose status differs from its PodGroup's at every session
// close, so its conditions are joined into one exact-size allocation.
func sentStatusOf(pg *schedulingv1beta1.PodGroup, status schedulingv1beta1.PodGroupStatus) sentStatus {
	fields := func(c *schedulingv1beta1.PodGroupCondition) [4]string {
		return [4]string{string(c.Type), string(c.Status), c.Reason, c.Message}
	}
	size := 0
	for i := range status.Conditions {
		for _, f := range fields(&status.Conditions[i]) {
			size += len(f) + 1
		}
	}
	var conditions strings.Builder
	conditions.Grow(size)
	for i := range status.Conditions {
		for _, f := range fields(&status.Conditions[i]) {
			conditions.WriteString(f)
			conditions.WriteByte(0)
		}
	}
	return sentStatus{resourceVersion: pg.ResourceVersion, phase: status.Phase, running: status.Running,
		succeeded: status.Succeeded, failed: status.Failed, conditions: conditions.String()}
}

// currentCondition is the pod's own PodScheduled condition, zero when it has none.
func currentCondition(pod *corev1.Pod) podCondition {
	if c := podScheduledCondition(pod); c != nil {
		return podCondition{status: c.Status, reason: c.Reason, message: c.Message}
	}
	return podCondition{}
}

// lastSent remembers what was last sent about each object (a pod's PodScheduled condition, a
// PodGroup's Unschedulable event), so that nothing that would repeat it is sent. The informer
// shows a write only after it is done, and under a backlog of writes that can take longer than
// a cycle; comparing with the informer's object alone would send the same thing, and emit the
// same event, again every cycle.
type lastSent[V comparable] struct {
	mu    sync.Mutex
	byUID map[types.UID]V
}

func newLastSent[V comparable]() *lastSent[V] {
	return &lastSent[V]{byUID: map[types.UID]V{}}
}

// change records want as the object's and reports whether it differs from the last one
// sent, or, if none was, from what the object itself shows (current; zero when nil).
func (s *lastSent[V]) change(uid types.UID, want V, current func() V) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.byUID[uid]
	if !ok && current != nil {
		cur, ok = current(), true
	}
	if ok && cur == want {
		return false
	}
	s.byUID[uid] = want
	return true
}

// forget drops what was sent about the object: it is gone, or the write failed and the
// object's own state is the truth again.
func (s *lastSent[V]) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
}
