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
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
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
	// again marks a container served before, whose answer the kubelet
	// lacks (servedAgain): toAllocate is then the whole assignment.
	again bool
}

func (t target) devices() vgpu.ContainerDevices {
	return t.toAllocate[t.entry]
}

// candidate is a pod waiting for count devices, and when it was bound and
// assigned.
type candidate struct {
	target
	// bound is when the API server bound the pod (its PodScheduled condition,
	// which a pod author cannot write); zero when unknown.
	bound    time.Time
	assigned uint64
}

// maxReasons bounds how many passed-over pods an error lists.
const maxReasons = 5

// findCandidates lists the pods that can be the one whose next container
// kubelet is admitting with count vGPU devices, most likely first. Kubelet
// does not say which pod it admits, so the pod is one that can be it:
// scheduled by one of schedulers, bound to this node and assigned devices
// here, Pending, bind phase "allocating", its next unserved container entry
// holding exactly count devices. Kubelet admits pods as it hears of them,
// in the order they were bound (a batch it hears of at once, as after its
// restart, in creation order), so the earliest bound comes first; the bind
// time the API server
// recorded counts before the assignment time, an annotation anyone who may
// edit the pod could write. reasons say why each other waiting pod was
// passed over.
func findCandidates(pods []corev1.Pod, node string, count int, schedulers []string) (candidates []candidate, reasons []string) {
	for i := range pods {
		pod := &pods[i]
		c, reason, waiting := checkCandidate(pod, node, count, schedulers)
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

// sortCandidates puts the most likely first: the earliest bound
// (findCandidates).
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

// checkCandidate says whether pod waits for count devices on node. Pods
// that are not vGPU pods being admitted here are passed over silently;
// for the others that cannot match, reason says why.
func checkCandidate(pod *corev1.Pod, node string, count int, schedulers []string) (c candidate, reason string, waiting bool) {
	value, assigned := pod.Annotations[vgpu.DevicesToAllocateAnnotation]
	if !assigned || pod.Spec.NodeName != node || pod.Status.Phase != corev1.PodPending {
		return candidate{}, "", false
	}
	if !slices.Contains(schedulers, pod.Spec.SchedulerName) {
		return candidate{}, fmt.Sprintf("is scheduled by %q, not by a vGPU scheduler (%s)", pod.Spec.SchedulerName, strings.Join(schedulers, ", ")), false
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
	c = candidate{target: target{pod: pod, toAllocate: toAllocate, entry: entry}, bound: boundTime(pod), assigned: math.MaxUint64}
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
// pod.Spec.Containers[i] when a container without vGPU comes first. The
// entry must be exactly what that container requests (matchRequest).
func containerFor(t target, cfg Config, gpus []nvml.GPU) (*corev1.Container, error) {
	names := cfg.Names
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
	if err := matchRequest(request, t.devices(), gpus, cfg); err != nil {
		return nil, fmt.Errorf("pod %s/%s container %q, entry %d in %s: %w",
			pod.Namespace, pod.Name, request.ContainerName, t.entry, vgpu.DevicesToAllocateAnnotation, err)
	}
	return &pod.Spec.Containers[request.ContainerIndex], nil
}

// matchRequest checks that devices are exactly what the container asks for,
// as the scheduler books it: GPUs of this node (the decoder already refuses
// one GPU twice), each with the
// container's memory (its memory, else its percentage of the GPU) and its
// cores, never more than the GPU has. The GPU's memory is what the node
// publishes (Config.gpuMemory, scaled by deviceMemoryScaling), the figure the
// scheduler books a whole GPU and percentages of. Anything else is an assignment the
// scheduler did not make, and would hand out limits nobody paid for.
//
// A memory request may book up to its GPU model's context reserve on top
// (vgpu.ContainerRequest.ReserveOn), which the container's limit then
// includes. Any figure from the request to the request plus the reserve this
// plugin knows is accepted: an upstream scheduler books none, and ours books
// the reserve of the device ConfigMap it read, which this plugin reads only at
// start.
func matchRequest(request vgpu.ContainerRequest, devices vgpu.ContainerDevices, gpus []nvml.GPU, cfg Config) error {
	for i, d := range devices {
		g := slices.IndexFunc(gpus, func(g nvml.GPU) bool { return g.UUID == d.UUID })
		if g < 0 {
			return fmt.Errorf("device %d: GPU %s is not one of this node's", i, d.UUID)
		}
		units := cfg.gpuMemory(gpus[g])
		want := request.MemoryOn(units)
		reserve := request.ReserveOn(vgpu.ReserveUnits(cfg.ContextReserves.MiBFor(vgpu.DeviceTypeForModel(gpus[g].Name)), cfg.MemoryFactor))
		switch {
		case want > units:
			return fmt.Errorf("device %d: the container asks %d memory units, more than GPU %s has (%d)", i, want, d.UUID, units)
		case d.UsedMemory == 0 && want == units:
			// Booking 0 for a container that asks the whole GPU is the older
			// schedulers' way of saying so; Allocate then limits it to the GPU.
		case reserve > 0 && (d.UsedMemory < want || int64(d.UsedMemory) > min(int64(want)+int64(reserve), int64(units))):
			// The scheduler refuses a request that fits the GPU only without the
			// reserve, so no honest booking exceeds the GPU.
			return fmt.Errorf("device %d books %d memory units, the container asks %d, and %d with the GPU's context reserve",
				i, d.UsedMemory, want, int64(want)+int64(reserve))
		case reserve == 0 && d.UsedMemory != want:
			return fmt.Errorf("device %d books %d memory units, the container asks %d", i, d.UsedMemory, want)
		}
		switch {
		case d.UsedCores != request.Cores:
			return fmt.Errorf("device %d books %d cores, the container asks %d", i, d.UsedCores, request.Cores)
		case d.UsedCores > 100:
			return fmt.Errorf("device %d books %d cores, more than a GPU has (100)", i, d.UsedCores)
		}
	}
	return nil
}
