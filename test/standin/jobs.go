package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"
	batchlisters "volcano.sh/apis/pkg/client/listers/batch/v1alpha1"
	schedulinglisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// defaultMaxRetry is the retry budget upstream's admission webhook gives a job and each task.
const defaultMaxRetry = 3

var jobKind = batch.SchemeGroupVersion.WithKind("Job")

// Job annotations and labels that every pod of the job carries.
var (
	copiedJobAnnotations = []string{
		scheduling.PodPreemptable, scheduling.CooldownTime, scheduling.RevocableZone,
		scheduling.JDBMinAvailable, scheduling.JDBMaxUnavailable,
	}
	copiedJobLabels = []string{scheduling.PodPreemptable, scheduling.CooldownTime}
)

// jobController runs VolcanoJobs: it gives each job a PodGroup, creates the job's
// pods once the scheduler has admitted that PodGroup, and reports the pods in the job status.
// Restart and failure policies, plugins (svc, ssh, env), volumes and retries are not
// implemented: the test-bed only needs jobs whose pods run until they are deleted or finish.
type jobController struct {
	*loop
	kube      kubernetes.Interface
	vc        versioned.Interface
	jobs      batchlisters.JobLister
	podGroups schedulinglisters.PodGroupLister
	pods      corelisters.PodLister
	// schedulerName is what a job without spec.schedulerName gets, as upstream's webhook
	// gives it the first scheduler name.
	schedulerName string
}

func newJobController(kube kubernetes.Interface, vc versioned.Interface, jobs batchlisters.JobLister,
	podGroups schedulinglisters.PodGroupLister, pods corelisters.PodLister, schedulerName string) *jobController {
	c := &jobController{kube: kube, vc: vc, jobs: jobs, podGroups: podGroups, pods: pods, schedulerName: schedulerName}
	c.loop = newLoop("job", c.sync)
	return c
}

// watch queues a job when it changes and when its PodGroup or one of its pods changes.
func (c *jobController) watch(jobs, podGroups, pods cache.SharedIndexInformer) error {
	owned := func(obj any) { c.enqueueOwner(obj, batch.GroupName, jobKind.Kind) }
	ownedHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    owned,
		UpdateFunc: func(_, obj any) { owned(obj) },
		DeleteFunc: owned,
	}
	_, err := jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	if err != nil {
		return err
	}
	if _, err := podGroups.AddEventHandler(ownedHandler); err != nil {
		return err
	}
	_, err = pods.AddEventHandler(ownedHandler)
	return err
}

func (c *jobController) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	job, err := c.jobs.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // the garbage collector removes its PodGroup and pods
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	if job.DeletionTimestamp != nil {
		return nil
	}
	if defaulted, changed := withAdmissionDefaults(job, c.schedulerName); changed {
		job, err = c.vc.BatchV1alpha1().Jobs(namespace).Update(ctx, defaulted, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("write admission defaults of job %s: %w", key, err)
		}
		klog.V(2).InfoS("Applied admission defaults", "job", klog.KObj(job))
	}
	pg, err := c.syncPodGroup(ctx, job)
	if err != nil {
		return err
	}
	pods, err := c.ownedPods(job)
	if err != nil {
		return err
	}
	if admitted(pg) && !finished(job.Status.State.Phase) {
		if err := c.createMissingPods(ctx, job, pods); err != nil {
			return err
		}
	}
	status := jobStatus(job, pods)
	if equality.Semantic.DeepEqual(status, job.Status) {
		return nil
	}
	updated := job.DeepCopy()
	updated.Status = status
	if _, err := c.vc.BatchV1alpha1().Jobs(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of job %s: %w", key, err)
	}
	return nil
}

// withAdmissionDefaults returns the job as upstream's mutating webhook would have stored it,
// and whether that differs from job. There is no webhook in the test-bed, so the controller
// writes these defaults itself before anything else reads the spec.
func withAdmissionDefaults(job *batch.Job, schedulerName string) (*batch.Job, bool) {
	out := job.DeepCopy()
	spec := &out.Spec
	if spec.Queue == "" {
		spec.Queue = scheduling.DefaultQueue
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = schedulerName
	}
	if spec.MaxRetry == 0 {
		spec.MaxRetry = defaultMaxRetry
	}
	var minAvailable int32
	for i := range spec.Tasks {
		task := &spec.Tasks[i]
		if task.Name == "" {
			task.Name = batch.DefaultTaskSpec + strconv.Itoa(i)
		}
		if task.MinAvailable == nil {
			task.MinAvailable = ptr.To(task.Replicas)
		}
		if task.MaxRetry == 0 {
			task.MaxRetry = defaultMaxRetry
		}
		minAvailable += *task.MinAvailable
	}
	if spec.MinAvailable == 0 {
		spec.MinAvailable = minAvailable
	}
	return out, !equality.Semantic.DeepEqual(out.Spec, job.Spec)
}

// jobPodGroupName is <job>-<job uid>: a job deleted and re-created under the same name gets a
// new PodGroup rather than its predecessor's, which may still be being garbage collected.
func jobPodGroupName(job *batch.Job) string {
	return job.Name + "-" + string(job.UID)
}

// syncPodGroup creates the job's PodGroup, or brings the fields the job controls back in line
// with the job, and returns it.
func (c *jobController) syncPodGroup(ctx context.Context, job *batch.Job) (*scheduling.PodGroup, error) {
	want := jobPodGroup(job)
	client := c.vc.SchedulingV1beta1().PodGroups(job.Namespace)
	have, err := c.podGroups.PodGroups(job.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		created, err := client.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return want, nil // created by an earlier sync that the lister has not seen yet
		}
		if err != nil {
			return nil, fmt.Errorf("create podgroup %s for job %s: %w", want.Name, klog.KObj(job), err)
		}
		klog.V(2).InfoS("Created PodGroup for job", "podGroup", klog.KObj(created), "job", klog.KObj(job))
		return created, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get podgroup %s for job %s: %w", want.Name, klog.KObj(job), err)
	}
	if have.Spec.MinMember == want.Spec.MinMember &&
		equality.Semantic.DeepEqual(have.Spec.MinTaskMember, want.Spec.MinTaskMember) &&
		equality.Semantic.DeepEqual(have.Spec.MinResources, want.Spec.MinResources) &&
		have.Spec.PriorityClassName == want.Spec.PriorityClassName {
		return have, nil
	}
	updated := have.DeepCopy()
	updated.Spec.MinMember = want.Spec.MinMember
	updated.Spec.MinTaskMember = want.Spec.MinTaskMember
	updated.Spec.MinResources = want.Spec.MinResources
	updated.Spec.PriorityClassName = want.Spec.PriorityClassName
	updated, err = client.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update podgroup %s for job %s: %w", want.Name, klog.KObj(job), err)
	}
	return updated, nil
}

// jobPodGroup is the PodGroup a defaulted job should have. Its status is left empty: the
// scheduler moves it to Pending and then Inqueue.
func jobPodGroup(job *batch.Job) *scheduling.PodGroup {
	minTaskMember := make(map[string]int32, len(job.Spec.Tasks))
	for _, task := range job.Spec.Tasks {
		minTaskMember[task.Name] = taskMinAvailable(task)
	}
	pg := &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobPodGroupName(job),
			Namespace:       job.Namespace,
			Labels:          maps.Clone(job.Labels),
			Annotations:     maps.Clone(job.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Spec: scheduling.PodGroupSpec{
			MinMember:         job.Spec.MinAvailable,
			MinTaskMember:     minTaskMember,
			Queue:             job.Spec.Queue,
			PriorityClassName: job.Spec.PriorityClassName,
			MinResources:      jobMinResources(job),
		},
	}
	if nt := job.Spec.NetworkTopology; nt != nil {
		pg.Spec.NetworkTopology = &scheduling.NetworkTopologySpec{
			Mode:               scheduling.NetworkTopologyMode(nt.Mode),
			HighestTierAllowed: nt.HighestTierAllowed,
			HighestTierName:    nt.HighestTierName,
		}
	}
	return pg
}

// jobMinResources is the quota usage (minresources.PerPod) of the job's first minAvailable pods: each
// task's minAvailable pods first, then the tasks' remaining replicas, in task order. It is
// computed from the pod templates, so extended resources that a template sets only under
// limits are missing from it.
func jobMinResources(job *batch.Job) *corev1.ResourceList {
	total := corev1.ResourceList{}
	left := job.Spec.MinAvailable
	take := func(task batch.TaskSpec, n int32) {
		n = min(n, left)
		if n <= 0 {
			return
		}
		template := &corev1.Pod{ObjectMeta: task.Template.ObjectMeta, Spec: task.Template.Spec}
		minresources.AddScaled(total, minresources.PerPod(template), n)
		left -= n
	}
	for _, task := range job.Spec.Tasks {
		take(task, taskMinAvailable(task))
	}
	for _, task := range job.Spec.Tasks {
		take(task, task.Replicas-taskMinAvailable(task))
	}
	return &total
}

func taskMinAvailable(task batch.TaskSpec) int32 {
	if task.MinAvailable != nil {
		return *task.MinAvailable
	}
	return task.Replicas
}

// admitted reports whether the scheduler has let the PodGroup past enqueue, the point from
// which the job's pods may exist.
func admitted(pg *scheduling.PodGroup) bool {
	return pg.Status.Phase != "" && pg.Status.Phase != scheduling.PodGroupPending
}

func finished(phase batch.JobPhase) bool {
	return phase == batch.Completed || phase == batch.Failed
}

// ownedPods lists the pods the job controls, by name.
func (c *jobController) ownedPods(job *batch.Job) (map[string]*corev1.Pod, error) {
	selector := labels.SelectorFromSet(labels.Set{batch.JobNameKey: job.Name})
	pods, err := c.pods.Pods(job.Namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("list pods of job %s: %w", klog.KObj(job), err)
	}
	owned := make(map[string]*corev1.Pod, len(pods))
	for _, pod := range pods {
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.UID == job.UID {
			owned[pod.Name] = pod
		}
	}
	return owned, nil
}

// createMissingPods creates every pod of the job that does not exist. One failed pod does not
// hold back the others; all failures are returned together.
func (c *jobController) createMissingPods(ctx context.Context, job *batch.Job, existing map[string]*corev1.Pod) error {
	var errs []error
	for _, task := range job.Spec.Tasks {
		for index := range task.Replicas {
			pod := jobPod(job, task, index)
			if _, ok := existing[pod.Name]; ok {
				continue
			}
			_, err := c.kube.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("create pod %s of job %s: %w", pod.Name, klog.KObj(job), err))
				continue
			}
			klog.V(3).InfoS("Created pod for job", "pod", klog.KObj(pod), "job", klog.KObj(job))
		}
	}
	return errors.Join(errs...)
}

// jobPod is pod <job>-<task>-<index> of a defaulted job: the task template plus the
// annotations and labels that tie it to the job, its task and its PodGroup.
func jobPod(job *batch.Job, task batch.TaskSpec, index int32) *corev1.Pod {
	template := task.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("%s-%s-%d", job.Name, task.Name, index),
			Namespace:       job.Namespace,
			Labels:          template.Labels,
			Annotations:     template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Spec: template.Spec,
	}
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = job.Spec.SchedulerName
	}
	if pod.Spec.PriorityClassName == "" {
		pod.Spec.PriorityClassName = job.Spec.PriorityClassName
	}
	taskName := task.Name
	if taskName == "" {
		taskName = batch.DefaultTaskSpec
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	indexText := strconv.Itoa(int(index))
	maps.Copy(pod.Annotations, map[string]string{
		batch.TaskIndex:                       indexText,
		batch.TaskSpecKey:                     taskName,
		scheduling.KubeGroupNameAnnotationKey: jobPodGroupName(job),
		batch.JobNameKey:                      job.Name,
		batch.QueueNameKey:                    job.Spec.Queue,
		batch.JobVersion:                      strconv.Itoa(int(job.Status.Version)),
		batch.PodTemplateKey:                  job.Name + "-" + taskName,
		batch.JobRetryCountKey:                strconv.Itoa(int(job.Status.RetryCount)),
	})
	for _, key := range copiedJobAnnotations {
		if value, ok := job.Annotations[key]; ok {
			pod.Annotations[key] = value
		}
	}
	if task.TopologyPolicy != "" {
		pod.Annotations[scheduling.NumaPolicyKey] = string(task.TopologyPolicy)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	maps.Copy(pod.Labels, map[string]string{
		batch.TaskIndex:       indexText,
		batch.JobNameKey:      job.Name,
		batch.TaskSpecKey:     taskName,
		batch.JobNamespaceKey: job.Namespace,
		batch.QueueNameKey:    job.Spec.Queue,
	})
	for _, key := range copiedJobLabels {
		if value, ok := job.Labels[key]; ok {
			pod.Labels[key] = value
		}
	}
	return pod
}

// jobStatus is the job's status recomputed from its pods: counts by pod phase, overall and per
// task, and the job phase. The phase moves Pending -> Running once minAvailable pods run (or
// have succeeded), and to Completed or Failed once every pod has finished, depending on
// whether minAvailable of them succeeded; it never moves back.
func jobStatus(job *batch.Job, pods map[string]*corev1.Pod) batch.JobStatus {
	status := *job.Status.DeepCopy()
	status.MinAvailable = job.Spec.MinAvailable
	status.Pending, status.Running, status.Succeeded, status.Failed, status.Unknown, status.Terminating = 0, 0, 0, 0, 0, 0
	status.TaskStatusCount = nil
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			status.Terminating++
			continue
		}
		switch pod.Status.Phase {
		case corev1.PodPending:
			status.Pending++
		case corev1.PodRunning:
			status.Running++
		case corev1.PodSucceeded:
			status.Succeeded++
		case corev1.PodFailed:
			status.Failed++
		default:
			status.Unknown++
		}
		if status.TaskStatusCount == nil {
			status.TaskStatusCount = map[string]batch.TaskState{}
		}
		task := pod.Labels[batch.TaskSpecKey]
		counts := status.TaskStatusCount[task]
		if counts.Phase == nil {
			counts.Phase = map[corev1.PodPhase]int32{}
		}
		counts.Phase[pod.Status.Phase]++
		status.TaskStatusCount[task] = counts
	}
	var replicas int32
	for _, task := range job.Spec.Tasks {
		replicas += task.Replicas
	}
	phase := status.State.Phase
	switch {
	case finished(phase):
	case replicas > 0 && status.Succeeded+status.Failed == replicas:
		phase = batch.Failed
		if status.Succeeded >= job.Spec.MinAvailable {
			phase = batch.Completed
		}
	case status.Running+status.Succeeded >= job.Spec.MinAvailable && status.Running+status.Succeeded > 0:
		phase = batch.Running
	case phase == "":
		phase = batch.Pending
	}
	if phase != status.State.Phase {
		now := metav1.Now()
		status.State = batch.JobState{Phase: phase, LastTransitionTime: now}
		status.Conditions = append(status.Conditions, batch.JobCondition{Status: phase, LastTransitionTime: &now})
	}
	return status
}
