//go:build unix

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// A single-pod job whose pod fails shows it on its PodGroup within 2 s of the pod's status
// write, as upstream v1.15.1 does in its next cycle (its e2e "PodGroup's Phase should be
// Completed when Job fails"): phase Completed, failed 1, running 0, and gang's Unschedulable
// condition in upstream's words beside the Scheduled one. The binary's cache over fake
// clientsets, the chart's configuration and the binary's scheduling loop at its default
// period (1 s); the job was created and bound moments before, as in that spec. Before this
// was fixed the failed pod left the gang short of its minimum within 30 s of its PodGroup's
// creation, which made it a gang still arriving, whose status is not written: the PodGroup
// stayed Running until 30 s after its creation.
func TestPodGroupFollowsItsFailedPod(t *testing.T) {
	w := benchWorkload(t, "singles.yaml")
	kube := kubefake.NewClientset()
	vc := vcfake.NewSimpleClientset() //nolint:staticcheck // NewClientset cannot store cluster-scoped Queues
	add(t, vc.Tracker(), &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: schedulingv1beta1.QueueSpec{Weight: 1}, Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen}})
	node := w.NodeObject("node-0")
	add(t, kube.Tracker(), node)
	job := w.Job("ns", "volcano", "fails", w.Mix[0])
	created := metav1.Now()
	pg := job.PodGroup
	pg.CreationTimestamp = created
	pg.Status = schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupRunning, Running: 1,
		Conditions: []schedulingv1beta1.PodGroupCondition{{Type: schedulingv1beta1.PodGroupScheduled, Status: corev1.ConditionTrue,
			Reason: gang.ScheduledReason, LastTransitionTime: created}}}
	add(t, vc.Tracker(), pg)
	pod := job.Pods[0]
	assignment, err := vgpu.PodDevices{{{UUID: nvml.FakeUUID(node.Name, 0), Type: vgpu.DeviceTypeNVIDIA,
		UsedMemory: int32(w.Mix[0].MemoryMiB)}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pod.CreationTimestamp = created
	pod.Annotations[vgpu.AssignedDevicesAnnotation] = assignment
	pod.Spec.NodeName, pod.Status.Phase = node.Name, corev1.PodRunning
	add(t, kube.Tracker(), pod)

	s, _ := startScheduler(t, kube, vc, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// The kubelet's write: the container exited 1.
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	failed := time.Now()
	if _, err := kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = "1/1 tasks in gang unschedulable: pod group is not ready, 1 Failed, 1 minAvailable"
	var last string
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := vc.SchedulingV1beta1().PodGroups(pg.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		last = fmt.Sprintf("phase %s, running %d, failed %d, conditions %+v", st.Phase, st.Running, st.Failed, st.Conditions)
		unschedulable, scheduled := conditionOf(st, schedulingv1beta1.PodGroupUnschedulableType), conditionOf(st, schedulingv1beta1.PodGroupScheduled)
		return st.Phase == schedulingv1beta1.PodGroupCompleted && st.Running == 0 && st.Failed == 1 &&
			unschedulable != nil && unschedulable.Status == corev1.ConditionTrue &&
			unschedulable.Reason == string(schedulingv1beta1.NotEnoughResourcesReason) && unschedulable.Message == want &&
			scheduled != nil && scheduled.Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("PodGroup %s/%s %v after its only pod failed (created %v before): %s; want Completed, failed 1, running 0, Unschedulable %q beside Scheduled",
			pg.Namespace, pg.Name, time.Since(failed).Round(time.Millisecond), failed.Sub(created.Time).Round(time.Millisecond), last, want)
	}
}

// conditionOf is the status's condition of a type, or nil.
func conditionOf(st schedulingv1beta1.PodGroupStatus, t schedulingv1beta1.PodGroupConditionType) *schedulingv1beta1.PodGroupCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}
