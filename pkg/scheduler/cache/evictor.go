package cache

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Eviction wire strings, as upstream writes them.
const (
	// EventReasonEvict is the reason of the Warning event on an evicted pod.
	EventReasonEvict = "Evict"
	// DisruptionReasonPreemption is the reason of the DisruptionTarget condition an evicted
	// pod gets before it is deleted (kube-scheduler's and upstream Volcano's).
	DisruptionReasonPreemption = corev1.PodReasonPreemptionByScheduler
)

// Evict accepts a committed eviction: the cache's copy of the task becomes Releasing at once,
// still on its node, so the next snapshot counts its resources as being released and no other
// preemptor takes it as a victim again; an evict worker then marks the pod and deletes it. It
// refuses a task the cache no longer holds as Running or Bound.
func (sc *SchedulerCache) Evict(task *api.TaskInfo, reason string) error {
	defer sc.changed()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	cur := sc.tasks[task.UID]
	if cur == nil {
		return fmt.Errorf("evict pod %s: the pod is no longer in the cache", task.Key())
	}
	if cur.Status != api.Running && cur.Status != api.Bound {
		return fmt.Errorf("evict pod %s: the pod is %s in the cache, not Running or Bound", task.Key(), cur.Status)
	}
	node := sc.nodes[cur.NodeName]
	if node == nil {
		return fmt.Errorf("evict pod %s: its node %q is not in the cache", task.Key(), cur.NodeName)
	}
	sc.startEviction(cur, node, reason)
	sc.evictions.Add(refOf(cur))
	return nil
}

// processNextEvict evicts one pod: a DisruptionTarget=True condition, a Warning Evict event,
// then a graceful delete (the pod's own termination grace period); false once the cache is
// shut down. A pod already gone is done; any other failure gives the task back the status its
// pod shows, for a later cycle to decide again.
func (sc *SchedulerCache) processNextEvict(ctx context.Context) bool {
	ref, shutdown := sc.evictions.Get()
	if shutdown {
		return false
	}
	defer sc.evictions.Done(ref)
	if sc.handingBack.Load() {
		sc.handedBack.Add(1)
		return true
	}

	sc.mu.Lock()
	t := sc.tasks[ref.UID]
	reason, evicting := sc.evicting[ref.UID]
	if t == nil || !evicting {
		sc.mu.Unlock()
		return true
	}
	pod := t.Pod
	sc.mu.Unlock()

	if err := sc.evict(ctx, pod, reason); err != nil && !apierrors.IsNotFound(err) {
		klog.ErrorS(err, "Eviction failed; the pod keeps its place", "pod", klog.KObj(pod))
		sc.mu.Lock()
		sc.undoEviction(ref.UID)
		sc.mu.Unlock()
		sc.changed()
		return true
	}
	klog.V(3).InfoS("Evicted pod", "pod", klog.KObj(pod), "reason", reason)
	return true
}

func (sc *SchedulerCache) evict(ctx context.Context, pod *corev1.Pod, reason string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: DisruptionReasonPreemption,
		Message: reason, LastTransitionTime: metav1.NewTime(sc.clock.Now()),
	}}}})
	if err != nil {
		return err
	}
	pods := sc.kube.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("mark pod %s/%s as a disruption target: %w", pod.Namespace, pod.Name, err)
	}
	sc.recorder.Eventf(pod, corev1.EventTypeWarning, EventReasonEvict, "Pod is evicted, because of %s", reason)
	uid := pod.UID
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		if apierrors.IsConflict(err) {
			return nil // replaced by a pod of the same name: this one is gone
		}
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
