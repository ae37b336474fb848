package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"
	schedulinglisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// copiedPodAnnotations are the pod annotations a standalone pod's PodGroup carries over.
var copiedPodAnnotations = []string{
	scheduling.PodPreemptable, scheduling.CooldownTime, scheduling.RevocableZone,
	scheduling.JDBMinAvailable, scheduling.JDBMaxUnavailable,
}

// podGroupController gives every standalone pod of ours a PodGroup: the scheduler
// ignores pods without the group-name annotation, so a plain Pod or Deployment with
// schedulerName volcano would otherwise never be scheduled.
type podGroupController struct {
	*loop
	kube           kubernetes.Interface
	vc             versioned.Interface
	pods           corelisters.PodLister
	podGroups      schedulinglisters.PodGroupLister
	schedulerNames sets.Set[string]
}

func newPodGroupController(kube kubernetes.Interface, vc versioned.Interface, pods corelisters.PodLister,
	podGroups schedulinglisters.PodGroupLister, schedulerNames []string) *podGroupController {
	c := &podGroupController{kube: kube, vc: vc, pods: pods, podGroups: podGroups, schedulerNames: sets.New(schedulerNames...)}
	c.loop = newLoop("podgroup", c.sync)
	return c
}

// watch queues every pod that needs a PodGroup, on add and on update (a pod whose annotation
// patch failed earlier comes back with its next change, or with its retry).
func (c *podGroupController) watch(pods cache.SharedIndexInformer) error {
	enqueue := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && c.needsPodGroup(pod) {
			c.enqueue(pod)
		}
	}
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return err
}

func (c *podGroupController) needsPodGroup(pod *corev1.Pod) bool {
	return c.schedulerNames.Has(pod.Spec.SchedulerName) && pod.Annotations[scheduling.KubeGroupNameAnnotationKey] == ""
}

// sync creates the pod's PodGroup when it does not exist yet, then names it on the pod.
func (c *podGroupController) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s: %w", key, err)
	}
	if !c.needsPodGroup(pod) {
		return nil
	}
	pgName := podGroupName(pod)
	_, err = c.podGroups.PodGroups(namespace).Get(pgName)
	if apierrors.IsNotFound(err) {
		pg := standalonePodGroup(pod, pgName, c.minMember(ctx, pod))
		_, err = c.vc.SchedulingV1beta1().PodGroups(namespace).Create(ctx, pg, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil // created by an earlier sync that the lister has not seen yet
		}
		if err != nil {
			return fmt.Errorf("create podgroup %s/%s for pod %s: %w", namespace, pgName, key, err)
		}
		klog.V(2).InfoS("Created PodGroup for pod", "podGroup", klog.KObj(pg), "pod", klog.KObj(pod))
	} else if err != nil {
		return fmt.Errorf("get podgroup %s/%s for pod %s: %w", namespace, pgName, key, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{scheduling.KubeGroupNameAnnotationKey: pgName}}})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("annotate pod %s with podgroup %s: %w", key, pgName, err)
	}
	return nil
}

// podGroupName is podgroup-<uid> of the pod's controller, or of the pod when it has none, so
// that all pods of one ReplicaSet or StatefulSet share a PodGroup.
func podGroupName(pod *corev1.Pod) string {
	if owner := metav1.GetControllerOf(pod); owner != nil {
		return batch.PodgroupNamePrefix + string(owner.UID)
	}
	return batch.PodgroupNamePrefix + string(pod.UID)
}

// standalonePodGroup is the PodGroup for a pod that no gang-aware controller manages: a gang
// of minMember copies of this pod, owned by the pod's controller (or the pod itself), so the
// garbage collector removes it together with them.
func standalonePodGroup(pod *corev1.Pod, name string, minMember int32) *scheduling.PodGroup {
	minResources := corev1.ResourceList{}
	minresources.AddScaled(minResources, minresources.PerPod(pod), minMember)
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		owner = metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
	}
	var annotations map[string]string
	for _, key := range copiedPodAnnotations {
		if value, ok := pod.Annotations[key]; ok {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[key] = value
		}
	}
	return &scheduling.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       pod.Namespace,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Spec: scheduling.PodGroupSpec{
			MinMember:         minMember,
			MinResources:      &minResources,
			PriorityClassName: pod.Spec.PriorityClassName,
			Queue:             pod.Annotations[scheduling.QueueNameAnnotationKey],
		},
		Status: scheduling.PodGroupStatus{Phase: scheduling.PodGroupPending},
	}
}

// minMember is the group-min-member annotation of the pod's controller (a ReplicaSet,
// StatefulSet, DaemonSet or batch Job), or 1. An unreadable owner or a malformed value is
// logged and counts as 1: the pod is still scheduled, one at a time.
func (c *podGroupController) minMember(ctx context.Context, pod *corev1.Pod) int32 {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return 1
	}
	annotations, err := c.ownerAnnotations(ctx, pod.Namespace, owner)
	if err != nil {
		klog.ErrorS(err, "Cannot read the owner's min member, using 1", "pod", klog.KObj(pod), "owner", owner.Kind+"/"+owner.Name)
		return 1
	}
	value, ok := annotations[scheduling.VolcanoGroupMinMemberAnnotationKey]
	if !ok {
		return 1
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 1 {
		klog.ErrorS(err, "Invalid min member annotation, using 1", "pod", klog.KObj(pod),
			"owner", owner.Kind+"/"+owner.Name, "annotation", scheduling.VolcanoGroupMinMemberAnnotationKey, "value", value)
		return 1
	}
	return int32(n)
}

func (c *podGroupController) ownerAnnotations(ctx context.Context, namespace string, owner *metav1.OwnerReference) (map[string]string, error) {
	var (
		obj metav1.Object
		err error
	)
	get := metav1.GetOptions{}
	switch owner.APIVersion + "/" + owner.Kind {
	case "apps/v1/ReplicaSet":
		obj, err = c.kube.AppsV1().ReplicaSets(namespace).Get(ctx, owner.Name, get)
	case "apps/v1/StatefulSet":
		obj, err = c.kube.AppsV1().StatefulSets(namespace).Get(ctx, owner.Name, get)
	case "apps/v1/DaemonSet":
		obj, err = c.kube.AppsV1().DaemonSets(namespace).Get(ctx, owner.Name, get)
	case "batch/v1/Job":
		obj, err = c.kube.BatchV1().Jobs(namespace).Get(ctx, owner.Name, get)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.GetAnnotations(), nil
}
