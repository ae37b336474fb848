package assignment

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
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

// candidate is a pod considered for an Allocate, with its decoded
// assignment: the container entry it would be served, and when it was bound
// and assigned, by which the candidates are tried (sortCandidates). Both ways
// of choosing the pod (consider) make one, and the rest of Allocate serves,
// refuses or fails it.
type candidate struct {
	pod *corev1.Pod
	// toAllocate is the pod's decoded DevicesToAllocateAnnotation.
	toAllocate vgpu.PodDevices
	// entry is the index of the container entry being served.
	entry int
	// again marks a container served before, whose answer the kubelet
	// lacks (admittedEntry): toAllocate is then the whole assignment.
	again bool
	// bound is when the API server bound the pod (its PodScheduled condition,
	// which a pod author cannot write); zero when unknown.
	bound time.Time
	// assigned is the pod's assignment time (AssignedTimeAnnotation).
	assigned uint64
}

func (c candidate) devices() vgpu.ContainerDevices {
	return c.toAllocate[c.entry]
}

// maxReasons bounds how many passed-over pods an error lists.
const maxReasons = 5

// findCandidates lists the pods that can be the one whose next container
// kubelet is admitting with count vGPU devices, most likely first
// (sortCandidates); reasons say why each other waiting pod was passed over.
// holdings is the kubelet's own list of the pods it admits, nil when it
// could not be asked (consider).
func findCandidates(pods []corev1.Pod, cfg Config, count int, holdings podresources.Holdings) (candidates []candidate, reasons []string) {
	for i := range pods {
		pod := &pods[i]
		c, reason, waiting := consider(pod, cfg, count, holdings)
		switch {
		case reason != "":
			reasons = append(reasons, fmt.Sprintf("pod %s/%s %s", pod.Namespace, pod.Name, reason))
		case waiting:
			candidates = append(candidates, c)
		}
	}
	sortCandidates(candidates)
	return candidates, reasons
}

// consider says whether pod waits for count devices on this node. Kubelet
// does not say which pod it admits, so the pod is one that can be it:
// scheduled by one of cfg.SchedulerNames, bound to this node and assigned
// devices here, Pending, with a container entry of exactly count devices to
// serve. Pods that are not vGPU pods being admitted here are passed over
// silently; for the others that cannot match, reason says why.
//
// With the kubelet's list of the pods it admits (holdings), only a pod it
// holds can be the one, and the entry is that of its first vGPU container it
// holds without vGPUs (admittedEntry): a pod the kubelet rejected, or has not
// reached yet, is never one. Without the list, the entry is the pod's next
// unserved one (pendingEntry).
func consider(pod *corev1.Pod, cfg Config, count int, holdings podresources.Holdings) (c candidate, reason string, waiting bool) {
	// A pod the kubelet holds may ask again for a container served before,
	// so its whole assignment marks it as a vGPU pod; without the kubelet's
	// list only the devices still to allocate do.
	marker := vgpu.DevicesToAllocateAnnotation
	if holdings != nil {
		marker = vgpu.AssignedDevicesAnnotation
	}
	if _, assigned := pod.Annotations[marker]; !assigned || pod.Spec.NodeName != cfg.NodeName || pod.Status.Phase != corev1.PodPending {
		return candidate{}, "", false
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if _, held := holdings[key]; holdings != nil && !held {
		if pod.Annotations[vgpu.BindPhaseAnnotation] == vgpu.BindPhaseAllocating {
			return candidate{}, "is not one the kubelet admits (rejected, or not reached yet)", false
		}
		return candidate{}, "", false
	}
	if !slices.Contains(cfg.SchedulerNames, pod.Spec.SchedulerName) {
		return candidate{}, fmt.Sprintf("is scheduled by %q, not by a vGPU scheduler (%s)", pod.Spec.SchedulerName, strings.Join(cfg.SchedulerNames, ", ")), false
	}
	if on := pod.Annotations[vgpu.AssignedNodeAnnotation]; on != cfg.NodeName {
		return candidate{}, fmt.Sprintf("was assigned devices on node %q, not on this node", on), false
	}
	c = candidate{pod: pod, bound: boundTime(pod)}
	if holdings != nil {
		reason = c.admittedEntry(cfg.Names, key, holdings)
	} else {
		reason = c.pendingEntry()
	}
	if reason == "" && len(c.devices()) != count {
		reason = fmt.Sprintf("waits for %d devices in container entry %d, not %d", len(c.devices()), c.entry, count)
	}
	if reason != "" {
		return candidate{}, reason, false
	}
	// A container served before had its assignment time released (the
	// largest value) when its pod's hand-off completed; it was most likely
	// assigned before any pod still waiting here, so among pods bound in the
	// same second it goes first. A pod without a readable assignment time
	// still qualifies; it is served after the ones that have one.
	if !c.again {
		c.assigned = math.MaxUint64
		if ts, err := vgpu.ParseUnixSeconds(pod.Annotations[vgpu.AssignedTimeAnnotation]); err == nil {
			c.assigned = ts
		}
	}
	return c, "", true
}

// pendingEntry picks the pod's next unserved container entry, or says why it
// has none: without the kubelet's list of its pods, that is the container
// kubelet admits, since it allocates a pod's containers in order.
func (c *candidate) pendingEntry() (reason string) {
	if phase := c.pod.Annotations[vgpu.BindPhaseAnnotation]; phase != vgpu.BindPhaseAllocating {
		return fmt.Sprintf("has %s %q, not %q", vgpu.BindPhaseAnnotation, phase, vgpu.BindPhaseAllocating)
	}
	toAllocate, reason := decodeAnnotation(c.pod, vgpu.DevicesToAllocateAnnotation)
	if reason != "" {
		return reason
	}
	entry, pending := toAllocate.NextPending()
	if !pending {
		return "has every container already served"
	}
	c.toAllocate, c.entry = toAllocate, entry
	return ""
}

// admittedEntry picks the entry of the first vGPU container of the pod (key)
// that the kubelet holds without vGPUs, or says why there is none to serve.
//
// That container is served its entry of devices-to-allocate when it is the
// next one waiting there. When its entry was served already (the pod's
// hand-off may even be complete), the kubelet never got the answer or lost
// it (a restart cut the Allocate short) and asks again: it is served again
// from the whole assignment (vgpu-ids-new), unchanged and without a write,
// since the scheduler has counted those GPUs for the pod all along.
func (c *candidate) admittedEntry(names vgpu.ResourceNames, key types.NamespacedName, holdings podresources.Holdings) (reason string) {
	phase := c.pod.Annotations[vgpu.BindPhaseAnnotation]
	if phase != vgpu.BindPhaseAllocating && phase != vgpu.BindPhaseSuccess {
		return fmt.Sprintf("has %s %q", vgpu.BindPhaseAnnotation, phase)
	}
	requests, err := vgpu.PodRequests(c.pod, names)
	if err != nil {
		return err.Error()
	}
	entry := slices.IndexFunc(requests, func(r vgpu.ContainerRequest) bool { return holdings.Awaits(key, r.ContainerName) })
	if entry < 0 {
		return "has every vGPU container's devices in the kubelet"
	}
	assigned, reason := decodeAnnotation(c.pod, vgpu.AssignedDevicesAnnotation)
	if reason != "" {
		return reason
	}
	c.entry = entry
	if phase == vgpu.BindPhaseAllocating {
		toAllocate, reason := decodeAnnotation(c.pod, vgpu.DevicesToAllocateAnnotation)
		if reason != "" {
			return reason
		}
		next, pending := toAllocate.NextPending()
		switch {
		case pending && next == entry:
			c.toAllocate = toAllocate
			return ""
		case pending && next < entry:
			return fmt.Sprintf("has container entry %d still to allocate, but the kubelet holds that container's vGPUs", next)
		}
	}
	// Served before. An assignment with fewer entries than the pod has vGPU
	// containers is none the scheduler wrote; it has no entry to serve again.
	if entry >= len(assigned) {
		return fmt.Sprintf("has %d container entries in %s, none for vGPU container %d", len(assigned), vgpu.AssignedDevicesAnnotation, entry)
	}
	c.toAllocate, c.again = assigned, true
	return ""
}

// decodeAnnotation decodes the pod's assignment annotation key, or says why
// it cannot.
func decodeAnnotation(pod *corev1.Pod, key string) (vgpu.PodDevices, string) {
	devices, err := vgpu.DecodePodDevices(pod.Annotations[key])
	if err != nil {
		return nil, fmt.Sprintf("has a malformed %s: %v", key, err)
	}
	return devices, ""
}

// sortCandidates puts the most likely first. Kubelet admits pods as it hears
// of them, in the order they were bound (a batch it hears of at once, as
// after its restart, in creation order), so the earliest bound comes first;
// the bind time the API server recorded counts before the assignment time,
// an annotation anyone who may edit the pod could write.
func sortCandidates(candidates []candidate) {
	slices.SortFunc(candidates, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(boolRank(a.bound.IsZero()), boolRank(b.bound.IsZero())),
			a.bound.Compare(b.bound),
			cmp.Compare(a.assigned, b.assigned),
			a.pod.CreationTimestamp.Time.Compare(b.pod.CreationTimestamp.Time),
			cmp.Compare(a.pod.Namespace, b.pod.Namespace),
			cmp.Compare(a.pod.Name, b.pod.Name),
		)
	})
}

// boundTime is when the API server bound pod (its PodScheduled condition,
// which a pod author cannot write); zero when unknown.
func boundTime(pod *corev1.Pod) time.Time {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
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
