package api

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// UnallocatedClaims refuses a pod with DRA resource claims (spec.resourceClaims): no part of
// this scheduler allocates or reserves a ResourceClaim, and a pod bound without its claims
// allocated never starts (kubelet waits for them), so it is refused before any node is tried,
// naming the claims, rather than bound.
func UnallocatedClaims(pod *corev1.Pod) error {
	claims := pod.Spec.ResourceClaims
	if len(claims) == 0 {
		return nil
	}
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = c.Name
	}
	return fmt.Errorf("pod %s/%s uses DRA resource claims (%s), which this scheduler does not allocate",
		pod.Namespace, pod.Name, strings.Join(names, ", "))
}
