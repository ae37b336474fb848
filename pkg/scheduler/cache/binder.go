package cache

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Bind accepts a committed placement: the cache's copy of the task becomes Binding
// on the node at once, so the next snapshot already counts it there, and a bind worker sends
// the Binding. It refuses a task the cache no longer holds as Pending, a node it does not
// know, and a node whose idle resources cannot take the task.
func (sc *SchedulerCache) Bind(task *api.TaskInfo) error {
	defer sc.changed()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	cur := sc.tasks[task.UID]
	if cur == nil {
		return fmt.Errorf("bind pod %s to %s: the pod is no longer in the cache", task.Key(), task.NodeName)
	}
	if cur.Status != api.Pending {
		return fmt.Errorf("bind pod %s to %s: the pod is %s in the cache, not Pending", task.Key(), task.NodeName, cur.Status)
	}
	node := sc.nodes[task.NodeName]
	if node == nil || node.Node == nil {
		return fmt.Errorf("bind pod %s to %s: the node is not in the cache", task.Key(), task.NodeName)
	}
	if !cur.InitResreq.LessEqual(node.Idle, api.MissingAsZero) {
		return fmt.Errorf("bind pod %s to %s: the node's idle resources cannot take it: insufficient %v",
			task.Key(), task.NodeName, cur.InitResreq.Exceeding(node.Idle, api.MissingAsZero))
	}
	sc.startBinding(cur, node, task)
	sc.binds.Add(refOf(cur))
	return nil
}

// processNextBind sends one Binding; false once the cache is shut down. A task with a step
// that may wait long (api.WaitingStep) is bound on a goroutine of its own, the worker going
// on to the next pod: the queue holds the task (a later Bind of it waits) until it is done,
// and Stop's drain waits for it as for the workers' binds.
func (sc *SchedulerCache) processNextBind(ctx context.Context) bool {
	ref, shutdown := sc.binds.Get()
	if shutdown {
		return false
	}
	sc.mu.Lock()
	t := sc.tasks[ref.UID]
	handingBack := sc.handingBack.Load()
	if handingBack || t == nil || t.Status != api.Binding {
		if handingBack {
			// Stop's time is up: the Binding is not sent, nor are its steps run.
			sc.handedBack.Add(1)
			if t != nil {
				unreserveSteps(t)
			}
		}
		// Otherwise the pod was deleted, or bound elsewhere, since Bind accepted it; the
		// cache gave back what its steps reserved then (removeTask).
		sc.mu.Unlock()
		sc.binds.Done(ref)
		return true
	}
	pod, node, steps := t.Pod, t.NodeName, t.PreBind
	// The bind owns the steps now: what they reserved is given back by their PreBind or its
	// undo, not by the cache.
	t.PreBind = nil
	binding := newBinding(t)
	sc.mu.Unlock()

	bind := func() {
		defer sc.binds.Done(ref)
		sc.bind(ctx, ref, pod, node, steps, binding)
	}
	if slices.ContainsFunc(steps, func(s api.PreBindStep) bool { _, waits := s.(api.WaitingStep); return waits }) {
		go bind()
	} else {
		bind()
	}
	return true
}

// bind runs the task's pre-bind steps, then sends its Binding; a failure undoes the steps
// done and the placement.
func (sc *SchedulerCache) bind(ctx context.Context, ref podRef, pod *corev1.Pod, node string, steps []api.PreBindStep, binding *corev1.Binding) {
	var done []doneStep
	for _, step := range steps {
		undo, err := step.PreBind(ctx, &api.PreBindRequest{Client: sc.kube, Clock: sc.clock, Pod: pod, Node: node})
		if err != nil {
			klog.V(3).InfoS("Pre-bind step failed", "pod", klog.KObj(pod), "node", node, "step", step.Name())
			undoSteps(ctx, done, pod, node)
			sc.bindFailed(ref, pod, node, err)
			return
		}
		if undo != nil {
			done = append(done, doneStep{step.Name(), undo})
		}
	}
	if err := sc.kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		if ctx.Err() != nil {
			// Stop cut the request off: the API server may have bound the pod (with its
			// assignment) or not, so nothing here is undone or reported as failed.
			sc.bindsCutOff.Add(1)
			klog.InfoS("Bind cut off at shutdown: the pod is bound with its assignment or still Pending, as the next leader will see; no Scheduled Event is written for it",
				"pod", klog.KObj(pod), "node", node)
			return
		}
		undoSteps(ctx, done, pod, node)
		sc.bindFailed(ref, pod, node, err)
		return
	}
	klog.V(3).InfoS("Bound pod", "pod", klog.KObj(pod), "node", node)
	sc.recorder.Eventf(pod, corev1.EventTypeNormal, EventReasonScheduled, "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
	sc.metrics.PodBound(pod.CreationTimestamp.Time)
}

// unreserveSteps gives back what the task's placement reserved for its pre-bind steps
// (api.ReservingStep), which no bind will run: the task is dropped from the cache, or its bind
// from the queue. The steps are a cached task's only until a bind takes them
// (processNextBind), so each placement's reservation is given back once. Called under mu.
func unreserveSteps(t *api.TaskInfo) {
	for _, step := range t.PreBind {
		if r, ok := step.(api.ReservingStep); ok {
			r.Unreserve(context.Background())
		}
	}
	t.PreBind = nil
}

// doneStep is a pre-bind step that did its work for the bind under way, and its undo.
type doneStep struct {
	name string
	undo api.Undo
}

// undoSteps undoes the steps done for a bind that failed, the last done first.
func undoSteps(ctx context.Context, done []doneStep, pod *corev1.Pod, node string) {
	for _, d := range slices.Backward(done) {
		if err := d.undo(ctx); err != nil {
			klog.ErrorS(err, "Undoing a pre-bind step failed", "pod", klog.KObj(pod), "node", node, "step", d.name)
		}
	}
}

// newBinding is the request that binds the task's pod to its node. It carries the annotations
// the scheduler owns for this placement; the API server merges them into the pod together
// with spec.nodeName, so a pod is never bound without its device assignment.
func newBinding(t *api.TaskInfo) *corev1.Binding {
	return &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: t.Namespace, Name: t.Name, UID: types.UID(t.UID),
			Annotations: maps.Clone(t.BindAnnotations),
		},
		Target: corev1.ObjectReference{Kind: "Node", Name: t.NodeName},
	}
}

// bindFailed reports a refused bind on the pod, undoes the placement in the cache and
// re-reads the pod from the API server with backoff: the bind may have happened after all
// (a timeout), or the pod may have changed or gone.
func (sc *SchedulerCache) bindFailed(ref podRef, pod *corev1.Pod, node string, err error) {
	klog.ErrorS(err, "Bind failed; undoing the placement", "pod", klog.KObj(pod), "node", node)
	sc.metrics.BindFailed()
	sc.setPodUnscheduled(pod, api.ReasonSchedulerError, fmt.Sprintf("failed to bind to node %s: %v", node, err))

	sc.mu.Lock()
	sc.undoBinding(ref.UID, node)
	sc.mu.Unlock()
	sc.changed()
	sc.resyncs.AddRateLimited(ref)
}

// processNextResync re-reads one pod whose bind failed; false once the cache is shut down.
func (sc *SchedulerCache) processNextResync(ctx context.Context) bool {
	ref, shutdown := sc.resyncs.Get()
	if shutdown {
		return false
	}
	defer sc.resyncs.Done(ref)

	pod, err := sc.kube.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.ErrorS(err, "Re-reading pod after a failed bind; retrying", "pod", klog.KRef(ref.Namespace, ref.Name))
		sc.resyncs.AddRateLimited(ref)
		return true
	}
	sc.resyncs.Forget(ref)

	defer sc.changed()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	t := sc.tasks[ref.UID]
	switch {
	case t == nil:
		// Already deleted through the informer.
	case err != nil || pod.UID != types.UID(ref.UID):
		// Gone, perhaps replaced by a pod of the same name, which the informer will bring.
		sc.nodeChanged(sc.removeTask(t))
	case pod.ResourceVersion != t.Pod.ResourceVersion:
		sc.setPod(pod)
	}
	return true
}
