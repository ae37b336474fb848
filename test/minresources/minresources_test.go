package minresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// list builds a ResourceList from name/quantity pairs.
func list(pairs ...string) corev1.ResourceList {
	return st.Resources("", "", pairs...)
}

// podWith is a pod whose containers have the given requirements.
func podWith(containers ...corev1.ResourceRequirements) *corev1.Pod {
	w := st.MakePod().Phase("")
	for _, r := range containers {
		w.Containers(corev1.Container{Name: "c", Resources: r})
	}
	return w.Obj()
}

// semanticList compares ResourceLists by value, not by the quantities' formatting.
var semanticList = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestQuotaUsage(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{
			name: "live pod: API server copied the vGPU limits into requests",
			pod: podWith(corev1.ResourceRequirements{
				Requests: list("cpu", "500m", "memory", "1Gi", "volcano.sh/vgpu-number", "1", "volcano.sh/vgpu-memory", "2000"),
				Limits:   list("cpu", "1", "volcano.sh/vgpu-number", "1", "volcano.sh/vgpu-memory", "2000"),
			}),
			want: list("count/pods", "1", "pods", "1",
				"cpu", "500m", "requests.cpu", "500m", "limits.cpu", "1",
				"memory", "1Gi", "requests.memory", "1Gi",
				"volcano.sh/vgpu-number", "1", "requests.volcano.sh/vgpu-number", "1",
				"volcano.sh/vgpu-memory", "2000", "requests.volcano.sh/vgpu-memory", "2000"),
		},
		{
			name: "template with vGPU only under limits: no vGPU dimension at all",
			pod: podWith(corev1.ResourceRequirements{
				Limits: list("volcano.sh/vgpu-number", "1", "volcano.sh/vgpu-memory", "3000", "volcano.sh/vgpu-cores", "30"),
			}),
			want: list("count/pods", "1", "pods", "1"),
		},
		{
			name: "containers add up; kubernetes.io resources and hugepages are not extended",
			pod: podWith(
				corev1.ResourceRequirements{Requests: list("cpu", "1", "example.kubernetes.io/thing", "1")},
				corev1.ResourceRequirements{Requests: list("cpu", "2", "hugepages-2Mi", "4Mi")},
			),
			want: list("count/pods", "1", "pods", "1", "cpu", "3", "requests.cpu", "3",
				"hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi"),
		},
		{
			name: "finished pod holds only its object count",
			pod: func() *corev1.Pod {
				p := podWith(corev1.ResourceRequirements{Requests: list("cpu", "1")})
				p.Status.Phase = corev1.PodSucceeded
				return p
			}(),
			want: list("count/pods", "1"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, PerPod(tt.pod), semanticList); diff != "" {
				t.Errorf("PerPod (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddScaled(t *testing.T) {
	total := list("cpu", "100m", "pods", "1")
	AddScaled(total, list("cpu", "250m", "volcano.sh/vgpu-memory", "2000"), 3)
	want := list("cpu", "850m", "pods", "1", "volcano.sh/vgpu-memory", "6000")
	if diff := cmp.Diff(want, total, semanticList); diff != "" {
		t.Errorf("AddScaled (-want +got):\n%s", diff)
	}
}
