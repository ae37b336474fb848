package assignment

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu/upstreamtest"
)

// TestServesUpstreamSchedulerPods: a pod exactly as upstream vc-scheduler leaves it (golden
// in upstreamtest/testdata) is served container by container, in the order kubelet admits
// them, each with the GPUs and limits upstream assigned; and after every call what upstream
// schedulers read back from the pod is what they expect: vgpu-ids-new untouched (the same
// booking), devices-to-allocate in their format, bind-phase "allocating" until the last
// container, then exactly "success" with vgpu-time MaxUint64, which the v1.16 line reads as
// "the device plugin owns it" and keeps when it undoes a placement.
func TestServesUpstreamSchedulerPods(t *testing.T) {
	calls := []struct {
		count           int
		visible, limits string
	}{
		{count: 1, visible: gpuA, limits: "2000m"},
		{count: 1, visible: gpuB, limits: "143771m"},
		{count: 2, visible: gpuB + "," + gpuA, limits: "3000m 3000m"},
	}
	for _, g := range upstreamtest.Pods() {
		t.Run(g.File, func(t *testing.T) {
			env := newTestEnv(t, 1, g.Pod)
			booked, err := upstreamtest.Booked([]*corev1.Pod{g.Pod})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range calls {
				resp, err := env.allocate(c.count)
				if err != nil {
					t.Fatalf("Allocate %d: %v", i, err)
				}
				limits := []string{resp.Envs["CUDA_DEVICE_MEMORY_LIMIT_0"]}
				if c.count == 2 {
					limits = append(limits, resp.Envs["CUDA_DEVICE_MEMORY_LIMIT_1"])
				}
				if got := resp.Envs["NVIDIA_VISIBLE_DEVICES"]; got != c.visible || strings.Join(limits, " ") != c.limits {
					t.Errorf("Allocate %d: GPUs %q limits %v, want %q %s", i, got, limits, c.visible, c.limits)
				}

				pod := env.pod(t, g.Pod.Name)
				if after, err := upstreamtest.Booked([]*corev1.Pod{pod}); err != nil || !equalBookings(after, booked) {
					t.Errorf("Allocate %d: upstream books %v, %v; before %v", i, after, err, booked)
				}
				if _, err := upstreamtest.DecodePodDevices(pod.Annotations[vgpu.DevicesToAllocateAnnotation]); err != nil {
					t.Errorf("Allocate %d: upstream cannot read %s: %v", i, vgpu.DevicesToAllocateAnnotation, err)
				}
				last := i == len(calls)-1
				phase, at := pod.Annotations[upstreamtest.BindPhaseKey], pod.Annotations[upstreamtest.AssignedTimeKey]
				switch {
				case last && (phase != "success" || at != upstreamtest.Released):
					t.Errorf("after the last container: bind phase %q, vgpu-time %q", phase, at)
				case !last && phase != "allocating":
					t.Errorf("Allocate %d: bind phase %q before the last container", i, phase)
				}
				if keeps := upstreamtest.SchedulerV1_16.KeepsOnRelease(pod); keeps != last {
					t.Errorf("Allocate %d: v1.16 keeps the annotations on release: %t, want %t", i, keeps, last)
				}
			}
		})
	}
}

func equalBookings(a, b map[string][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRefusesUpstreamV113PercentageBooking: Volcano v1.13 books 0 memory for any memory
// percentage under 100 (it divides the percentage by 100 in integers before multiplying).
// The pod is refused and marked failed rather than started with a 0 limit, which HAMi-core
// would not enforce, on memory the scheduler did not book.
func TestRefusesUpstreamV113PercentageBooking(t *testing.T) {
	c := ctr("half", 1, 0, 0)
	c.Resources.Limits[names.MemoryPercentage] = *resource.NewQuantity(50, resource.DecimalSI)
	pod := assigned("p", 100, []corev1.Container{c}, vgpu.PodDevices{{dev(gpuA, 0, 0)}})
	env := newTestEnv(t, 1, &pod)
	if _, err := env.allocate(1); err == nil || !strings.Contains(err.Error(), "books 0 memory units") {
		t.Fatalf("Allocate: %v, want a refusal naming the booking", err)
	}
	if got := env.pod(t, "p").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseFailed {
		t.Errorf("bind phase %q, want %q", got, vgpu.BindPhaseFailed)
	}
}
