package assignment

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// CountRequired answers Allocate for the vGPU memory, cores or memory
// percentage resource. The count resource's allocator does all the work for
// a container, so an empty response is right, except for a container that
// asks for one of them without a vGPU count: kubelet never calls the count
// server for it, so it would start with every GPU visible and no limit at
// all, as it does under the upstream plugin. CountRequired refuses that
// container.
type CountRequired struct {
	client   kubernetes.Interface
	node     string
	count    corev1.ResourceName
	resource corev1.ResourceName
}

// NewCountRequired returns the allocator for resource (the memory, cores or
// memory percentage resource) on node; count is the vGPU count resource.
func NewCountRequired(client kubernetes.Interface, node string, count, resource corev1.ResourceName) *CountRequired {
	return &CountRequired{client: client, node: node, count: count, resource: resource}
}

// Allocate refuses the container if it asks for len(req.DevicesIds) of
// the resource without a count, and answers with an empty response
// otherwise.
func (g *CountRequired) Allocate(ctx context.Context, req *pluginapi.ContainerAllocateRequest) (*pluginapi.ContainerAllocateResponse, error) {
	pods, err := listNodePods(ctx, g.client, g.node)
	if err != nil {
		// Refusing would reject ordinary pods whenever the API server is
		// slow; this check only catches a user mistake.
		klog.ErrorS(err, "Cannot check that the container also requests a vGPU count; allowing it", "resource", g.resource)
		return &pluginapi.ContainerAllocateResponse{}, nil
	}
	n := len(req.DevicesIds)
	if pod, container, found := g.uncounted(pods, n); found {
		return nil, fmt.Errorf("pod %s/%s container %q requests %d %s but no %s: vGPU memory and cores are only "+
			"assigned and enforced for containers that request %s; add a %s limit",
			pod.Namespace, pod.Name, container, n, g.resource, g.count, g.count, g.count)
	}
	return &pluginapi.ContainerAllocateResponse{}, nil
}

// uncounted finds the container asking for n of the resource without a
// count. Kubelet does not say which container it admits, so any pending
// container of the node that asks for n might be the one; the request is
// refused only when none of them has a count, because refusing a correct
// container would be worse than missing a wrong one. The oldest pod's
// container is named, kubelet admitting pods in about that order.
func (g *CountRequired) uncounted(pods []corev1.Pod, n int) (pod *corev1.Pod, container string, found bool) {
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != g.node || p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
			q, asks := c.Resources.Limits[g.resource]
			if !asks || q.Value() != int64(n) {
				continue
			}
			if _, counted := c.Resources.Limits[g.count]; counted {
				return nil, "", false
			}
			if pod == nil || p.CreationTimestamp.Before(&pod.CreationTimestamp) {
				pod, container = p, c.Name
			}
		}
	}
	return pod, container, pod != nil
}
