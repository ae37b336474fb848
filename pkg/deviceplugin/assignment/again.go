package assignment

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// servedAgain lists the pods whose hand-off is complete but whose container
// waiting for count devices the kubelet holds without vGPUs: it never got
// the answer (the Allocate was cancelled after the pod was patched, the
// kubelet restarting) or lost it, and asks again. Such a container is
// served again from the pod's assignment, unchanged and without a write:
// the scheduler has counted those GPUs for the pod all along. Only the
// kubelet's own list can tell, so without holdings there are none.
func servedAgain(pods []corev1.Pod, cfg Config, count int, holdings podresources.Holdings) []candidate {
	var again []candidate
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != cfg.NodeName || pod.Status.Phase != corev1.PodPending ||
			pod.Annotations[vgpu.BindPhaseAnnotation] != vgpu.BindPhaseSuccess ||
			pod.Annotations[vgpu.AssignedNodeAnnotation] != cfg.NodeName ||
			!slices.Contains(cfg.SchedulerNames, pod.Spec.SchedulerName) {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if _, held := holdings[key]; !held {
			continue
		}
		assigned, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil {
			continue
		}
		requests, err := vgpu.PodRequests(pod, cfg.Names)
		if err != nil || len(requests) != len(assigned) {
			continue
		}
		// Kubelet allocates a pod's containers in order: the first one it
		// holds without vGPUs is the one it asks for.
		entry := slices.IndexFunc(requests, func(r vgpu.ContainerRequest) bool { return holdings.Awaits(key, r.ContainerName) })
		if entry < 0 || len(assigned[entry]) != count {
			continue
		}
		// Its assignment time was released when it was served, before any
		// pod still waiting here was: among pods bound in the same second it
		// comes first.
		again = append(again, candidate{target: target{pod: pod, toAllocate: assigned, entry: entry, again: true},
			bound: boundTime(pod)})
	}
	return again
}
