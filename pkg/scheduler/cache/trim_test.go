package cache

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

func podAsking(limits, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main",
		Resources: corev1.ResourceRequirements{Limits: limits, Requests: requests}}}}}
}

func vgpuList(cpu, memoryMiB string) corev1.ResourceList {
	return st.Resources(cpu, "", "volcano.sh/vgpu-memory", memoryMiB)
}

func sameMap(a, b corev1.ResourceList) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Pods whose containers ask the same (however the quantities were written) share one copy
// of the requirements, which still reads as each asked; others keep their own.
func TestTrimSharesEqualRequirements(t *testing.T) {
	trim := newTrimmer()
	a := podAsking(vgpuList("1", "8192"), vgpuList("500m", "8192"))
	b := podAsking(vgpuList("1000m", "8192"), vgpuList("0.5", "8192"))
	c := podAsking(vgpuList("1", "4096"), vgpuList("500m", "4096"))
	claims := podAsking(vgpuList("1", "8192"), vgpuList("500m", "8192"))
	claims.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	// Two pods whose lists are too long to keep: each holds its own.
	long := func() *corev1.Pod {
		l := corev1.ResourceList{}
		for i := range maxSharedResources + 1 {
			l[corev1.ResourceName(fmt.Sprintf("example.com/r%d", i))] = resource.MustParse("1")
		}
		return podAsking(l, nil)
	}
	long1, long2 := long(), long()
	pods := map[string]*corev1.Pod{"a": a, "b": b, "c": c, "claims": claims, "long1": long1, "long2": long2}
	want := map[string]corev1.ResourceRequirements{}
	for name, p := range pods {
		want[name] = *p.Spec.Containers[0].Resources.DeepCopy()
		if _, err := trim.trim(p); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range pods {
		if diff := cmp.Diff(want[name], p.Spec.Containers[0].Resources); diff != "" {
			t.Errorf("pod %s's requirements changed (-want +got):\n%s", name, diff)
		}
	}
	ra, rb, rc := a.Spec.Containers[0].Resources, b.Spec.Containers[0].Resources, c.Spec.Containers[0].Resources
	if !sameMap(ra.Limits, rb.Limits) || !sameMap(ra.Requests, rb.Requests) {
		t.Error("pods a and b ask the same but hold separate copies")
	}
	if sameMap(ra.Limits, rc.Limits) || sameMap(ra.Requests, rc.Requests) {
		t.Error("pods a and c ask different memory but share a copy")
	}
	if rcl := claims.Spec.Containers[0].Resources; sameMap(ra.Limits, rcl.Limits) {
		t.Error("a container with resource claims shares another's requirements")
	}
	if sameMap(long1.Spec.Containers[0].Resources.Limits, long2.Spec.Containers[0].Resources.Limits) {
		t.Errorf("requirements naming more than %d resources were kept and shared", maxSharedResources)
	}
}

// The copies kept are bounded, however many distinct requirements the pods ask.
func TestTrimKeepsBoundedCopies(t *testing.T) {
	trim := newTrimmer()
	for i := range maxSharedRequirements + 10 {
		cpu := fmt.Sprintf("%dm", i+1)
		if _, err := trim.trim(podAsking(vgpuList(cpu, "1"), nil)); err != nil {
			t.Fatal(err)
		}
		if n := len(trim.requirements); n > maxSharedRequirements {
			t.Fatalf("%d copies kept after %d pods, want at most %d", n, i+1, maxSharedRequirements)
		}
	}
	for i := range maxSharedStrings + 10 {
		p := podAsking(nil, nil)
		p.Annotations = map[string]string{"volcano.sh/bind-time": fmt.Sprint(i)}
		if _, err := trim.trim(p); err != nil {
			t.Fatal(err)
		}
		if n := len(trim.strings); n > maxSharedStrings {
			t.Fatalf("%d strings kept after %d pods, want at most %d", n, i+1, maxSharedStrings)
		}
	}
}

// Pods' annotation keys and short values are one shared copy; a long value (a device
// assignment) stays the pod's own; every pod still reads what it had.
func TestTrimSharesAnnotationStrings(t *testing.T) {
	trim := newTrimmer()
	assignment := strings.Repeat("GPU-0123456789abcdef,NVIDIA,8192,10:", 3)
	annotations := func() map[string]string {
		// Built from pieces so that each pod's strings start as separate copies.
		return map[string]string{
			strings.Clone("volcano.sh/vgpu-node"):    strings.Clone("node-1"),
			strings.Clone("volcano.sh/vgpu-ids-new"): strings.Clone(assignment),
		}
	}
	a, b := podAsking(nil, nil), podAsking(nil, nil)
	a.Annotations, b.Annotations = annotations(), annotations()
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := trim.trim(p); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(annotations(), p.Annotations); diff != "" {
			t.Errorf("annotations changed (-want +got):\n%s", diff)
		}
	}
	data := func(p *corev1.Pod, key string) (keyData, valueData *byte) {
		for k, v := range p.Annotations {
			if k == key {
				return unsafe.StringData(k), unsafe.StringData(v)
			}
		}
		t.Fatalf("no annotation %s", key)
		return nil, nil
	}
	ak, av := data(a, "volcano.sh/vgpu-node")
	bk, bv := data(b, "volcano.sh/vgpu-node")
	if ak != bk || av != bv {
		t.Error("the pods' equal node annotations are separate copies")
	}
	_, aa := data(a, "volcano.sh/vgpu-ids-new")
	_, ba := data(b, "volcano.sh/vgpu-ids-new")
	if aa == ba {
		t.Error("a long annotation value was shared")
	}
}
