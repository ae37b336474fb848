package assignment

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// annotationPatch is a JSON merge patch of an object's annotations. A
// resource version makes the API server refuse the patch with a conflict
// if the object changed since it was read.
type annotationPatch struct {
	Metadata struct {
		ResourceVersion string            `json:"resourceVersion,omitempty"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

func mergePatch(resourceVersion string, annotations map[string]string) []byte {
	var p annotationPatch
	p.Metadata.ResourceVersion = resourceVersion
	p.Metadata.Annotations = annotations
	data, _ := json.Marshal(p) // strings only: cannot fail
	return data
}

// servedAnnotations records that the candidate's container was served: its
// entry is erased from the devices still to allocate, and once no entry
// remains the pod's hand-off is complete (bind phase success, and the
// assignment time set to the value that sorts last in every search for
// the oldest waiting pod).
func servedAnnotations(c candidate) (annotations map[string]string, complete bool, err error) {
	rest, err := c.toAllocate.EraseContainer(c.entry)
	if err != nil {
		return nil, false, err
	}
	value, err := rest.Encode()
	if err != nil {
		return nil, false, fmt.Errorf("encode %s: %w", vgpu.DevicesToAllocateAnnotation, err)
	}
	annotations = map[string]string{vgpu.DevicesToAllocateAnnotation: value}
	if _, pending := rest.NextPending(); !pending {
		annotations[vgpu.BindPhaseAnnotation] = vgpu.BindPhaseSuccess
		annotations[vgpu.AssignedTimeAnnotation] = vgpu.AssignedTimeReleased
		complete = true
	}
	return annotations, complete, nil
}

// failedAnnotations end a pod's hand-off. Why it failed is the Allocate
// error, which kubelet puts in the pod's status and in an event.
func failedAnnotations() map[string]string {
	return map[string]string{
		vgpu.BindPhaseAnnotation:    vgpu.BindPhaseFailed,
		vgpu.AssignedTimeAnnotation: vgpu.AssignedTimeReleased,
	}
}

// patchPod merge-patches the pod's annotations; with resourceVersion set,
// only if the pod is unchanged since it was read.
func patchPod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, resourceVersion string, annotations map[string]string) error {
	_, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType,
		mergePatch(resourceVersion, annotations), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// releaseNodeLock removes the node lock the scheduler took before
// assigning devices (only when its NodeLockEnable argument is set). It
// reads the lock first, so that a node without one, the default, gets no
// write at all, and removes it only if it still holds the value read, so
// that a lock the scheduler has taken again in between for the next pod
// stays. Failing is only logged: the scheduler takes over a lock older
// than vgpu.NodeLockExpiry anyway.
func releaseNodeLock(ctx context.Context, client kubernetes.Interface, nodeName string) {
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		klog.ErrorS(err, "Cannot read the node lock to release it", "node", nodeName, "annotation", vgpu.NodeLockAnnotation)
		return
	}
	value, locked := node.Annotations[vgpu.NodeLockAnnotation]
	if !locked {
		return
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, nodeName, types.JSONPatchType, vgpu.NodeLockReleasePatch(value), metav1.PatchOptions{}); err != nil {
		klog.ErrorS(err, "Cannot release the node lock (it may have been taken again)", "node", nodeName, "annotation", vgpu.NodeLockAnnotation)
		return
	}
	klog.V(2).InfoS("Released the node lock", "node", nodeName, "annotation", vgpu.NodeLockAnnotation)
}
