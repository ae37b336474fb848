package cache

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// addEventHandlers registers the cache's handlers on the informers it needs.
func (sc *SchedulerCache) addEventHandlers(priorityClasses bool) error {
	pods := sc.kubeInformers.Core().V1().Pods().Informer()
	nodes := sc.kubeInformers.Core().V1().Nodes().Informer()
	podGroups := sc.vcInformers.Scheduling().V1beta1().PodGroups().Informer()
	queues := sc.vcInformers.Scheduling().V1beta1().Queues().Informer()
	trim := newTrimmer()
	for _, inf := range []toolscache.SharedIndexInformer{pods, nodes, podGroups, queues} {
		if err := inf.SetTransform(trim.trim); err != nil {
			return fmt.Errorf("informer transform: %w", err)
		}
	}
	handlers := []watch{
		{"pods", pods, toolscache.FilteringResourceEventHandler{
			FilterFunc: sc.podWanted,
			Handler: toolscache.ResourceEventHandlerFuncs{
				AddFunc: sc.onPodAdd, UpdateFunc: sc.onPodUpdate, DeleteFunc: sc.onPodDelete,
			},
		}},
		{"nodes", nodes, toolscache.FilteringResourceEventHandler{
			FilterFunc: sc.nodeWanted,
			Handler: toolscache.ResourceEventHandlerFuncs{
				AddFunc: sc.onNodeSet, UpdateFunc: func(_, n any) { sc.onNodeSet(n) }, DeleteFunc: sc.onNodeDelete,
			},
		}},
		{"podgroups", podGroups, toolscache.ResourceEventHandlerFuncs{
			AddFunc: sc.onPodGroupSet, UpdateFunc: func(_, pg any) { sc.onPodGroupSet(pg) }, DeleteFunc: sc.onPodGroupDelete,
		}},
		{"queues", queues, toolscache.ResourceEventHandlerFuncs{
			AddFunc: sc.onQueueSet, UpdateFunc: func(_, q any) { sc.onQueueSet(q) }, DeleteFunc: sc.onQueueDelete,
		}},
	}
	if priorityClasses {
		handlers = append(handlers, watch{"priorityclasses", sc.kubeInformers.Scheduling().V1().PriorityClasses().Informer(), toolscache.ResourceEventHandlerFuncs{
			AddFunc: sc.onPriorityClassSet, UpdateFunc: func(_, pc any) { sc.onPriorityClassSet(pc) }, DeleteFunc: sc.onPriorityClassDelete,
		}})
	}
	for _, h := range handlers {
		handler := h.handler
		if f, ok := handler.(toolscache.FilteringResourceEventHandler); ok {
			f.Handler = counted{f.Handler, sc.changed} // count only what the cache takes
			handler = f
		} else {
			handler = counted{handler, sc.changed}
		}
		reg, err := h.informer.AddEventHandler(handler)
		if err != nil {
			return fmt.Errorf("watch %s: %w", h.what, err)
		}
		sc.synced = append(sc.synced, reg.HasSynced)
	}
	return nil
}

// watch is one informer and the cache's handler for it.
type watch struct {
	what     string
	informer toolscache.SharedIndexInformer
	handler  toolscache.ResourceEventHandler
}

// counted passes events on to the cache's handler and counts each one once it is applied.
type counted struct {
	handler toolscache.ResourceEventHandler
	changed func()
}

func (c counted) OnAdd(obj any, initial bool) { c.handler.OnAdd(obj, initial); c.changed() }
func (c counted) OnDelete(obj any)            { c.handler.OnDelete(obj); c.changed() }

// OnUpdate applies every update (the cache keeps each object's latest resourceVersion) but
// counts only those that change the object beyond its resourceVersion once trimmed: a node's
// status heartbeat (about 17 a second at 5,000 nodes), a pod's readiness or address, or a
// resync leave everything the scheduler reads as it was, and a cycle over them would decide
// what the last one did, so the next one is skipped (scheduler.RunOnce).
func (c counted) OnUpdate(old, cur any) {
	c.handler.OnUpdate(old, cur)
	if !sameBeyondVersion(old, cur) {
		c.changed()
	}
}

// sameBeyondVersion reports whether two versions of an object differ in nothing but their
// resourceVersion.
func sameBeyondVersion(old, cur any) bool {
	if old == cur {
		return true
	}
	o, ok := old.(metav1.Object)
	v := reflect.ValueOf(cur)
	if !ok || v.Kind() != reflect.Pointer || v.IsNil() || reflect.TypeOf(old) != v.Type() {
		return false
	}
	// A shallow copy of cur with old's version: DeepEqual only reads what the two share.
	c := reflect.New(v.Type().Elem())
	c.Elem().Set(v.Elem())
	m, ok := c.Interface().(metav1.Object)
	if !ok {
		return false
	}
	m.SetResourceVersion(o.GetResourceVersion())
	return equality.Semantic.DeepEqual(old, c.Interface())
}

// unwrap returns the object of a delete event, which may be a tombstone.
func unwrap[T any](obj any) (T, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// podWanted: pods of this scheduler, and pods of any other that are on a node, whose usage
// counts there.
func (sc *SchedulerCache) podWanted(obj any) bool {
	pod, ok := unwrap[*corev1.Pod](obj)
	return ok && (sc.schedulerNames.Has(pod.Spec.SchedulerName) || pod.Spec.NodeName != "")
}

func (sc *SchedulerCache) onPodAdd(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.setPod(pod)
}

func (sc *SchedulerCache) onPodUpdate(_, obj any) { sc.onPodAdd(obj) }

func (sc *SchedulerCache) onPodDelete(obj any) {
	pod, ok := unwrap[*corev1.Pod](obj)
	if !ok {
		klog.ErrorS(nil, "Pod delete event without a pod", "object", fmt.Sprintf("%T", obj))
		return
	}
	sc.mu.Lock()
	sc.removePod(pod)
	sc.mu.Unlock()
	sc.conditions.forget(pod.UID)
}

// nodeWanted: the node matches --node-selector.
func (sc *SchedulerCache) nodeWanted(obj any) bool {
	node, ok := unwrap[*corev1.Node](obj)
	return ok && sc.nodeSelector.matches(node.Labels)
}

func (sc *SchedulerCache) onNodeSet(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.setNode(node)
}

func (sc *SchedulerCache) onNodeDelete(obj any) {
	node, ok := unwrap[*corev1.Node](obj)
	if !ok {
		klog.ErrorS(nil, "Node delete event without a node", "object", fmt.Sprintf("%T", obj))
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.removeNode(node)
}

func (sc *SchedulerCache) onPodGroupSet(obj any) {
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.setPodGroup(pg)
}

// onPodGroupDelete also drops what the cache remembers having sent about the PodGroup: it is
// kept per UID, which no later PodGroup has.
func (sc *SchedulerCache) onPodGroupDelete(obj any) {
	pg, ok := unwrap[*schedulingv1beta1.PodGroup](obj)
	if !ok {
		klog.ErrorS(nil, "PodGroup delete event without a PodGroup", "object", fmt.Sprintf("%T", obj))
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.jobEvents.forget(pg.UID)
	sc.podGroupStatuses.forget(pg.UID)
	sc.settings.forget(pg.UID)
	sc.removePodGroup(pg)
}

func (sc *SchedulerCache) onQueueSet(obj any) {
	q, ok := obj.(*schedulingv1beta1.Queue)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.queues[api.QueueID(q.Name)] = api.NewQueueInfo(q)
}

func (sc *SchedulerCache) onQueueDelete(obj any) {
	q, ok := unwrap[*schedulingv1beta1.Queue](obj)
	if !ok {
		klog.ErrorS(nil, "Queue delete event without a Queue", "object", fmt.Sprintf("%T", obj))
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	delete(sc.queues, api.QueueID(q.Name))
}

func (sc *SchedulerCache) onPriorityClassSet(obj any) {
	pc, ok := obj.(*schedulingv1.PriorityClass)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.priorityClasses[pc.Name] = pc
}

func (sc *SchedulerCache) onPriorityClassDelete(obj any) {
	pc, ok := unwrap[*schedulingv1.PriorityClass](obj)
	if !ok {
		klog.ErrorS(nil, "PriorityClass delete event without a PriorityClass", "object", fmt.Sprintf("%T", obj))
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	delete(sc.priorityClasses, pc.Name)
}
