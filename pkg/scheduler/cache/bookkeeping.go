package cache

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

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

// removePod drops the deleted pod's task, and its eviction if one was under way. Called under
// mu.
func (sc *SchedulerCache) removePod(pod *corev1.Pod) {
	if t := sc.tasks[api.TaskID(pod.UID)]; t != nil {
		sc.nodeChanged(sc.removeTask(t))
		if t.Status == api.Releasing {
			sc.noteReleased()
		}
	}
	delete(sc.evicting, api.TaskID(pod.UID))
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

// setTaskStatus moves a cached task to a status, through its job's indexes. Called under mu.
func (sc *SchedulerCache) setTaskStatus(t *api.TaskInfo, status api.TaskStatus) {
	if job := sc.jobs[t.Job]; job != nil && job.Tasks[t.UID] == t {
		job.UpdateTaskStatus(t, status)
		return
	}
	t.Status = status
}

// startBinding makes the cached task t Binding on node, with the annotations and pre-bind
// steps of the placement the session committed, for Bind. Called under mu.
func (sc *SchedulerCache) startBinding(t *api.TaskInfo, node *api.NodeInfo, placement *api.TaskInfo) {
	sc.setTaskStatus(t, api.Binding)
	t.NodeName = node.Name
	t.BindAnnotations = maps.Clone(placement.BindAnnotations)
	t.PreBind = placement.PreBind
	node.AddTask(t)
	sc.nodeChanged(node.Name)
}

// undoBinding makes the task Pending again after its bind to node failed, unless the cache no
// longer holds it as Binding there (the informer showed it deleted or bound). Called under mu.
func (sc *SchedulerCache) undoBinding(uid api.TaskID, node string) {
	if t := sc.tasks[uid]; t != nil && t.Status == api.Binding && t.NodeName == node {
		sc.nodes[node].RemoveTask(t)
		sc.setTaskStatus(t, api.Pending)
		t.NodeName, t.BindAnnotations = "", nil
		sc.nodeChanged(node)
	}
}

// startEviction makes the cached task t Releasing on its node, for Evict. Called under mu.
func (sc *SchedulerCache) startEviction(t *api.TaskInfo, node *api.NodeInfo, reason string) {
	sc.setTaskStatus(t, api.Releasing)
	node.AddTask(t)
	sc.nodeChanged(node.Name)
	sc.evicting[t.UID] = reason
}

// undoEviction ends the task's eviction, which failed: the task gets back the status its pod
// shows. Called under mu.
func (sc *SchedulerCache) undoEviction(uid api.TaskID) {
	delete(sc.evicting, uid)
	if t := sc.tasks[uid]; t != nil {
		sc.setPod(t.Pod)
	}
}

// terminated tasks no longer hold their node.
func terminated(s api.TaskStatus) bool { return s == api.Succeeded || s == api.Failed }

// setPodGroup gives the PodGroup's job its PodGroup, creating the job if none of its pods
// came yet. Called under mu.
func (sc *SchedulerCache) setPodGroup(pg *schedulingv1beta1.PodGroup) {
	job := sc.jobEntry(api.NewJobID(pg.Namespace, pg.Name))
	first := job.PodGroup == nil
	job.SetPodGroup(pg, sc.defaultQueue)
	if first {
		sc.noteArrival(job)
	}
}

// removePodGroup leaves the job's pods in the cache (they still count on their nodes) but
// takes the job out of every snapshot. Called under mu.
func (sc *SchedulerCache) removePodGroup(pg *schedulingv1beta1.PodGroup) {
	if job := sc.jobs[api.NewJobID(pg.Namespace, pg.Name)]; job != nil {
		job.PodGroup = nil
		sc.dropJobIfUnused(job)
	}
}

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

// setNode stores the node object and has its device state derived and claimed again. Called
// under mu.
func (sc *SchedulerCache) setNode(node *corev1.Node) {
	sc.nodeEntry(node.Name).SetNode(node)
	sc.nodeChanged(node.Name)
	for _, d := range sc.derivers {
		sc.claim(d, node)
	}
}

// removeNode forgets the node object. Pods still on it keep their accounting, so that the
// node is right if it comes back before they go. Called under mu.
func (sc *SchedulerCache) removeNode(node *corev1.Node) {
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
