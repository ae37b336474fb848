package assignment

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// listNodePods lists the pods bound to node, straight from the API server.
//
// A direct List rather than an informer, because Allocate must see its own
// previous write: after the first of two vGPU containers is served, the
// second Allocate has to find the first container's entry erased, and an
// informer's cache may not have the PATCH yet, which would serve the first
// container's GPUs twice. It must also see a pod the scheduler bound a
// moment ago, before any informer on this node hears of it. The request
// is a consistent read that the API server answers from its watch cache,
// filtered on spec.nodeName, so it costs about as much as the node's own
// pods (a few ms for a hundred) and Allocate runs only when a container is
// admitted.
func listNodePods(ctx context.Context, client kubernetes.Interface, node string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list pods on node %s: %w", node, err)
	}
	return list.Items, nil
}

// target is the pod and assignment entry one Allocate call serves.
type target struct {
	pod *corev1.Pod
	// toAllocate is the pod's decoded DevicesToAllocateAnnotation.
	toAllocate vgpu.PodDevices
	// entry is the index of the container entry being served.
	entry int
}

func (t target) devices() vgpu.ContainerDevices {
	return t.toAllocate[t.entry]
}

// candidate is a pod waiting for count devices, and when it was assigned.
type candidate struct {
	target
	assigned uint64
}

// maxReasons bounds how many passed-over pods an error lists.
const maxReasons = 5

// findTarget picks the pod whose next container kubelet is admitting with
// count vGPU devices. Kubelet does not say which pod it admits, so the pod
// is the one that can be it: bound to this node and assigned devices here,
// Pending, bind phase "allocating", its next unserved container entry
// holding exactly count devices. If several can be, the one assigned
// first is taken: kubelet admits pods in the order they were bound. When
// none can be, the error says why each waiting pod was passed over.
func findTarget(pods []corev1.Pod, node string, count int) (target, error) {
	var candidates []candidate
	var reasons []string
	for i := range pods {
		pod := &pods[i]
		c, reason, waiting := checkCandidate(pod, node, count)
		switch {
		case reason != "":
			reasons = append(reasons, fmt.Sprintf("pod %s/%s %s", pod.Namespace, pod.Name, reason))
		case waiting:
			candidates = append(candidates, c)
		}
	}
	if len(candidates) == 0 {
		return target{}, noTargetError(node, count, reasons)
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(a.assigned, b.assigned),
			a.pod.CreationTimestamp.Time.Compare(b.pod.CreationTimestamp.Time),
			cmp.Compare(a.pod.Namespace, b.pod.Namespace),
			cmp.Compare(a.pod.Name, b.pod.Name),
		)
	})
	return candidates[0].target, nil
}

// checkCandidate says whether pod waits for count devices on node. Pods
// that are not vGPU pods being admitted here are passed over silently;
// for the others that cannot match, reason says why.
func checkCandidate(pod *corev1.Pod, node string, count int) (c candidate, reason string, waiting bool) {
	value, assigned := pod.Annotations[vgpu.DevicesToAllocateAnnotation]
	if !assigned || pod.Spec.NodeName != node || pod.Status.Phase != corev1.PodPending {
		return candidate{}, "", false
	}
	if on := pod.Annotations[vgpu.AssignedNodeAnnotation]; on != node {
		return candidate{}, fmt.Sprintf("was assigned devices on node %q, not on this node", on), false
	}
	if phase := pod.Annotations[vgpu.BindPhaseAnnotation]; phase != vgpu.BindPhaseAllocating {
		return candidate{}, fmt.Sprintf("has %s %q, not %q", vgpu.BindPhaseAnnotation, phase, vgpu.BindPhaseAllocating), false
	}
	toAllocate, err := vgpu.DecodePodDevices(value)
	if err != nil {
		return candidate{}, fmt.Sprintf("has a malformed %s: %v", vgpu.DevicesToAllocateAnnotation, err), false
	}
	entry, ok := toAllocate.NextPending()
	if !ok {
		return candidate{}, "has every container already served", false
	}
	if n := len(toAllocate[entry]); n != count {
		return candidate{}, fmt.Sprintf("waits for %d devices in container entry %d, not %d", n, entry, count), false
	}
	c = candidate{target: target{pod: pod, toAllocate: toAllocate, entry: entry}, assigned: math.MaxUint64}
	// A pod without a readable assignment time still qualifies; it is
	// served after the ones that have one.
	if t, err := vgpu.ParseUnixSeconds(pod.Annotations[vgpu.AssignedTimeAnnotation]); err == nil {
		c.assigned = t
	}
	return c, "", true
}

func noTargetError(node string, count int, reasons []string) error {
	if len(reasons) == 0 {
		return fmt.Errorf("no pending pod on node %s has a vGPU assignment waiting for %d devices: "+
			"is the pod scheduled by a Volcano scheduler with vGPU scheduling enabled?", node, count)
	}
	more := ""
	if len(reasons) > maxReasons {
		more = fmt.Sprintf("; and %d more", len(reasons)-maxReasons)
		reasons = reasons[:maxReasons]
	}
	return fmt.Errorf("no pending pod on node %s waits for %d vGPU devices: %s%s",
		node, count, strings.Join(reasons, "; "), more)
}

// containerFor maps the target's entry to the pod's container: entry i
// belongs to the i-th container that requests vGPU, which is not
// pod.Spec.Containers[i] when a container without vGPU comes first.
func containerFor(t target, names vgpu.ResourceNames) (*corev1.Container, error) {
	pod := t.pod
	for _, c := range pod.Spec.InitContainers {
		if _, ok := c.Resources.Limits[names.Count]; ok {
			return nil, fmt.Errorf("pod %s/%s init container %q requests %s: devices are assigned to app containers only",
				pod.Namespace, pod.Name, c.Name, names.Count)
		}
	}
	requests, err := vgpu.PodRequests(pod, names)
	if err != nil {
		return nil, err
	}
	if len(requests) != len(t.toAllocate) {
		return nil, fmt.Errorf("pod %s/%s: %s has %d container entries but %d containers request vGPU",
			pod.Namespace, pod.Name, vgpu.DevicesToAllocateAnnotation, len(t.toAllocate), len(requests))
	}
	request := requests[t.entry]
	if int(request.Count) != len(t.devices()) {
		return nil, fmt.Errorf("pod %s/%s container %q requests %d vGPUs but its entry %d in %s has %d",
			pod.Namespace, pod.Name, request.ContainerName, request.Count, t.entry, vgpu.DevicesToAllocateAnnotation, len(t.devices()))
	}
	return &pod.Spec.Containers[request.ContainerIndex], nil
}
