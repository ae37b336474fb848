package api

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// TaskPriorityAnnotation overrides a pod's spec.priority as its task priority.
const TaskPriorityAnnotation = "volcano.sh/task-priority"

// TransactionContext is where a statement put a task. Discard keeps it as the task's
// LastTransaction, so that status reporting can still say "can possibly be assigned to <node>".
type TransactionContext struct {
	NodeName string
	Status   TaskStatus
}

// TaskInfo is one pod as the scheduler sees it.
type TaskInfo struct {
	UID       TaskID
	Job       JobID
	Name      string
	Namespace string
	// TaskRole is the VolcanoJob task name (annotation, else label volcano.sh/task-spec).
	TaskRole string

	// Resreq is what the running pod holds: its containers' requests, pod overhead and one "pods".
	// Resreq and InitResreq are computed once from the pod and never modified: every clone of
	// the task shares them (each cycle's snapshot clones every task, twice).
	Resreq *Resource
	// InitResreq is what the pod needs to start, init containers counted the kube-scheduler
	// way; node fit is checked against it.
	InitResreq *Resource

	NodeName        string
	Status          TaskStatus
	Priority        int32
	Preemptable     bool
	BestEffort      bool
	SchGated        bool
	LastTransaction *TransactionContext

	// BindAnnotations are the annotations the scheduler owns for this placement (device
	// assignments). They travel inside the Binding object, so that a pod is never bound without
	// them nor annotated without being bound.
	BindAnnotations map[string]string
	// PreBind are the steps the binder runs, in order, before it sends the Binding: the
	// plugins' work against the API server that this placement needs (PreBindStep). Shared
	// between clones: use AddPreBind and RemovePreBind, which never change a slice in place.
	PreBind []PreBindStep

	Pod *corev1.Pod
}

// NewTaskInfo builds the task for a pod. Its job is the PodGroup named by the annotation
// scheduling.k8s.io/group-name; a pod without it has an empty Job and is never scheduled.
func NewTaskInfo(pod *corev1.Pod) *TaskInfo {
	initReq := NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	req := NewResource(runningRequests(pod))
	bestEffort := initReq.IsEmpty()
	initReq.AddScalar(corev1.ResourcePods, 1000)
	req.AddScalar(corev1.ResourcePods, 1000)
	if maps.Equal(initReq.ScalarResources, req.ScalarResources) && initReq.MilliCPU == req.MilliCPU &&
		initReq.Memory == req.Memory && initReq.MaxTaskNum == req.MaxTaskNum {
		// Most pods (no init container larger than the rest): one copy serves both, which
		// halves what the cache holds for requests (they are never modified).
		initReq = req
	}
	t := &TaskInfo{
		UID:         TaskID(pod.UID),
		Name:        pod.Name,
		Namespace:   pod.Namespace,
		TaskRole:    annotationOrLabel(&pod.ObjectMeta, batchv1alpha1.TaskSpecKey),
		Resreq:      req,
		InitResreq:  initReq,
		NodeName:    pod.Spec.NodeName,
		Status:      PodTaskStatus(pod),
		Priority:    taskPriority(pod),
		Preemptable: annotationOrLabel(&pod.ObjectMeta, schedulingv1beta1.PodPreemptable) != "false",
		BestEffort:  bestEffort,
		SchGated:    len(pod.Spec.SchedulingGates) > 0,
		Pod:         pod,
	}
	if g := pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]; g != "" {
		t.Job = NewJobID(pod.Namespace, g)
	}
	return t
}

// Clone copies the task's scheduler state; the pod object and the requests are shared and
// never modified.
func (t *TaskInfo) Clone() *TaskInfo {
	c := *t
	if t.LastTransaction != nil {
		lt := *t.LastTransaction
		c.LastTransaction = &lt
	}
	if t.BindAnnotations != nil {
		c.BindAnnotations = make(map[string]string, len(t.BindAnnotations))
		for k, v := range t.BindAnnotations {
			c.BindAnnotations[k] = v
		}
	}
	return &c
}

// sameAs: c holds what t holds, as Clone copies it (see JobInfo.Refresh).
func (t *TaskInfo) sameAs(c *TaskInfo) bool {
	return c.UID == t.UID && c.Job == t.Job && c.Name == t.Name && c.Namespace == t.Namespace &&
		c.TaskRole == t.TaskRole && c.Resreq == t.Resreq && c.InitResreq == t.InitResreq &&
		c.NodeName == t.NodeName && c.Status == t.Status && c.Priority == t.Priority &&
		c.Preemptable == t.Preemptable && c.BestEffort == t.BestEffort && c.SchGated == t.SchGated &&
		(c.LastTransaction == nil) == (t.LastTransaction == nil) &&
		(c.LastTransaction == nil || *c.LastTransaction == *t.LastTransaction) &&
		(c.BindAnnotations == nil) == (t.BindAnnotations == nil) && maps.Equal(c.BindAnnotations, t.BindAnnotations) &&
		slices.Equal(c.PreBind, t.PreBind) && c.Pod == t.Pod
}

// Key is "<namespace>/<name>", the form logs and messages use.
func (t *TaskInfo) Key() string { return t.Namespace + "/" + t.Name }

// PodTaskStatus maps a pod's phase onto a task status.
func PodTaskStatus(pod *corev1.Pod) TaskStatus {
	switch pod.Status.Phase {
	case corev1.PodRunning:
		if pod.DeletionTimestamp != nil {
			return Releasing
		}
		return Running
	case corev1.PodPending:
		if pod.DeletionTimestamp != nil {
			return Releasing
		}
		if pod.Spec.NodeName == "" {
			return Pending
		}
		return Bound
	case corev1.PodSucceeded:
		return Succeeded
	case corev1.PodFailed:
		return Failed
	case "":
		// A pod the API server has not yet given a phase is waiting like a Pending one.
		if pod.Spec.NodeName == "" {
			return Pending
		}
		return Bound
	}
	return Unknown
}

// runningRequests is what a started pod holds: regular and restartable init (sidecar)
// containers, plus overhead. Plain init containers have finished by then.
func runningRequests(pod *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	add := func(list corev1.ResourceList) {
		for name, q := range list {
			if cur, ok := sum[name]; ok {
				cur.Add(q)
				sum[name] = cur
			} else {
				sum[name] = q.DeepCopy()
			}
		}
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].Resources.Requests)
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c.Resources.Requests)
		}
	}
	add(pod.Spec.Overhead)
	return sum
}

func taskPriority(pod *corev1.Pod) int32 {
	if v, ok := pod.Annotations[TaskPriorityAnnotation]; ok {
		if p, err := strconv.ParseInt(v, 10, 32); err == nil {
			return int32(p)
		}
	}
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// annotationOrLabel is the object's annotation key, or its label key where it has no such
// annotation (pods and PodGroups are read alike).
func annotationOrLabel(meta *metav1.ObjectMeta, key string) string {
	if v, ok := meta.Annotations[key]; ok {
		return v
	}
	return meta.Labels[key]
}

// CompareTasksByName is the default task order: the index after the last "-" of a
// VolcanoJob pod name ("job-task-3"), then the older pod, then the smaller UID.
func CompareTasksByName(l, r *TaskInfo) bool {
	li, lok := podNameIndex(l.Name)
	ri, rok := podNameIndex(r.Name)
	if lok && rok && li != ri {
		return li < ri
	}
	lt, rt := l.Pod.CreationTimestamp, r.Pod.CreationTimestamp
	if !lt.Equal(&rt) {
		return lt.Before(&rt)
	}
	return l.UID < r.UID
}

// podNameIndex parses the index of "<job>-<task>-<index>".
func podNameIndex(name string) (int, bool) {
	if strings.Count(name, "-") < 2 {
		return 0, false
	}
	i, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return i, err == nil
}
