package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// vgpuPod is a live standalone pod asking for one vGPU slice; its requests are what the API
// server derives from its limits.
func vgpuPod(name string, owners ...metav1.OwnerReference) *corev1.Pod {
	vgpu := list("cpu", "1", "volcano.sh/vgpu-number", "1", "volcano.sh/vgpu-memory", "2000")
	w := st.MakePod().Namespace("demo").UID("pod-uid-"+name).Name(name).Phase("").
		Annotation(scheduling.QueueNameAnnotationKey, "gpu-small-queue").Annotation(scheduling.PodPreemptable, "true").
		Annotation("unrelated", "x").SchedulerName("volcano").PriorityClassName("high").
		Containers(corev1.Container{Name: "cuda", Resources: corev1.ResourceRequirements{Requests: vgpu, Limits: vgpu}})
	for _, o := range owners {
		w.Owner(o)
	}
	return w.Obj()
}

func replicaSet(annotations map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Name: "web-7d9f", Namespace: "demo", UID: "rs-uid", Annotations: annotations}}
}

var rsOwner = metav1.OwnerReference{
	APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid",
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
}

func TestStandalonePodGroup(t *testing.T) {
	perPod := list("count/pods", "1", "pods", "1", "cpu", "1", "requests.cpu", "1", "limits.cpu", "1",
		"volcano.sh/vgpu-number", "1", "requests.volcano.sh/vgpu-number", "1",
		"volcano.sh/vgpu-memory", "2000", "requests.volcano.sh/vgpu-memory", "2000")
	timesThree := corev1.ResourceList{}
	minresources.AddScaled(timesThree, perPod, 3)

	tests := []struct {
		name          string
		pod           *corev1.Pod
		owner         runtime.Object
		wantName      string
		wantOwner     metav1.OwnerReference
		wantMinMember int32
		wantMin       corev1.ResourceList
	}{
		{
			name:          "pod without owner: named after and owned by the pod",
			pod:           vgpuPod("solo"),
			wantName:      "podgroup-pod-uid-solo",
			wantOwner:     metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "solo", UID: "pod-uid-solo", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
			wantMinMember: 1,
			wantMin:       perPod,
		},
		{
			name:          "ReplicaSet pod: named after and owned by the ReplicaSet, min member from its annotation",
			pod:           vgpuPod("web-7d9f-abcde", rsOwner),
			owner:         replicaSet(map[string]string{scheduling.VolcanoGroupMinMemberAnnotationKey: "3"}),
			wantName:      "podgroup-rs-uid",
			wantOwner:     rsOwner,
			wantMinMember: 3,
			wantMin:       timesThree,
		},
		{
			name:          "malformed min member annotation counts as 1",
			pod:           vgpuPod("web-7d9f-abcde", rsOwner),
			owner:         replicaSet(map[string]string{scheduling.VolcanoGroupMinMemberAnnotationKey: "three"}),
			wantName:      "podgroup-rs-uid",
			wantOwner:     rsOwner,
			wantMinMember: 1,
			wantMin:       perPod,
		},
		{
			name:          "owner that cannot be read counts as 1",
			pod:           vgpuPod("web-7d9f-abcde", rsOwner),
			wantName:      "podgroup-rs-uid",
			wantOwner:     rsOwner,
			wantMinMember: 1,
			wantMin:       perPod,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kubeObjs := []runtime.Object{tt.pod}
			if tt.owner != nil {
				kubeObjs = append(kubeObjs, tt.owner)
			}
			cl := newCluster(t, kubeObjs, nil)
			c := newPodGroupController(cl.kube, cl.vc, cl.pods(), cl.podGroups(), []string{"volcano"})
			ctx := context.Background()
			if err := c.sync(ctx, "demo/"+tt.pod.Name); err != nil {
				t.Fatal(err)
			}

			pg, err := cl.vc.SchedulingV1beta1().PodGroups("demo").Get(ctx, tt.wantName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("podgroup %s: %v", tt.wantName, err)
			}
			want := scheduling.PodGroupSpec{
				MinMember: tt.wantMinMember, MinResources: &tt.wantMin,
				PriorityClassName: "high", Queue: "gpu-small-queue",
			}
			if diff := cmp.Diff(want, pg.Spec, semanticList); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]metav1.OwnerReference{tt.wantOwner}, pg.OwnerReferences); diff != "" {
				t.Errorf("ownerReferences (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]string{scheduling.PodPreemptable: "true"}, pg.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if pg.Status.Phase != scheduling.PodGroupPending {
				t.Errorf("phase = %q, want Pending", pg.Status.Phase)
			}
			pod, err := cl.kube.CoreV1().Pods("demo").Get(ctx, tt.pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations[scheduling.KubeGroupNameAnnotationKey]; got != tt.wantName {
				t.Errorf("pod group-name annotation = %q, want %q", got, tt.wantName)
			}
			if pod.Annotations["unrelated"] != "x" {
				t.Errorf("patch lost the pod's other annotations: %v", pod.Annotations)
			}
		})
	}
}

func TestPodGroupSyncSkips(t *testing.T) {
	otherScheduler := vgpuPod("other")
	otherScheduler.Spec.SchedulerName = "default-scheduler"
	grouped := vgpuPod("grouped")
	grouped.Annotations[scheduling.KubeGroupNameAnnotationKey] = "my-group"
	secondScheduler := vgpuPod("second")
	secondScheduler.Spec.SchedulerName = "volcano-gpu"

	tests := []struct {
		name        string
		pod         *corev1.Pod
		wantCreated bool
	}{
		{name: "pod of another scheduler", pod: otherScheduler},
		{name: "pod that already names its group", pod: grouped},
		{name: "pod of the second configured scheduler", pod: secondScheduler, wantCreated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, []runtime.Object{tt.pod}, nil)
			c := newPodGroupController(cl.kube, cl.vc, cl.pods(), cl.podGroups(), []string{"volcano", "volcano-gpu"})
			if err := c.sync(context.Background(), "demo/"+tt.pod.Name); err != nil {
				t.Fatal(err)
			}
			pgs, err := cl.vc.SchedulingV1beta1().PodGroups("demo").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(pgs.Items) == 1; got != tt.wantCreated {
				t.Errorf("podgroup created = %v, want %v (%d podgroups)", got, tt.wantCreated, len(pgs.Items))
			}
		})
	}
}

// A second sync after the PodGroup exists, or for a pod that is gone, writes no new
// PodGroup and does not fail.
func TestPodGroupSyncIdempotent(t *testing.T) {
	pod := vgpuPod("solo")
	existing := standalonePodGroup(pod, podGroupName(pod), 1)
	existing.Spec.Queue = "set-by-an-earlier-sync"
	cl := newCluster(t, []runtime.Object{pod}, []runtime.Object{existing})
	c := newPodGroupController(cl.kube, cl.vc, cl.pods(), cl.podGroups(), []string{"volcano"})
	ctx := context.Background()
	for _, key := range []string{"demo/solo", "demo/solo", "demo/gone"} {
		if err := c.sync(ctx, key); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
	for _, a := range cl.vc.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("unexpected podgroup write: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	got, err := cl.kube.CoreV1().Pods("demo").Get(ctx, "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[scheduling.KubeGroupNameAnnotationKey] != "podgroup-pod-uid-solo" {
		t.Errorf("pod not annotated: %v", got.Annotations)
	}
}
