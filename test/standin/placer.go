package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// placer stands in for kube-scheduler, which the local cluster does not run (it would race
// the tests that bind pods themselves), for one namespace only: the pods of the chart's own
// Deployment and DaemonSet (schedulerName default-scheduler) are bound to one node.
type placer struct {
	*loop
	kube      kubernetes.Interface
	pods      corelisters.PodLister
	namespace string
	node      string
}

// parsePlacement reads --place-pods NAMESPACE=NODE.
func parsePlacement(v string) (namespace, node string, err error) {
	namespace, node, ok := strings.Cut(v, "=")
	if !ok || namespace == "" || node == "" {
		return "", "", fmt.Errorf("--place-pods %q: want NAMESPACE=NODE", v)
	}
	return namespace, node, nil
}

func newPlacer(kube kubernetes.Interface, pods corelisters.PodLister, namespace, node string) *placer {
	p := &placer{kube: kube, pods: pods, namespace: namespace, node: node}
	p.loop = newLoop("placer", p.sync)
	return p
}

func (p *placer) watch(pods cache.SharedIndexInformer) error {
	_, err := pods.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod, ok := obj.(*corev1.Pod)
			return ok && p.wants(pod)
		},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: p.enqueue, UpdateFunc: func(_, obj any) { p.enqueue(obj) }},
	})
	return err
}

func (p *placer) wants(pod *corev1.Pod) bool {
	return pod.Namespace == p.namespace && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		(pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName)
}

func (p *placer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := p.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !p.wants(pod)) {
		return nil
	}
	if err != nil {
		return err
	}
	err = p.kube.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: p.node},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // bound meanwhile, or gone
	}
	return err
}
