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
	if t := sc.tasks[api.TaskID(pod.UID)]; t != nil {
		sc.nodeChanged(sc.removeTask(t))
		if t.Status == api.Releasing {
			sc.noteReleased()
		}
	}
	delete(sc.evicting, api.TaskID(pod.UID))
	sc.mu.Unlock()
	sc.conditions.forget(pod.UID)
}

// setPod adds or replaces the pod's task. Called under mu.
//
// A pod whose bind is in flight still shows no node: its task keeps the Binding placement
// until the informer shows the result, or a failed bind undoes it. Otherwise an unrelated
// update (a label, a condition) would make the pod look Pending and a session would place it
// a second time. Likewise a pod being evicted stays Releasing until the informer shows it
// deleted, so that the condition written before the delete does not make it a victim again.
func (sc *SchedulerCache) setPod(pod *corev1.Pod) {
	t := api.NewTaskInfo(pod)
	if _, evicting := sc.evicting[t.UID]; evicting && api.AllocatedStatus(t.Status) {
		t.Status = api.Releasing
	}
	var oldNode string
	old := sc.tasks[t.UID]
	if old != nil {
		if old.Status == api.Binding && t.Status == api.Pending {
			// The bind goes on: its placement, and the steps no bind has taken yet, move over.
			t.Status, t.NodeName, t.BindAnnotations, t.PreBind = api.Binding, old.NodeName, old.BindAnnotations, old.PreBind
			old.PreBind = nil
		}
		oldNode = sc.removeTask(old)
		if old.Status == api.Releasing && terminated(t.Status) {
			sc.noteReleased()
		}
	}
	newNode := sc.addTask(t)
	sc.nodeChanged(newNode)
	if oldNode != newNode {
		sc.nodeChanged(oldNode)
	}
	if old == nil && t.Status == api.Pending {
		sc.noteArrival(sc.jobs[t.Job])
	}
}

// addTask puts a task into the indexes, its job and (unless it has terminated) its node. It
// returns the node it was put on, or "". Called under mu.
func (sc *SchedulerCache) addTask(t *api.TaskInfo) string {
	sc.tasks[t.UID] = t
	if t.Job != "" {
		sc.jobEntry(t.Job).AddTask(t)
	}
	if t.NodeName == "" || terminated(t.Status) {
		return ""
	}
	sc.nodeEntry(t.NodeName).AddTask(t)
	return t.NodeName
}

// removeTask undoes addTask, dropping a job or node entry nothing holds any more, and gives
// back what the task's placement reserved for pre-bind steps no bind has taken (a pod deleted,
// or bound by another scheduler, while its Binding waited). It returns the node the task was
// taken off, or "". Called under mu.
func (sc *SchedulerCache) removeTask(t *api.TaskInfo) string {
	delete(sc.tasks, t.UID)
	unreserveSteps(t)
	if job := sc.jobs[t.Job]; job != nil {
		job.DeleteTask(t)
		sc.dropJobIfUnused(job)
	}
	n := sc.nodes[t.NodeName]
	if n == nil {
		return ""
	}
	if _, on := n.Tasks[t.UID]; !on {
		return ""
	}
	n.RemoveTask(t)
	if n.Node == nil && len(n.Tasks) == 0 {
		delete(sc.nodes, n.Name)
	}
	return n.Name
}

// noteArrival signals Arrivals when a pod or PodGroup that just arrived leaves its job with a
// PodGroup and at least its minimum of pods: a gang whose last pod came, a single pod, a
// PodGroup created after its pods. Called under mu.
func (sc *SchedulerCache) noteArrival(job *api.JobInfo) {
	if job == nil || job.PodGroup == nil || job.ValidTaskNum() < job.MinAvailable {
		return
	}
	sc.signalArrival()
}

// noteReleased signals Arrivals when a releasing pod (a victim of preempt or reclaim, or one
// being deleted) has stopped or is gone: a preemptor pipelined onto its room can now be
// bound, and would otherwise wait up to a period. Called under mu.
func (sc *SchedulerCache) noteReleased() { sc.signalArrival() }

func (sc *SchedulerCache) signalArrival() {
	select {
	case sc.arrivals <- struct{}{}:
	default: // one signal already waits
	}
}

// Arrivals reports newly schedulable work (see noteArrival and noteReleased), for
// Scheduler.WakeOn.
func (sc *SchedulerCache) Arrivals() <-chan struct{} { return sc.arrivals }

// terminated tasks no longer hold their node.
func terminated(s api.TaskStatus) bool { return s == api.Succeeded || s == api.Failed }

// jobEntry returns the job, creating an empty one (no PodGroup yet). Called under mu.
func (sc *SchedulerCache) jobEntry(id api.JobID) *api.JobInfo {
	job := sc.jobs[id]
	if job == nil {
		job = api.NewJobInfo(id)
		sc.jobs[id] = job
	}
	return job
}

// dropJobIfUnused forgets a job that has neither a PodGroup nor pods. Called under mu.
func (sc *SchedulerCache) dropJobIfUnused(job *api.JobInfo) {
	if job.PodGroup == nil && len(job.Tasks) == 0 {
		delete(sc.jobs, job.UID)
	}
}

// nodeEntry returns the node, creating one known only from its pods (not scheduled onto
// until its object arrives). Called under mu.
func (sc *SchedulerCache) nodeEntry(name string) *api.NodeInfo {
	n := sc.nodes[name]
	if n == nil {
		n = api.NewNodeInfo(nil)
		n.Name = name
		sc.nodes[name] = n
	}
	return n
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
	sc.nodeEntry(node.Name).SetNode(node)
	sc.nodeChanged(node.Name)
	for _, d := range sc.derivers {
		sc.claim(d, node)
	}
}

// onNodeDelete forgets the node object. Pods still on it keep their accounting, so that
// the node is right if it comes back before they go.
func (sc *SchedulerCache) onNodeDelete(obj any) {
	node, ok := unwrap[*corev1.Node](obj)
	if !ok {
		klog.ErrorS(nil, "Node delete event without a node", "object", fmt.Sprintf("%T", obj))
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, nodes := range sc.claimed {
		delete(nodes, node.Name)
	}
	n := sc.nodes[node.Name]
	if n == nil {
		return
	}
	if len(n.Tasks) == 0 {
		delete(sc.nodes, node.Name)
	} else {
		// Derived device state is rebuilt when the node object comes back.
		n.Node, n.Devices = nil, nil
	}
}

func (sc *SchedulerCache) onPodGroupSet(obj any) {
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	job := sc.jobEntry(api.NewJobID(pg.Namespace, pg.Name))
	first := job.PodGroup == nil
	job.SetPodGroup(pg, sc.defaultQueue)
	if first {
		sc.noteArrival(job)
	}
}

// onPodGroupDelete leaves the job's pods in the cache (they still count on their nodes) but
// takes the job out of every snapshot.
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
	if job := sc.jobs[api.NewJobID(pg.Namespace, pg.Name)]; job != nil {
		job.PodGroup = nil
		sc.dropJobIfUnused(job)
	}
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
