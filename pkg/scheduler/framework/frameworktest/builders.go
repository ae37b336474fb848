package frameworktest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Epoch is the time builders count from: At(i) is i seconds after it.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// At is Epoch plus i seconds, for creation times that order objects.
func At(i int) metav1.Time { return metav1.NewTime(Epoch.Add(time.Duration(i) * time.Second)) }

// Resources is a resource list: cpu and memory when not empty, then name/quantity pairs.
func Resources(cpu, memory string, pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	if cpu != "" {
		list[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		list[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// PodWrapper builds a Pod step by step: MakePod().Namespace("ns").Name("p").Group("pg").
// Container(requests).Obj(). Every step returns the wrapper, and Obj the Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod is a Pending pod with no containers.
func MakePod() *PodWrapper {
	return &PodWrapper{corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}}
}

// Obj returns the pod built.
func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }

// Namespace sets the namespace.
func (w *PodWrapper) Namespace(ns string) *PodWrapper { w.Pod.Namespace = ns; return w }

// Name sets the name and, unless set, the UID (namespace-name).
func (w *PodWrapper) Name(name string) *PodWrapper {
	w.Pod.Name = name
	if w.Pod.UID == "" {
		w.Pod.UID = types.UID(w.Pod.Namespace + "-" + name)
	}
	return w
}

// UID sets the UID.
func (w *PodWrapper) UID(uid string) *PodWrapper { w.Pod.UID = types.UID(uid); return w }

// Created sets the creation time to At(i).
func (w *PodWrapper) Created(i int) *PodWrapper { w.CreationTimestamp = At(i); return w }

// Annotation sets one annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// Group puts the pod in the PodGroup (the group annotation).
func (w *PodWrapper) Group(group string) *PodWrapper {
	return w.Annotation(schedulingv1beta1.KubeGroupNameAnnotationKey, group)
}

// Container adds a container named c<n> requesting requests.
func (w *PodWrapper) Container(requests corev1.ResourceList) *PodWrapper {
	name := "c"
	if n := len(w.Spec.Containers); n > 0 {
		name = "c" + string(rune('0'+n))
	}
	w.Spec.Containers = append(w.Spec.Containers, corev1.Container{Name: name,
		Resources: corev1.ResourceRequirements{Requests: requests}})
	return w
}

// Priority sets the pod's priority.
func (w *PodWrapper) Priority(p int32) *PodWrapper { w.Spec.Priority = &p; return w }

// NodeSelector sets the node selector.
func (w *PodWrapper) NodeSelector(sel map[string]string) *PodWrapper {
	w.Spec.NodeSelector = sel
	return w
}

// Gated adds a scheduling gate.
func (w *PodWrapper) Gated() *PodWrapper {
	w.Spec.SchedulingGates = append(w.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "wait"})
	return w
}

// Node sets spec.nodeName.
func (w *PodWrapper) Node(node string) *PodWrapper { w.Spec.NodeName = node; return w }

// Phase sets the pod's phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper { w.Status.Phase = p; return w }

// Terminating marks the pod as being deleted since Epoch.
func (w *PodWrapper) Terminating() *PodWrapper {
	t := metav1.NewTime(Epoch)
	w.DeletionTimestamp = &t
	return w
}

// NodeWrapper builds a Node step by step: MakeNode().Name("n1").Allocatable(list).Obj().
type NodeWrapper struct{ corev1.Node }

// MakeNode is a node with nothing allocatable.
func MakeNode() *NodeWrapper { return &NodeWrapper{} }

// Obj returns the node built.
func (w *NodeWrapper) Obj() *corev1.Node { return &w.Node }

// Name sets the name.
func (w *NodeWrapper) Name(name string) *NodeWrapper { w.Node.Name = name; return w }

// Allocatable sets allocatable and capacity to list (one list, as tests compare them).
func (w *NodeWrapper) Allocatable(list corev1.ResourceList) *NodeWrapper {
	w.Status.Allocatable, w.Status.Capacity = list, list
	return w
}

// Labels sets the labels.
func (w *NodeWrapper) Labels(labels map[string]string) *NodeWrapper { w.Node.Labels = labels; return w }

// Annotation sets one annotation.
func (w *NodeWrapper) Annotation(key, value string) *NodeWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}
