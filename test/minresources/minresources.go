// Package minresources computes a PodGroup's minResources the way Volcano's controllers do, so
// that the stand-in controllers, the end-to-end tests and the benchmark workloads build the
// PodGroups a real cluster has.
package minresources

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
)

// countPods is the ResourceQuota object count of pods.
const countPods corev1.ResourceName = "count/pods"

// computeResources pairs each native resource with the quota names it is charged under.
var computeResources = []struct{ name, requests, limits corev1.ResourceName }{
	{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
	{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
	{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
}

// PerPod is what upstream's controllers put in a PodGroup's minResources for one pod:
// what a ResourceQuota would charge for it (count/pods, pods, cpu, memory and
// ephemeral-storage under their plain, requests. and limits. names, hugepages), plus each
// extended resource under both requests.<name> and <name>. Extended resources are read from
// requests only: the API server copies limits into requests on a live pod, but nothing does
// so on a VolcanoJob's pod template. The scheduler therefore sees these exact keys
// in minResources, as it would behind the real vc-controller-manager.
func PerPod(pod *corev1.Pod) corev1.ResourceList {
	usage := corev1.ResourceList{countPods: *resource.NewQuantity(1, resource.DecimalSI)}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return usage // a finished pod holds nothing but its object count
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	usage[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for _, r := range computeResources {
		if q, ok := requests[r.name]; ok {
			usage[r.name] = q
			usage[r.requests] = q
		}
		if q, ok := limits[r.name]; ok {
			usage[r.limits] = q
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			usage[name] = q
			usage[corev1.DefaultResourceRequestsPrefix+name] = q
		case isExtendedResource(name):
			usage[corev1.DefaultResourceRequestsPrefix+name] = q
			usage[name] = q
		}
	}
	return usage
}

// isExtendedResource reports whether name is an extended resource such as
// volcano.sh/vgpu-memory: domain-prefixed, outside kubernetes.io, and valid as a quota name.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") ||
		strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// AddScaled adds n times src to dst.
func AddScaled(dst, src corev1.ResourceList, n int32) {
	for name, q := range src {
		scaled := q.DeepCopy()
		scaled.Mul(int64(n))
		if sum, ok := dst[name]; ok {
			scaled.Add(sum)
		}
		dst[name] = scaled
	}
}

// Of is the minResources of a gang whose first minMember pods are pods[:minMember], as the
// pods are written (before the API server copies extended-resource limits into requests).
func Of(pods []*corev1.Pod, minMember int) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, pod := range pods[:min(minMember, len(pods))] {
		AddScaled(total, PerPod(pod), 1)
	}
	return total
}
