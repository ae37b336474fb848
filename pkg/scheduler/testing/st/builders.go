// Package st holds the Kubernetes side of the tests' doubles: builders of the objects unit
// tests start from (pods, nodes, PodGroups and queues, step by step:
// MakePod().Namespace("ns").Name("p").Obj()) and an EventRecorder that keeps what it is given.
// It imports nothing of this module, so any package's tests can use it, the scheduler API's
// included.
package st

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

func setKey(m *map[string]string, key, value string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
}

// PodWrapper builds a Pod step by step: MakePod().Namespace("ns").Name("p").Group("pg").
// Container(requests).Obj(). Every step returns the wrapper, and Obj the Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod is a Pending pod with no containers.
func MakePod() *PodWrapper {
	return &PodWrapper{corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}}
}

// Pod is the pod most tests start from: Pending, ns/name (UID uid-name, resource version 1),
// for this scheduler ("volcano"), with one container requesting cpu and memory ("" for none).
func Pod(name, cpu, memory string) *PodWrapper {
	return MakePod().Namespace("ns").UID("uid-" + name).Name(name).ResourceVersion("1").SchedulerName("volcano").
		Container(Resources(cpu, memory))
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

// ResourceVersion sets the resource version.
func (w *PodWrapper) ResourceVersion(rv string) *PodWrapper { w.Pod.ResourceVersion = rv; return w }

// Created sets the creation time to At(i).
func (w *PodWrapper) Created(i int) *PodWrapper { w.CreationTimestamp = At(i); return w }

// Label sets one label.
func (w *PodWrapper) Label(key, value string) *PodWrapper { setKey(&w.Labels, key, value); return w }

// Annotation sets one annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	setKey(&w.Annotations, key, value)
	return w
}

// Group puts the pod in the PodGroup (the group annotation).
func (w *PodWrapper) Group(group string) *PodWrapper {
	return w.Annotation(schedulingv1beta1.KubeGroupNameAnnotationKey, group)
}

// Owner adds an owner reference.
func (w *PodWrapper) Owner(ref metav1.OwnerReference) *PodWrapper {
	w.OwnerReferences = append(w.OwnerReferences, ref)
	return w
}

// Container adds a container named c (the first), c1, c2... requesting requests.
func (w *PodWrapper) Container(requests corev1.ResourceList) *PodWrapper {
	name := "c"
	if n := len(w.Spec.Containers); n > 0 {
		name = "c" + string(rune('0'+n))
	}
	return w.Containers(corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests}})
}

// Containers adds the containers as they are.
func (w *PodWrapper) Containers(cs ...corev1.Container) *PodWrapper {
	w.Spec.Containers = append(w.Spec.Containers, cs...)
	return w
}

// HostPort adds container port 80, published on the host's port (ip "": every address, proto
// "": TCP), to the first container.
func (w *PodWrapper) HostPort(port int32, proto corev1.Protocol, ip string) *PodWrapper {
	c := &w.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: port, Protocol: proto, HostIP: ip})
	return w
}

// InitContainers adds the init containers as they are.
func (w *PodWrapper) InitContainers(cs ...corev1.Container) *PodWrapper {
	w.Spec.InitContainers = append(w.Spec.InitContainers, cs...)
	return w
}

// SchedulerName sets the scheduler the pod asks for.
func (w *PodWrapper) SchedulerName(name string) *PodWrapper { w.Spec.SchedulerName = name; return w }

// PriorityClassName sets the pod's priority class.
func (w *PodWrapper) PriorityClassName(name string) *PodWrapper {
	w.Spec.PriorityClassName = name
	return w
}

// Priority sets the pod's priority.
func (w *PodWrapper) Priority(p int32) *PodWrapper { w.Spec.Priority = &p; return w }

// NodeSelector sets the node selector.
func (w *PodWrapper) NodeSelector(sel map[string]string) *PodWrapper {
	w.Spec.NodeSelector = sel
	return w
}

// RequiredNodeAffinity sets a required node affinity of the terms (replacing any affinity).
func (w *PodWrapper) RequiredNodeAffinity(terms ...corev1.NodeSelectorTerm) *PodWrapper {
	w.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	return w
}

// PreferredNodeAffinity sets a preferred node affinity of the terms (replacing any affinity).
func (w *PodWrapper) PreferredNodeAffinity(terms ...corev1.PreferredSchedulingTerm) *PodWrapper {
	w.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: terms}}
	return w
}

// affinity is the pod's affinity, made when it has none.
func (w *PodWrapper) affinity() *corev1.Affinity {
	if w.Spec.Affinity == nil {
		w.Spec.Affinity = &corev1.Affinity{}
	}
	return w.Spec.Affinity
}

// PodAffinityTerm selects the pods with the labels (in the pod's namespace) within the
// domains of topologyKey.
func PodAffinityTerm(topologyKey string, labels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// RequiredPodAffinity adds a required pod affinity term.
func (w *PodWrapper) RequiredPodAffinity(term corev1.PodAffinityTerm) *PodWrapper {
	a := w.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	return w
}

// RequiredPodAntiAffinity adds a required pod anti-affinity term.
func (w *PodWrapper) RequiredPodAntiAffinity(term corev1.PodAffinityTerm) *PodWrapper {
	a := w.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term)
	return w
}

// PreferredPodAffinity adds a preferred pod affinity term of the weight.
func (w *PodWrapper) PreferredPodAffinity(weight int32, term corev1.PodAffinityTerm) *PodWrapper {
	a := w.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return w
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term of the weight.
func (w *PodWrapper) PreferredPodAntiAffinity(weight int32, term corev1.PodAffinityTerm) *PodWrapper {
	a := w.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term})
	return w
}

// SpreadConstraint is a DoNotSchedule constraint of maxSkew over topologyKey's domains for
// the pods with the labels.
func SpreadConstraint(maxSkew int32, topologyKey string, labels map[string]string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// SoftSpreadConstraint is SpreadConstraint as ScheduleAnyway: it only scores.
func SoftSpreadConstraint(maxSkew int32, topologyKey string, labels map[string]string) corev1.TopologySpreadConstraint {
	c := SpreadConstraint(maxSkew, topologyKey, labels)
	c.WhenUnsatisfiable = corev1.ScheduleAnyway
	return c
}

// TopologySpread adds topology spread constraints.
func (w *PodWrapper) TopologySpread(cs ...corev1.TopologySpreadConstraint) *PodWrapper {
	w.Spec.TopologySpreadConstraints = append(w.Spec.TopologySpreadConstraints, cs...)
	return w
}

// Tolerations adds tolerations.
func (w *PodWrapper) Tolerations(ts ...corev1.Toleration) *PodWrapper {
	w.Spec.Tolerations = append(w.Spec.Tolerations, ts...)
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

// Condition adds a status condition.
func (w *PodWrapper) Condition(c corev1.PodCondition) *PodWrapper {
	w.Status.Conditions = append(w.Status.Conditions, c)
	return w
}

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

// Node is the node most tests start from: allocatable and capacity a copy of the list, which
// holds 110 pods unless it says otherwise.
func Node(name string, allocatable corev1.ResourceList) *NodeWrapper {
	list := allocatable.DeepCopy()
	if _, ok := list[corev1.ResourcePods]; !ok {
		list[corev1.ResourcePods] = resource.MustParse("110")
	}
	return MakeNode().Name(name).Allocatable(list).Capacity(list)
}

// Obj returns the node built.
func (w *NodeWrapper) Obj() *corev1.Node { return &w.Node }

// Name sets the name.
func (w *NodeWrapper) Name(name string) *NodeWrapper { w.Node.Name = name; return w }

// Allocatable sets status.allocatable (the list itself, not a copy).
func (w *NodeWrapper) Allocatable(list corev1.ResourceList) *NodeWrapper {
	w.Status.Allocatable = list
	return w
}

// Capacity sets status.capacity (the list itself, not a copy).
func (w *NodeWrapper) Capacity(list corev1.ResourceList) *NodeWrapper {
	w.Status.Capacity = list
	return w
}

// Labels sets the labels.
func (w *NodeWrapper) Labels(labels map[string]string) *NodeWrapper { w.Node.Labels = labels; return w }

// Label sets one label.
func (w *NodeWrapper) Label(key, value string) *NodeWrapper {
	setKey(&w.Node.Labels, key, value)
	return w
}

// Annotation sets one annotation.
func (w *NodeWrapper) Annotation(key, value string) *NodeWrapper {
	setKey(&w.Annotations, key, value)
	return w
}

// Taints sets the taints.
func (w *NodeWrapper) Taints(taints ...corev1.Taint) *NodeWrapper { w.Spec.Taints = taints; return w }

// Unschedulable cordons the node.
func (w *NodeWrapper) Unschedulable() *NodeWrapper { w.Spec.Unschedulable = true; return w }

// PodGroupWrapper builds a PodGroup step by step: MakePodGroup().Namespace("ns").Name("pg").
// Queue("q").MinMember(2).Obj(). It starts with no phase.
type PodGroupWrapper struct{ schedulingv1beta1.PodGroup }

// MakePodGroup is an empty PodGroup.
func MakePodGroup() *PodGroupWrapper { return &PodGroupWrapper{} }

// Obj returns the PodGroup built.
func (w *PodGroupWrapper) Obj() *schedulingv1beta1.PodGroup { return &w.PodGroup }

// Namespace sets the namespace.
func (w *PodGroupWrapper) Namespace(ns string) *PodGroupWrapper { w.PodGroup.Namespace = ns; return w }

// Name sets the name.
func (w *PodGroupWrapper) Name(name string) *PodGroupWrapper { w.PodGroup.Name = name; return w }

// UID sets the UID.
func (w *PodGroupWrapper) UID(uid string) *PodGroupWrapper { w.PodGroup.UID = types.UID(uid); return w }

// ResourceVersion sets the resource version.
func (w *PodGroupWrapper) ResourceVersion(rv string) *PodGroupWrapper {
	w.PodGroup.ResourceVersion = rv
	return w
}

// Created sets the creation time to At(i).
func (w *PodGroupWrapper) Created(i int) *PodGroupWrapper { return w.CreatedAt(At(i)) }

// CreatedAt sets the creation time.
func (w *PodGroupWrapper) CreatedAt(t metav1.Time) *PodGroupWrapper {
	w.CreationTimestamp = t
	return w
}

// Queue sets the queue.
func (w *PodGroupWrapper) Queue(queue string) *PodGroupWrapper { w.Spec.Queue = queue; return w }

// MinMember sets minMember.
func (w *PodGroupWrapper) MinMember(n int32) *PodGroupWrapper { w.Spec.MinMember = n; return w }

// MinTaskMember sets minTaskMember.
func (w *PodGroupWrapper) MinTaskMember(m map[string]int32) *PodGroupWrapper {
	w.Spec.MinTaskMember = m
	return w
}

// MinResources sets minResources to the list; a nil list leaves it unset.
func (w *PodGroupWrapper) MinResources(list corev1.ResourceList) *PodGroupWrapper {
	if list != nil {
		w.Spec.MinResources = &list
	}
	return w
}

// Phase sets the phase.
func (w *PodGroupWrapper) Phase(p schedulingv1beta1.PodGroupPhase) *PodGroupWrapper {
	w.Status.Phase = p
	return w
}

// Conditions sets the status conditions.
func (w *PodGroupWrapper) Conditions(cs ...schedulingv1beta1.PodGroupCondition) *PodGroupWrapper {
	w.Status.Conditions = cs
	return w
}

// QueueWrapper builds a Queue step by step: MakeQueue().Name("q").Weight(1).Obj().
type QueueWrapper struct{ schedulingv1beta1.Queue }

// MakeQueue is an Open queue of weight 0.
func MakeQueue() *QueueWrapper {
	return &QueueWrapper{schedulingv1beta1.Queue{Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen}}}
}

// Obj returns the queue built.
func (w *QueueWrapper) Obj() *schedulingv1beta1.Queue { return &w.Queue }

// Name sets the name.
func (w *QueueWrapper) Name(name string) *QueueWrapper { w.Queue.Name = name; return w }

// ResourceVersion sets the resource version.
func (w *QueueWrapper) ResourceVersion(rv string) *QueueWrapper {
	w.Queue.ResourceVersion = rv
	return w
}

// Created sets the creation time to At(i).
func (w *QueueWrapper) Created(i int) *QueueWrapper { w.CreationTimestamp = At(i); return w }

// Weight sets the weight.
func (w *QueueWrapper) Weight(weight int32) *QueueWrapper { w.Spec.Weight = weight; return w }

// Priority sets the priority.
func (w *QueueWrapper) Priority(p int32) *QueueWrapper { w.Spec.Priority = p; return w }

// Capability sets the capability.
func (w *QueueWrapper) Capability(list corev1.ResourceList) *QueueWrapper {
	w.Spec.Capability = list
	return w
}

// State sets the state.
func (w *QueueWrapper) State(s schedulingv1beta1.QueueState) *QueueWrapper {
	w.Status.State = s
	return w
}
