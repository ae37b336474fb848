package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

const a100 = "NVIDIA-NVIDIA A100-SXM4-40GB"

// waitingCluster has three healthy GPUs with 14960, 10960 and 6144 MiB free (the last with
// both its slices taken) and an unhealthy one with all of its memory free. team-a/train's
// two pods run on node-1; team-a/finetune-0 asks 20000 MiB, which no GPU has, and its
// PodGroup is Inqueue with the scheduler's Unschedulable condition and Events. team-a/web
// has no PodGroup; team-a/lost names one that does not exist.
func waitingCluster(t *testing.T) []runtime.Object {
	t.Helper()
	gpu := func(uuid string, split int32, mib int32, healthy bool) vgpu.NodeDevice {
		return vgpu.NodeDevice{UUID: uuid, Count: split, Memory: mib, Type: a100, Healthy: healthy, Mode: vgpu.ModeHAMiCore}
	}
	on := func(uuid string, mib, cores int32) vgpu.PodDevices {
		return vgpu.PodDevices{{{UUID: uuid, Type: vgpu.DeviceTypeNVIDIA, UsedMemory: mib, UsedCores: cores}}}
	}
	finetune := inGroup(vgpuPod(t, "team-a", "finetune-0", "", corev1.PodPending, nil, worker(20000, 50)), "finetune")
	finetune.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 hami-vgpuDeviceSharing error: not enough GPU memory on the GPU."}}
	train0 := inGroup(vgpuPod(t, "team-a", "train-0", "node-1", corev1.PodRunning, on("GPU-1a", 15000, 30), worker(15000, 30)), "train")
	train1 := inGroup(vgpuPod(t, "team-a", "train-1", "node-1", corev1.PodRunning, on("GPU-1a", 15000, 30), worker(15000, 30)), "train")
	for _, p := range []*corev1.Pod{train0, train1} {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	}
	lost := inGroup(vgpuPod(t, "team-a", "lost", "", corev1.PodPending, nil, worker(1000, 0)), "gone")
	web := vgpuPod(t, "team-a", "web", "node-2", corev1.PodRunning, nil, corev1.Container{Name: "nginx"})
	web.Spec.SchedulerName = corev1.DefaultSchedulerName
	return []runtime.Object{
		namespace("team-a"), namespace("team-b"),
		gpuNode(t, "node-1", "", gpu("GPU-1a", 10, 40960, true), gpu("GPU-1b", 10, 40960, true)),
		gpuNode(t, "node-2", "", gpu("GPU-2a", 2, 24576, true)),
		gpuNode(t, "node-3", "", gpu("GPU-3a", 10, 40960, false)),
		train0, train1, finetune, lost, web,
		vgpuPod(t, "team-b", "infer-0", "node-1", corev1.PodRunning, on("GPU-1b", 26000, 40), worker(26000, 40)),
		vgpuPod(t, "team-b", "embed-0", "node-2", corev1.PodRunning, on("GPU-2a", 9216, 20), worker(9216, 20)),
		vgpuPod(t, "team-b", "embed-1", "node-2", corev1.PodRunning, on("GPU-2a", 9216, 20), worker(9216, 20)),
		event(finetune, "volcano", corev1.EventTypeWarning, "FailedScheduling", "0/3 nodes are available: 3 hami-vgpuDeviceSharing error: not enough GPU memory on the GPU.", 9, time.Minute),
		event(train0, "volcano", corev1.EventTypeNormal, "Scheduled", "Successfully assigned team-a/train-0 to node-1", 1, 2*time.Hour),
		event(train0, "kubelet", corev1.EventTypeNormal, "Started", "Started container main", 1, 2*time.Hour-time.Minute),
		event(train1, "volcano", corev1.EventTypeNormal, "Scheduled", "Successfully assigned team-a/train-1 to node-1", 1, 2*time.Hour),
		event(podGroup("finetune", "", nil), "volcano", corev1.EventTypeWarning, "Unschedulable",
			"1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable", 12, 5*time.Minute),
		event(podGroup("train", "", nil), "volcano", corev1.EventTypeNormal, "Scheduled", "pod group is ready", 1, 2*time.Hour),
	}
}

// waitingGroups are the PodGroups of waitingCluster, with minResources as Volcano's job
// controller computes them from the pods.
func waitingGroups() []runtime.Object {
	return []runtime.Object{
		podGroup("finetune", schedulingv1beta1.PodGroupInqueue, []schedulingv1beta1.PodGroupCondition{{
			Type: schedulingv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Reason: "NotEnoughResources",
			Message: "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"}}),
		podGroup("train", schedulingv1beta1.PodGroupRunning, []schedulingv1beta1.PodGroupCondition{{
			Type: schedulingv1beta1.PodGroupScheduled, Status: corev1.ConditionTrue, Reason: "tasks in gang are ready to be scheduled"}}),
	}
}

func TestWhyGolden(t *testing.T) {
	noDevicePlugin := []runtime.Object{namespace("team-a"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}}
	for _, tt := range []goldenCase{
		{name: "why-pending", args: "why finetune-0 -n team-a"},
		{name: "why-bound", args: "why pod/train-0"},
		{name: "why-podgroup", args: "why podgroup/train"},
		{name: "why-events-forbidden", args: "why finetune-0", react: forbid("list", "events", "team-a")},
		{name: "error-why-pod-not-found", args: "why nope"},
		{name: "error-why-podgroup-not-found", args: "why pg/nope"},
		{name: "error-why-no-podgroup", args: "why web"},
		{name: "error-why-podgroup-missing", args: "why lost"},
		{name: "error-why-forbidden", args: "why train-0", react: forbid("get", "pods", "team-a")},
		{name: "error-why-forbidden-podgroups", args: "why train-0", react: forbid("get", "podgroups", "team-a")},
		{name: "error-why-no-vgpu-nodes", args: "why finetune-0",
			objects: append(noDevicePlugin, inGroup(vgpuPod(t, "team-a", "finetune-0", "", corev1.PodPending, nil, worker(20000, 50)), "finetune"))},
		{name: "error-why-bad-target", args: "why deploy/train"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.objects == nil {
				tt.objects = waitingCluster(t)
			}
			tt.volcano = waitingGroups()
			runGolden(t, tt)
		})
	}
}

// inGroup puts pod in PodGroup group of scheduler volcano, as Volcano's job controller does.
func inGroup(pod *corev1.Pod, group string) *corev1.Pod {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey] = group
	pod.Spec.SchedulerName = "volcano"
	pod.UID = types.UID("uid-" + pod.Name)
	return pod
}

// worker asks one vGPU of memory MiB and cores percent beside cpu and memory.
func worker(memory, cores int64) corev1.Container {
	c := asks("main", 1, memory, cores)
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		list[corev1.ResourceCPU] = resource.MustParse("8")
		list[corev1.ResourceMemory] = resource.MustParse("32Gi")
	}
	return c
}

func podGroup(name string, phase schedulingv1beta1.PodGroupPhase, conditions []schedulingv1beta1.PodGroupCondition) *schedulingv1beta1.PodGroup {
	minResources := corev1.ResourceList{
		corev1.ResourceCPU:         resource.MustParse("8"),
		corev1.ResourceMemory:      resource.MustParse("32Gi"),
		vgpu.DefaultCountResource:  resource.MustParse("1"),
		vgpu.DefaultMemoryResource: resource.MustParse("20000"),
	}
	return &schedulingv1beta1.PodGroup{
		TypeMeta:   metav1.TypeMeta{Kind: "PodGroup", APIVersion: schedulingv1beta1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-pg-" + name)},
		Spec:       schedulingv1beta1.PodGroupSpec{MinMember: 1, Queue: "team-a", MinResources: &minResources},
		Status:     schedulingv1beta1.PodGroupStatus{Phase: phase, Conditions: conditions},
	}
}

// event is an Event on obj (a pod or a PodGroup) from component, last seen ago before
// goldenNow.
func event(obj metav1.Object, component, eventType, reason, message string, count int32, ago time.Duration) *corev1.Event {
	kind := "Pod"
	if _, ok := obj.(*schedulingv1beta1.PodGroup); ok {
		kind = "PodGroup"
	}
	last := metav1.NewTime(goldenNow.Add(-ago))
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName() + "." + reason + "." + component},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()},
		Type:           eventType, Reason: reason, Message: message, Count: count,
		Source:         corev1.EventSource{Component: component},
		FirstTimestamp: last, LastTimestamp: last,
	}
}

// The GPUs measured for a pending pod are those of the nodes its spec lets it run on: its node
// selector and required node affinity, and the taints it tolerates.
func TestWhyMeasuresOnlyTheNodesThePodMayUse(t *testing.T) {
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *vgpuNode {
		return &vgpuNode{name: name, node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}}
	}
	dedicated := corev1.Taint{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}
	nodes := map[string]*vgpuNode{
		"a100-1": node("a100-1", map[string]string{"gpu": "a100"}),
		"a100-2": node("a100-2", map[string]string{"gpu": "a100"}, dedicated),
		"t4-1":   node("t4-1", map[string]string{"gpu": "t4"}),
	}
	gpus := []gpuBooking{{Node: "a100-1", UUID: "GPU-1"}, {Node: "a100-2", UUID: "GPU-2"}, {Node: "t4-1", UUID: "GPU-3"}}
	uuids := func(pod *corev1.Pod) []string {
		var out []string
		for _, g := range gpusFor(pod, gpus, nodes) {
			out = append(out, g.UUID)
		}
		return out
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"gpu": "a100"}}}
	if got := uuids(pod); len(got) != 1 || got[0] != "GPU-1" {
		t.Errorf("a pod selecting a100 nodes, not tolerating dedicated: measured %v, want [GPU-1]", got)
	}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
	if got := uuids(pod); len(got) != 2 {
		t.Errorf("tolerating dedicated: measured %v, want GPU-1 and GPU-2", got)
	}
	pod.Spec.NodeSelector = nil
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"t4"}}}}}}}}
	if got := uuids(pod); len(got) != 1 || got[0] != "GPU-3" {
		t.Errorf("requiring t4 by node affinity: measured %v, want [GPU-3]", got)
	}
}
