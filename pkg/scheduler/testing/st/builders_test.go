package st

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestAtAndResources(t *testing.T) {
	if got, want := At(90).Time, Epoch.Add(90e9); !got.Equal(want) {
		t.Errorf("At(90) = %v, want %v", got, want)
	}
	got := Resources("500m", "", "pods", "3", "dangling")
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourcePods: resource.MustParse("3")}
	if !cmp.Equal(got, want) {
		t.Errorf("Resources: %s", cmp.Diff(want, got))
	}
}

func TestMakePod(t *testing.T) {
	if got := MakePod().Obj(); got.Status.Phase != corev1.PodPending || len(got.Spec.Containers) != 0 {
		t.Errorf("MakePod() = %+v, want a Pending pod without containers", got)
	}
	prio := int32(7)
	toleration := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists}
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "f"}}}
	owner := metav1.OwnerReference{Kind: "Job", Name: "j"}
	cond := corev1.PodCondition{Type: corev1.PodScheduled}
	deleted := metav1.NewTime(Epoch)
	got := MakePod().Namespace("ns").Name("p").ResourceVersion("4").Created(2).Label("l", "v").
		Group("pg").Annotation("a", "b").Owner(owner).
		Container(Resources("1", "")).Container(nil).Containers(corev1.Container{Name: "x"}).
		SchedulerName("volcano").PriorityClassName("high").Priority(prio).NodeSelector(map[string]string{"s": "t"}).
		RequiredNodeAffinity(term).Tolerations(toleration).Gated().Node("n").Phase(corev1.PodRunning).
		Condition(cond).Terminating().Obj()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "ns-p", ResourceVersion: "4", CreationTimestamp: At(2),
			DeletionTimestamp: &deleted, Labels: map[string]string{"l": "v"},
			Annotations:     map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: "pg", "a": "b"},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "c", Resources: corev1.ResourceRequirements{Requests: Resources("1", "")}},
				{Name: "c1"},
				{Name: "x"},
			},
			SchedulerName: "volcano", PriorityClassName: "high", Priority: &prio, NodeSelector: map[string]string{"s": "t"}, NodeName: "n",
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}},
			Tolerations:     []corev1.Toleration{toleration},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "wait"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{cond}},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("pod (-want +got):\n%s", cmp.Diff(want, got))
	}

	// An explicit UID wins, whichever comes first; a preferred affinity replaces a required one.
	pref := corev1.PreferredSchedulingTerm{Weight: 3, Preference: term}
	for _, p := range []*corev1.Pod{
		MakePod().UID("u").Name("p").RequiredNodeAffinity(term).PreferredNodeAffinity(pref).Obj(),
		MakePod().Name("p").UID("u").RequiredNodeAffinity(term).PreferredNodeAffinity(pref).Obj(),
	} {
		if p.UID != "u" {
			t.Errorf("UID %q, want u", p.UID)
		}
		if a := p.Spec.Affinity.NodeAffinity; a.RequiredDuringSchedulingIgnoredDuringExecution != nil ||
			!cmp.Equal(a.PreferredDuringSchedulingIgnoredDuringExecution, []corev1.PreferredSchedulingTerm{pref}) {
			t.Errorf("affinity %+v, want only the preferred term", a)
		}
	}
}

func TestPod(t *testing.T) {
	got := Pod("p", "1", "").HostPort(8080, corev1.ProtocolUDP, "10.0.0.1").Obj()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p", ResourceVersion: "1"},
		Spec: corev1.PodSpec{SchedulerName: "volcano", Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: Resources("1", "")},
			Ports:     []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.1"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("pod (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// Node copies the list it is given and adds 110 pods unless the list has a pod count.
func TestNode(t *testing.T) {
	list := Resources("4", "")
	got := Node("n", list).Obj()
	if want := Resources("4", "", "pods", "110"); !cmp.Equal(got.Status.Allocatable, want) || !cmp.Equal(got.Status.Capacity, want) {
		t.Errorf("allocatable %v, capacity %v, want %v", got.Status.Allocatable, got.Status.Capacity, want)
	}
	if len(list) != 1 {
		t.Errorf("Node changed the list it was given: %v", list)
	}
	if got := Node("n", Resources("", "", "pods", "3")).Obj().Status.Allocatable; !cmp.Equal(got, Resources("", "", "pods", "3")) {
		t.Errorf("allocatable %v, want the 3 pods given", got)
	}
}

func TestMakeNode(t *testing.T) {
	alloc, capacity := Resources("4", "8Gi"), Resources("8", "")
	taint := corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}
	got := MakeNode().Name("n").Allocatable(alloc).Capacity(capacity).Labels(map[string]string{"a": "1"}).
		Label("b", "2").Annotation("x", "y").Taints(taint).Unschedulable().Obj()
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{"x": "y"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{taint}, Unschedulable: true},
		Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: capacity},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("node (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := MakeNode().Allocatable(alloc).Obj(); got.Status.Capacity != nil {
		t.Errorf("Allocatable set capacity %v", got.Status.Capacity)
	}
}

func TestEventLog(t *testing.T) {
	var l EventLog
	l.Eventf(MakePod().Namespace("ns").Name("p").Obj(), corev1.EventTypeWarning, "Evict", "by %s", "q")
	l.AnnotatedEventf(MakeQueue().Name("q").Obj(), nil, corev1.EventTypeNormal, "Open", "now")
	l.Event(&corev1.PodList{}, corev1.EventTypeNormal, "Listed", "all")
	want := []string{"Pod ns/p Warning Evict: by q", "Queue /q Normal Open: now", "*v1.PodList Normal Listed: all"}
	if got := l.Take(); !cmp.Equal(got, want) {
		t.Errorf("events (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := l.Take(); got != nil {
		t.Errorf("second Take = %q, want none", got)
	}
}

func TestMakePodGroup(t *testing.T) {
	if got := MakePodGroup().MinResources(nil).Obj(); !cmp.Equal(got, &schedulingv1beta1.PodGroup{}) {
		t.Errorf("MakePodGroup().MinResources(nil) = %+v, want an empty PodGroup", got)
	}
	min := Resources("2", "")
	cond := schedulingv1beta1.PodGroupCondition{Type: schedulingv1beta1.PodGroupUnschedulableType}
	got := MakePodGroup().Namespace("ns").Name("pg").UID("u").ResourceVersion("3").Created(5).Queue("q").
		MinMember(2).MinTaskMember(map[string]int32{"w": 1}).MinResources(min).
		Phase(schedulingv1beta1.PodGroupInqueue).Conditions(cond).Obj()
	want := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg", UID: "u", ResourceVersion: "3", CreationTimestamp: At(5)},
		Spec: schedulingv1beta1.PodGroupSpec{Queue: "q", MinMember: 2, MinTaskMember: map[string]int32{"w": 1},
			MinResources: &min},
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupInqueue,
			Conditions: []schedulingv1beta1.PodGroupCondition{cond}},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("PodGroup (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := MakePodGroup().CreatedAt(metav1.Unix(9, 0)).Obj().CreationTimestamp; !got.Equal(&metav1.Time{Time: metav1.Unix(9, 0).Time}) {
		t.Errorf("CreatedAt: %v", got)
	}
}

func TestMakeQueue(t *testing.T) {
	if got := MakeQueue().Obj(); got.Status.State != schedulingv1beta1.QueueStateOpen || got.Spec.Weight != 0 {
		t.Errorf("MakeQueue() = %+v, want an Open queue of weight 0", got)
	}
	capability := Resources("8", "")
	got := MakeQueue().Name("q").ResourceVersion("2").Created(1).Weight(3).Priority(4).Capability(capability).
		State(schedulingv1beta1.QueueStateClosed).Obj()
	want := &schedulingv1beta1.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: "q", ResourceVersion: "2", CreationTimestamp: At(1)},
		Spec:       schedulingv1beta1.QueueSpec{Weight: 3, Priority: 4, Capability: capability},
		Status:     schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateClosed},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("queue (-want +got):\n%s", cmp.Diff(want, got))
	}
}
