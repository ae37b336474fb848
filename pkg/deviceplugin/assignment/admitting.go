package assignment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// admittedCandidates lists the pods that can be the one the kubelet asks
// count devices for, from the kubelet's own list of the pods it admits
// (holdings): only a pod it holds, and in it the first vGPU container it
// holds without vGPUs, since kubelet allocates a pod's containers in order.
// A pod the kubelet rejected, or has not reached yet, is never one.
//
// That container is served its entry of devices-to-allocate when it is the
// next one waiting there. When its entry was served already (the pod's
// hand-off may even be complete), the kubelet never got the answer or lost
// it (a restart cut the Allocate short) and asks again: it is served again
// from the whole assignment (vgpu-ids-new), unchanged and without a write,
// since the scheduler has counted those GPUs for the pod all along.
func admittedCandidates(pods []corev1.Pod, cfg Config, count int, holdings podresources.Holdings) (candidates []candidate, reasons []string) {
	for i := range pods {
		pod := &pods[i]
		if _, assigned := pod.Annotations[vgpu.AssignedDevicesAnnotation]; !assigned || pod.Spec.NodeName != cfg.NodeName || pod.Status.Phase != corev1.PodPending {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if _, held := holdings[key]; !held {
			if pod.Annotations[vgpu.BindPhaseAnnotation] == vgpu.BindPhaseAllocating {
				reasons = append(reasons, fmt.Sprintf("pod %s/%s is not one the kubelet admits (rejected, or not reached yet)", pod.Namespace, pod.Name))
			}
			continue
		}
		t, reason := admittedTarget(pod, key, cfg, holdings)
		if reason == "" && len(t.devices()) != count {
			reason = fmt.Sprintf("waits for %d devices in container entry %d, not %d", len(t.devices()), t.entry, count)
		}
		if reason != "" {
			reasons = append(reasons, fmt.Sprintf("pod %s/%s %s", pod.Namespace, pod.Name, reason))
			continue
		}
		// A container served before had its assignment time released (the
		// largest value) when its pod's hand-off completed; it was most likely
		// assigned before any pod still waiting here, so among pods bound in
		// the same second it goes first.
		c := candidate{target: t, bound: boundTime(pod)}
		if !t.again {
			c.assigned = math.MaxUint64
			if ts, err := vgpu.ParseUnixSeconds(pod.Annotations[vgpu.AssignedTimeAnnotation]); err == nil {
				c.assigned = ts
			}
		}
		candidates = append(candidates, c)
	}
	sortCandidates(candidates)
	return candidates, reasons
}

// admittedTarget is the entry of the first vGPU container of pod that the
// kubelet holds without vGPUs, or why there is none to serve.
func admittedTarget(pod *corev1.Pod, key types.NamespacedName, cfg Config, holdings podresources.Holdings) (target, string) {
	if !slices.Contains(cfg.SchedulerNames, pod.Spec.SchedulerName) {
		return target{}, fmt.Sprintf("is scheduled by %q, not by a vGPU scheduler (%s)", pod.Spec.SchedulerName, strings.Join(cfg.SchedulerNames, ", "))
	}
	if on := pod.Annotations[vgpu.AssignedNodeAnnotation]; on != cfg.NodeName {
		return target{}, fmt.Sprintf("was assigned devices on node %q, not on this node", on)
	}
	phase := pod.Annotations[vgpu.BindPhaseAnnotation]
	if phase != vgpu.BindPhaseAllocating && phase != vgpu.BindPhaseSuccess {
		return target{}, fmt.Sprintf("has %s %q", vgpu.BindPhaseAnnotation, phase)
	}
	requests, err := vgpu.PodRequests(pod, cfg.Names)
	if err != nil {
		return target{}, err.Error()
	}
	entry := slices.IndexFunc(requests, func(r vgpu.ContainerRequest) bool { return holdings.Awaits(key, r.ContainerName) })
	if entry < 0 {
		return target{}, "has every vGPU container's devices in the kubelet"
	}
	assigned, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.AssignedDevicesAnnotation])
	if err != nil {
		return target{}, fmt.Sprintf("has a malformed %s: %v", vgpu.AssignedDevicesAnnotation, err)
	}
	again := target{pod: pod, toAllocate: assigned, entry: entry, again: true}
	if phase == vgpu.BindPhaseSuccess {
		return again, ""
	}
	toAllocate, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.DevicesToAllocateAnnotation])
	if err != nil {
		return target{}, fmt.Sprintf("has a malformed %s: %v", vgpu.DevicesToAllocateAnnotation, err)
	}
	next, pending := toAllocate.NextPending()
	switch {
	case pending && next == entry:
		return target{pod: pod, toAllocate: toAllocate, entry: entry}, ""
	case !pending || entry < next:
		return again, ""
	default:
		return target{}, fmt.Sprintf("has container entry %d still to allocate, but the kubelet holds that container's vGPUs", next)
	}
}
