package cache

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// rootQueueName is the top of the queue hierarchy.
const rootQueueName = "root"

// queueCreationBackoff retries once a second for about total.
func queueCreationBackoff(total time.Duration) wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 1, Steps: int(total / time.Second)}
}

// createDefaultQueues makes sure the root queue (not reclaimable) and the default queue
// (reclaimable) exist, both of weight 1. A queue that already exists is left as it is; other
// errors are retried with backoff.
func createDefaultQueues(ctx context.Context, vc versioned.Interface, defaultQueue string, backoff wait.Backoff) error {
	for _, q := range []*schedulingv1beta1.Queue{
		{
			ObjectMeta: metav1.ObjectMeta{Name: rootQueueName},
			Spec:       schedulingv1beta1.QueueSpec{Reclaimable: ptr.To(false), Weight: 1},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: defaultQueue},
			Spec:       schedulingv1beta1.QueueSpec{Reclaimable: ptr.To(true), Weight: 1},
		},
	} {
		err := retry.OnError(backoff, func(err error) bool { return !apierrors.IsAlreadyExists(err) }, func() error {
			_, err := vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				klog.ErrorS(err, "Creating queue failed; retrying", "queue", q.Name)
			}
			return err
		})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create queue %s: %w", q.Name, err)
		}
	}
	return nil
}

// UpdateQueueStatus writes the queue's status.allocated when it differs from what the API
// server holds. Only that field is written.
func (sc *SchedulerCache) UpdateQueueStatus(queue *api.QueueInfo, allocated *api.Resource) {
	want := allocated.ToResourceList()
	if sameAmounts(queue.Queue.Status.Allocated, want) {
		return
	}
	q := queue.Queue.DeepCopy()
	q.Status.Allocated = want
	sc.writes.enqueue(writeKey{resource: "queues", name: q.Name}, func(ctx context.Context) error {
		return sc.updateQueueStatus(ctx, q)
	})
}

// updateQueueStatus writes q's status.allocated, re-reading the queue on a conflict so that
// the queue controller's status.state is kept.
func (sc *SchedulerCache) updateQueueStatus(ctx context.Context, q *schedulingv1beta1.Queue) error {
	client := sc.vc.SchedulingV1beta1().Queues()
	allocated := q.Status.Allocated
	err := updateRefreshingOnConflict(q,
		func(q *schedulingv1beta1.Queue) error {
			_, err := client.UpdateStatus(ctx, q, metav1.UpdateOptions{})
			return err
		},
		func() (*schedulingv1beta1.Queue, error) { return client.Get(ctx, q.Name, metav1.GetOptions{}) },
		func(latest *schedulingv1beta1.Queue) { latest.Status.Allocated = allocated })
	if err != nil {
		return fmt.Errorf("update status.allocated of queue %s: %w", q.Name, err)
	}
	return nil
}

// ReportQueueProblems puts a Warning Event on each queue out of the queue hierarchy and logs
// it, once per problem, after the grace period that lets a parent created with its children
// reach the informer.
func (sc *SchedulerCache) ReportQueueProblems(problems []queuetree.Problem) {
	current := make([]danglingReference, len(problems))
	for i, p := range problems {
		current[i] = danglingReference{
			key:     "queue/" + string(p.Queue.Queue.UID) + "/" + p.Reason + "/" + p.Message,
			object:  p.Queue.Queue,
			kind:    "queue",
			ref:     klog.KObj(p.Queue.Queue),
			reason:  p.Reason,
			missing: p.Message,
			message: p.Message + "; the queue's jobs are not scheduled until its spec.parent chain reaches the root queue",
		}
	}
	sc.mu.Lock()
	report := sc.queueProblems.due(current, sc.clock.Now())
	sc.mu.Unlock()
	for _, r := range report {
		r.report(sc.recorder)
	}
}

// sameAmounts compares two resource lists, an absent name counting as zero.
func sameAmounts(a, b corev1.ResourceList) bool {
	for name, qa := range a {
		qb := b[name]
		if qa.Cmp(qb) != 0 {
			return false
		}
	}
	for name, qb := range b {
		if _, ok := a[name]; !ok && !qb.IsZero() {
			return false
		}
	}
	return true
}
