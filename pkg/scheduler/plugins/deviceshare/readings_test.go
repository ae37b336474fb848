package deviceshare

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestReadingsFollowThePod: a pod's reading is reused while the pod, its assignment and the
// resource names are unchanged, read again when any of them changes, and readings no longer
// asked for are dropped once enough accumulate.
func TestReadingsFollowThePod(t *testing.T) {
	names := vgpu.DefaultResourceNames()
	task := func(uid, rv, assignment string) *api.TaskInfo {
		pod := &corev1.Pod{}
		pod.UID, pod.ResourceVersion = types.UID(uid), rv
		pod.Annotations = map[string]string{vgpu.AssignedDevicesAnnotation: assignment}
		return &api.TaskInfo{Pod: pod}
	}
	r := newReadings()
	first, ok := r.of(task("u1", "1", "GPU-a,NVIDIA,1000,10:;"), names)
	if !ok || first.devicesErr != nil || first.devices[0][0].UsedMemory != 1000 {
		t.Fatalf("first reading: %+v, %v", first, ok)
	}
	if again, _ := r.of(task("u1", "1", "GPU-a,NVIDIA,1000,10:;"), names); again != first {
		t.Error("an unchanged pod was read again")
	}
	for what, tk := range map[string]*api.TaskInfo{
		"a new resource version": task("u1", "2", "GPU-a,NVIDIA,1000,10:;"),
		"another assignment":     task("u1", "2", "GPU-a,NVIDIA,2000,10:;"),
	} {
		if rd, _ := r.of(tk, names); rd == first {
			t.Errorf("%s: the old reading was reused", what)
		}
	}
	other := names
	other.Count = "example.com/gpu"
	if rd, _ := r.of(task("u1", "2", "GPU-a,NVIDIA,2000,10:;"), other); rd.names != other {
		t.Error("other resource names: the old reading was reused")
	}
	if _, ok := r.of(&api.TaskInfo{Pod: &corev1.Pod{}}, names); ok {
		t.Error("a pod without an assignment has a reading")
	}

	for i := range minReadingsLimit {
		r.of(task(fmt.Sprintf("gone-%d", i), "1", "GPU-a,NVIDIA,1000,10:;"), names)
	}
	r.used = map[types.UID]struct{}{} // a sweep later: only what is asked for from now on stays
	r.of(task("kept", "1", "GPU-a,NVIDIA,1000,10:;"), names)
	r.limit = len(r.byUID)
	r.of(task("kept-too", "1", "GPU-a,NVIDIA,1000,10:;"), names)
	if len(r.byUID) != 2 {
		t.Errorf("after a sweep %d readings are kept, want the 2 asked for since the last one", len(r.byUID))
	}
}
