package allocate

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// The objects of the test clusters, all in namespace c1.

const ns = "c1"

func buildQueue(name string, priority int32, created int) *schedulingv1beta1.Queue {
	return st.MakeQueue().Name(name).Priority(priority).Created(created).Obj()
}

func buildPodGroup(name, queue string, minMember int32, phase schedulingv1beta1.PodGroupPhase, created int) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Namespace(ns).Name(name).Created(created).Queue(queue).MinMember(minMember).Phase(phase).Obj()
}

// buildPod is a pending pod of the group requesting requests; change it with the with* helpers.
func buildPod(name, group string, requests corev1.ResourceList, changes ...func(*st.PodWrapper)) *corev1.Pod {
	w := st.MakePod().Namespace(ns).Name(name).Group(group).Container(requests)
	for _, change := range changes {
		change(w)
	}
	return w.Obj()
}

func withPriority(prio int32) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.Priority(prio) }
}

func withRole(role string) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.Annotation("volcano.sh/task-spec", role) }
}

func withClaim(claim string) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) {
		w.Spec.Volumes = append(w.Spec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func withNodeSelector(sel map[string]string) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.NodeSelector(sel) }
}

func withGate() func(*st.PodWrapper) {
	return func(w *st.PodWrapper) { w.Gated() }
}

// runningOn makes the pod run on the node; releasing makes it one being deleted.
func runningOn(node string, releasing bool) func(*st.PodWrapper) {
	return func(w *st.PodWrapper) {
		w.Node(node).Phase(corev1.PodRunning)
		if releasing {
			w.Terminating()
		}
	}
}
