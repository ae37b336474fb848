package assignment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// boundAt marks pod bound by the API server at t, as its PodScheduled
// condition records it (to the second).
func boundAt(pod corev1.Pod, t time.Time) corev1.Pod {
	return with(pod, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(t.Truncate(time.Second))}}
	})
}

// twoWaiting are two pods bound a minute ago, each waiting for one vGPU:
// "first" on gpuA, "second" on gpuB.
func twoWaiting() (first, second corev1.Pod) {
	at := time.Now().Add(-time.Minute)
	first = boundAt(assigned("first", 100, []corev1.Container{ctr("main", 1, 500, 5)}, vgpu.PodDevices{{dev(gpuA, 500, 5)}}), at)
	second = boundAt(assigned("second", 101, []corev1.Container{ctr("main", 1, 500, 5)}, vgpu.PodDevices{{dev(gpuB, 500, 5)}}), at)
	return first, second
}

// wantServed has the kubelet admit a container with one vGPU and checks
// that it sees gpu.
func wantServed(t *testing.T, env testEnv, gpu string) {
	t.Helper()
	resp, err := env.allocate(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Envs[vgpu.EnvVisibleDevices]; got != gpu {
		t.Errorf("the admitted container sees %q, want %s", got, gpu)
	}
}

// countLists counts the node's pod lists, calling onList with the count
// before each is answered.
func countLists(env testEnv, onList func(n int)) *int {
	n := 0
	env.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		n++
		onList(n)
		return false, nil, nil
	})
	return &n
}

// After a kubelet restart, kubelet rejected "first" (no healthy devices yet)
// without calling Allocate, then admitted "second"; its Failed status reaches
// the API server only after the Allocate began. "second" must get its own
// GPU, not the rejected pod's.
func TestAllocateWaitsForKubeletsRejectionAfterReregistering(t *testing.T) {
	first, second := twoWaiting()
	env := newTestEnv(t, 1, &first, &second)
	env.alloc.cfg.Advertised = time.Now
	lists := countLists(env, func(n int) {
		if n == 3 {
			rejected := with(first, func(p *corev1.Pod) {
				p.Status.Phase, p.Status.Reason = corev1.PodFailed, "UnexpectedAdmissionError"
			})
			if err := env.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), &rejected, "ns"); err != nil {
				t.Error(err)
			}
		}
	})

	wantServed(t, env, gpuB)
	if got := env.pod(t, "second").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseSuccess {
		t.Errorf("second pod's bind phase %q, want %q", got, vgpu.BindPhaseSuccess)
	}
	if got := env.pod(t, "first").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseAllocating {
		t.Errorf("rejected pod's bind phase %q, want it untouched (%q)", got, vgpu.BindPhaseAllocating)
	}
	if *lists != 3 {
		t.Errorf("listed the node's pods %d times, want 3: until the rejection showed", *lists)
	}
}

// When no rejection comes, the earliest bound pod is the one kubelet admits:
// it is served once the devices have settled.
func TestAllocateServesTheEarliestPodOnceDevicesSettled(t *testing.T) {
	first, second := twoWaiting()
	env := newTestEnv(t, 1, &first, &second)
	env.alloc.settle = 300 * time.Millisecond
	advertised := time.Now()
	env.alloc.cfg.Advertised = func() time.Time { return advertised }
	lists := countLists(env, func(int) {})

	wantServed(t, env, gpuA)
	if since := time.Since(advertised); since < env.alloc.settle {
		t.Errorf("served %s after the device list, before the %s a rejection may take", since, env.alloc.settle)
	}
	if *lists < 2 {
		t.Errorf("listed the node's pods %d times, want it listed again while a rejection could arrive", *lists)
	}
}

// Nothing waits in steady state, nor when only one pod can be the one.
func TestAllocateDoesNotWait(t *testing.T) {
	first, second := twoWaiting()
	tests := []struct {
		name       string
		pods       []corev1.Pod
		advertised time.Time
	}{
		{"devices advertised longer ago than a rejection takes", []corev1.Pod{first, second}, time.Now().Add(-2 * time.Hour)},
		{"a single candidate", []corev1.Pod{first}, time.Now()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			for i := range tt.pods {
				objects = append(objects, &tt.pods[i])
			}
			env := newTestEnv(t, 1, objects...)
			env.alloc.settle = time.Hour
			env.alloc.cfg.Advertised = func() time.Time { return tt.advertised }
			lists := countLists(env, func(int) {})
			wantServed(t, env, gpuA)
			if *lists != 1 {
				t.Errorf("listed the node's pods %d times, want once", *lists)
			}
		})
	}
}

// fakeKubeletPods answers as the kubelet's PodResources API would.
type fakeKubeletPods struct {
	holdings podresources.Holdings
	err      error
}

func (f fakeKubeletPods) Holdings(context.Context, string) (podresources.Holdings, error) {
	return f.holdings, f.err
}

// With the kubelet's list of its pods, the pod it admits is known at once:
// a pod it rejected or has not reached is not on it, and a container
// already holding vGPUs is not waiting for them.
func TestAllocateServesThePodTheKubeletAdmits(t *testing.T) {
	tests := []struct {
		name     string
		holdings podresources.Holdings
	}{
		{"the earlier pod rejected", podresources.Holdings{{Namespace: "ns", Name: "second"}: {"main": false}}},
		{"the earlier pod's container holds its vGPUs", podresources.Holdings{
			{Namespace: "ns", Name: "first"}:  {"main": true},
			{Namespace: "ns", Name: "second"}: {"main": false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second := twoWaiting()
			env := newTestEnv(t, 1, &first, &second)
			env.alloc.settle = time.Hour
			env.alloc.cfg.Advertised = time.Now
			env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: tt.holdings}
			lists := countLists(env, func(int) {})
			wantServed(t, env, gpuB)
			if got := env.pod(t, "first").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseAllocating {
				t.Errorf("first pod's bind phase %q, want it untouched", got)
			}
			if *lists != 1 {
				t.Errorf("listed the node's pods %d times, want once: nothing to wait for", *lists)
			}
		})
	}
}

func TestAllocateRefusesWhenTheKubeletAdmitsNoCandidate(t *testing.T) {
	first, _ := twoWaiting()
	env := newTestEnv(t, 1, &first)
	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: podresources.Holdings{}}
	_, err := env.allocate(1)
	if err == nil || !strings.Contains(err.Error(), `pod ns/first is not one the kubelet admits`) {
		t.Errorf("Allocate: %v, want a refusal naming the pod the kubelet does not hold", err)
	}
	if got := env.pod(t, "first").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseAllocating {
		t.Errorf("first pod's bind phase %q, want it left for the kubelet's own Allocate", got)
	}
}

// When the kubelet cannot be asked, the earliest bound pod is served, after
// waiting for a rejection as without it.
func TestAllocateFallsBackWhenTheKubeletCannotBeAsked(t *testing.T) {
	first, second := twoWaiting()
	env := newTestEnv(t, 1, &first, &second)
	env.alloc.settle = 200 * time.Millisecond
	env.alloc.cfg.Advertised = time.Now
	env.alloc.cfg.KubeletPods = fakeKubeletPods{err: errors.New("connection refused")}
	lists := countLists(env, func(int) {})
	wantServed(t, env, gpuA)
	if *lists < 2 {
		t.Errorf("listed the node's pods %d times, want it waiting for a rejection", *lists)
	}
}

// served is pod after its only container was served: hand-off complete.
func served(pod corev1.Pod) corev1.Pod {
	return with(pod, func(p *corev1.Pod) {
		p.Annotations[vgpu.DevicesToAllocateAnnotation] = ";"
		p.Annotations[vgpu.BindPhaseAnnotation] = vgpu.BindPhaseSuccess
		p.Annotations[vgpu.AssignedTimeAnnotation] = vgpu.AssignedTimeReleased
	})
}

// A kubelet that restarted after "first" was served, without its answer,
// admits it again: it gets its own GPUs again, with nothing written, and
// not the next pod's.
func TestAllocateServesAgainWhatTheKubeletLacks(t *testing.T) {
	first, second := twoWaiting()
	first = served(first)
	tests := []struct {
		name     string
		holdings podresources.Holdings
		want     string
	}{
		{"kubelet lacks the served container's answer", podresources.Holdings{
			{Namespace: "ns", Name: "first"}:  {"main": false},
			{Namespace: "ns", Name: "second"}: {"main": false},
		}, gpuA},
		{"kubelet holds the served container's answer", podresources.Holdings{
			{Namespace: "ns", Name: "first"}:  {"main": true},
			{Namespace: "ns", Name: "second"}: {"main": false},
		}, gpuB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, 1, &first, &second)
			env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: tt.holdings}
			wantServed(t, env, tt.want)
			if tt.want == gpuA && len(env.patches()) != 0 {
				t.Errorf("serving again wrote %v, want nothing", env.patches())
			}
		})
	}
}

// A kubelet restart between a pod's two vGPU containers: the first was
// served, but the restarted kubelet lacks its answer and asks for it again
// before the second.
func TestAllocateServesAgainAContainerOfAPodStillAllocating(t *testing.T) {
	pod := boundAt(assigned("p", 100, []corev1.Container{ctr("c0", 1, 500, 5), ctr("c1", 1, 700, 7)},
		vgpu.PodDevices{{dev(gpuA, 500, 5)}, {dev(gpuB, 700, 7)}}), time.Now().Add(-time.Minute))
	rest, err := vgpu.PodDevices{{dev(gpuA, 500, 5)}, {dev(gpuB, 700, 7)}}.EraseContainer(0)
	if err != nil {
		t.Fatal(err)
	}
	value, err := rest.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations[vgpu.DevicesToAllocateAnnotation] = value
	env := newTestEnv(t, 1, &pod)
	key := types.NamespacedName{Namespace: "ns", Name: "p"}

	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: podresources.Holdings{key: {"c0": false, "c1": false}}}
	wantServed(t, env, gpuA)
	if len(env.patches()) != 0 {
		t.Errorf("serving c0 again wrote %v, want nothing", env.patches())
	}
	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: podresources.Holdings{key: {"c0": true, "c1": false}}}
	wantServed(t, env, gpuB)
	if got := env.pod(t, "p").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseSuccess {
		t.Errorf("bind phase after c1 %q, want %q", got, vgpu.BindPhaseSuccess)
	}
}

// A pod the kubelet holds, asking again for a container its assignment has
// no entry for (vgpu-ids-new forged short), is passed over with its reason,
// and the honest pod waiting behind it is served.
func TestAllocatePassesOverAnAssignmentWithoutTheEntryToServeAgain(t *testing.T) {
	forged, honest := twoWaiting()
	forged = with(served(forged), func(p *corev1.Pod) { p.Annotations[vgpu.AssignedDevicesAnnotation] = "" })
	holdings := podresources.Holdings{
		{Namespace: "ns", Name: "first"}:  {"main": false},
		{Namespace: "ns", Name: "second"}: {"main": false},
	}
	env := newTestEnv(t, 1, &forged)
	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: holdings}
	_, err := env.allocate(1)
	if want := "pod ns/first has 0 container entries in volcano.sh/vgpu-ids-new, none for vGPU container 0"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Allocate: %v, want a refusal saying %q", err, want)
	}

	env = newTestEnv(t, 1, &forged, &honest)
	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: holdings}
	wantServed(t, env, gpuB)
}
