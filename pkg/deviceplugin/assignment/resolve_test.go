package assignment

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// pick is the candidate Allocate tries first, or the error it gives when
// there is none.
func pick(pods []corev1.Pod, count int) (candidate, error) {
	cfg := Config{NodeName: testNode, Names: names, SchedulerNames: []string{DefaultSchedulerName}}
	candidates, reasons := findCandidates(pods, cfg, count, nil)
	if len(candidates) == 0 {
		return candidate{}, noTargetError(testNode, count, reasons)
	}
	return candidates[0], nil
}

func TestFindTargetAndContainer(t *testing.T) {
	// single: one container, one GPU.
	single := func(name string, at int) corev1.Pod {
		return assigned(name, at, []corev1.Container{ctr("main", 1, 1000, 0)},
			vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
	}
	// mixed: a container without vGPU first, then two vGPU containers.
	mixed := assigned("mixed", 50, []corev1.Container{
		ctr("sidecar", -1, 0, 0),
		ctr("one", 1, 2000, 30),
		ctr("two", 2, 3000, 0),
	}, vgpu.PodDevices{
		{dev(gpuA, 2000, 30)},
		{dev(gpuA, 3000, 0), dev(gpuB, 3000, 0)},
	})
	mixedFirstServed := with(mixed, func(p *corev1.Pod) {
		p.Annotations[vgpu.DevicesToAllocateAnnotation] = ";" + gpuA + ",NVIDIA,3000,0:" + gpuB + ",NVIDIA,3000,0:"
	})

	tests := []struct {
		name  string
		pods  []corev1.Pod
		count int
		// wantPod, wantEntry and wantContainer describe the pick; wantErr
		// holds substrings of the error when nothing may be picked.
		wantPod       string
		wantEntry     int
		wantContainer string
		wantErr       []string
	}{
		{
			name:          "oldest assignment first among several pods",
			pods:          []corev1.Pod{single("newer", 300), single("oldest", 100), single("middle", 200)},
			count:         1,
			wantPod:       "oldest",
			wantContainer: "main",
		},
		{
			name: "a pod without a readable assignment time comes last",
			pods: []corev1.Pod{
				with(single("no-time", 1), func(p *corev1.Pod) { p.Annotations[vgpu.AssignedTimeAnnotation] = "soon" }),
				single("timed", 900),
			},
			count:         1,
			wantPod:       "timed",
			wantContainer: "main",
		},
		{
			name:          "non-vGPU container first: entry 0 is the second container",
			pods:          []corev1.Pod{mixed},
			count:         1,
			wantPod:       "mixed",
			wantEntry:     0,
			wantContainer: "one",
		},
		{
			name:          "second vGPU container after the first was served",
			pods:          []corev1.Pod{mixedFirstServed},
			count:         2,
			wantPod:       "mixed",
			wantEntry:     1,
			wantContainer: "two",
		},
		{
			name:          "the count picks the pod whose next container matches",
			pods:          []corev1.Pod{mixed, single("single", 10)},
			count:         1,
			wantPod:       "single",
			wantContainer: "main",
		},
		{
			name:    "count mismatch",
			pods:    []corev1.Pod{mixed},
			count:   2,
			wantErr: []string{"no pending pod on node node-a waits for 2 vGPU devices", "pod ns/mixed waits for 1 devices in container entry 0, not 2"},
		},
		{
			name: "wrong bind phase",
			pods: []corev1.Pod{with(single("done", 1), func(p *corev1.Pod) {
				p.Annotations[vgpu.BindPhaseAnnotation] = vgpu.BindPhaseFailed
			})},
			count:   1,
			wantErr: []string{`pod ns/done has volcano.sh/bind-phase "failed", not "allocating"`},
		},
		{
			name: "pods that are not pending are passed over silently",
			pods: []corev1.Pod{with(single("running", 1), func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
			})},
			count:   1,
			wantErr: []string{"no pending pod on node node-a has a vGPU assignment waiting for 1 devices"},
		},
		{
			name: "pod bound to another node",
			pods: []corev1.Pod{with(single("elsewhere", 1), func(p *corev1.Pod) {
				p.Spec.NodeName = "node-b"
				p.Annotations[vgpu.AssignedNodeAnnotation] = "node-b"
			}), single("here", 500)},
			count:         1,
			wantPod:       "here",
			wantContainer: "main",
		},
		{
			name: "pod bound here but assigned on another node",
			pods: []corev1.Pod{with(single("stale", 1), func(p *corev1.Pod) {
				p.Annotations[vgpu.AssignedNodeAnnotation] = "node-b"
			})},
			count:   1,
			wantErr: []string{`pod ns/stale was assigned devices on node "node-b", not on this node`},
		},
		{
			name: "pod without assignment is no vGPU pod",
			pods: []corev1.Pod{with(single("plain", 1), func(p *corev1.Pod) {
				p.Annotations = nil
			})},
			count:   1,
			wantErr: []string{"no pending pod on node node-a has a vGPU assignment"},
		},
		{
			name: "malformed assignment",
			pods: []corev1.Pod{with(single("bad", 1), func(p *corev1.Pod) {
				p.Annotations[vgpu.DevicesToAllocateAnnotation] = "GPU-x,NVIDIA,lots,0:"
			})},
			count:   1,
			wantErr: []string{"pod ns/bad has a malformed volcano.sh/devices-to-allocate", `memory "lots"`},
		},
		{
			name:    "a pod of another scheduler is never served, whatever its annotations",
			pods:    []corev1.Pod{with(single("forged", 1), func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" })},
			count:   1,
			wantErr: []string{`pod ns/forged is scheduled by "default-scheduler", not by a vGPU scheduler (volcano)`},
		},
		{
			name: "the bind time the API server recorded beats an older assignment time",
			pods: []corev1.Pod{
				with(single("decoy", 1), func(p *corev1.Pod) {}),
				with(single("bound", 500), func(p *corev1.Pod) {
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
						LastTransitionTime: metav1.NewTime(time.Unix(500, 0))}}
				}),
			},
			count:         1,
			wantPod:       "bound",
			wantContainer: "main",
		},
		{
			name: "every container already served",
			pods: []corev1.Pod{with(single("served", 1), func(p *corev1.Pod) {
				p.Annotations[vgpu.DevicesToAllocateAnnotation] = ""
			})},
			count:   1,
			wantErr: []string{"pod ns/served has every container already served"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			picked, err := pick(tt.pods, tt.count)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("picked pod %s, want error", picked.pod.Name)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("pick: %v", err)
			}
			if picked.pod.Name != tt.wantPod || picked.entry != tt.wantEntry {
				t.Fatalf("picked pod %s entry %d, want pod %s entry %d", picked.pod.Name, picked.entry, tt.wantPod, tt.wantEntry)
			}
			container, err := containerFor(picked, Config{Names: names, MemoryFactor: 1}, testGPUs())
			if err != nil {
				t.Fatalf("containerFor: %v", err)
			}
			if container.Name != tt.wantContainer {
				t.Errorf("container %q, want %q", container.Name, tt.wantContainer)
			}
		})
	}
}

func TestNoTargetErrorListsAtMostFivePods(t *testing.T) {
	var pods []corev1.Pod
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		pods = append(pods, assigned(name, 1, []corev1.Container{ctr("main", 2, 0, 0)},
			vgpu.PodDevices{{dev(gpuA, 1, 0), dev(gpuB, 1, 0)}}))
	}
	_, err := pick(pods, 1)
	if err == nil || !strings.Contains(err.Error(), "pod ns/e waits") || strings.Contains(err.Error(), "pod ns/f") ||
		!strings.HasSuffix(err.Error(), "; and 2 more") {
		t.Fatalf("error %v: want pods a to e listed and 2 more counted", err)
	}
}

func TestContainerForRefusesInconsistentAssignments(t *testing.T) {
	tests := []struct {
		name    string
		pod     corev1.Pod
		wantErr string
	}{
		{
			name: "more entries than vGPU containers",
			pod: assigned("p", 1, []corev1.Container{ctr("sidecar", -1, 0, 0), ctr("main", 1, 0, 0)},
				vgpu.PodDevices{{dev(gpuA, 1, 0)}, {dev(gpuB, 1, 0)}}),
			wantErr: "pod ns/p: volcano.sh/devices-to-allocate has 2 container entries but 1 containers request vGPU",
		},
		{
			name: "entry holds another count than the container requests",
			pod: assigned("p", 1, []corev1.Container{ctr("main", 2, 0, 0)},
				vgpu.PodDevices{{dev(gpuA, 1, 0)}}),
			wantErr: `pod ns/p container "main" requests 2 vGPUs but its entry 0 in volcano.sh/devices-to-allocate has 1`,
		},
		{
			name: "init container requesting vGPU",
			pod: with(assigned("p", 1, []corev1.Container{ctr("main", 1, 0, 0)}, vgpu.PodDevices{{dev(gpuA, 1, 0)}}),
				func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{ctr("setup", 1, 0, 0)} }),
			wantErr: `pod ns/p init container "setup" requests volcano.sh/vgpu-number: devices are assigned to app containers only`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			picked, err := pick([]corev1.Pod{tt.pod}, len(mustDecode(t, tt.pod)[0]))
			if err != nil {
				t.Fatalf("pick: %v", err)
			}
			_, err = containerFor(picked, Config{Names: names, MemoryFactor: 1}, testGPUs())
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// An entry must be exactly what its container asks for: the hostile
// assignments a pod author could write by hand are refused, each with the
// reason.
func TestContainerForRefusesAssignmentsThatDoNotMatchTheRequest(t *testing.T) {
	tests := []struct {
		name      string
		container corev1.Container
		devices   vgpu.ContainerDevices
		wantErr   string
	}{
		{"more memory than asked", ctr("main", 1, 10, 0), vgpu.ContainerDevices{dev(gpuA, 999999, 0)},
			"device 0 books 999999 memory units, the container asks 10"},
		{"no compute limit for a container that asks one", ctr("main", 1, 1000, 30), vgpu.ContainerDevices{dev(gpuA, 1000, 0)},
			"device 0 books 0 cores, the container asks 30"},
		{"an exclusive GPU for a container that asks no cores", ctr("main", 1, 1000, 0), vgpu.ContainerDevices{dev(gpuA, 1000, 100)},
			"device 0 books 100 cores, the container asks 0"},
		{"less than the whole GPU for a container that names no memory", ctr("main", 1, 0, 0), vgpu.ContainerDevices{dev(gpuA, 10, 0)},
			"device 0 books 10 memory units, the container asks 143771"},
		{"more memory than the GPU has", ctr("main", 1, 200000, 0), vgpu.ContainerDevices{dev(gpuA, 200000, 0)},
			"device 0: the container asks 200000 memory units, more than GPU " + gpuA + " has (143771)"},
		{"a GPU of another node", ctr("main", 1, 10, 0), vgpu.ContainerDevices{dev("GPU-elsewhere", 10, 0)},
			"device 0: GPU GPU-elsewhere is not one of this node's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := assigned("p", 1, []corev1.Container{tt.container}, vgpu.PodDevices{tt.devices})
			picked, err := pick([]corev1.Pod{pod}, len(tt.devices))
			if err != nil {
				t.Fatalf("pick: %v", err)
			}
			_, err = containerFor(picked, Config{Names: names, MemoryFactor: 1}, testGPUs())
			want := `pod ns/p container "main", entry 0 in volcano.sh/devices-to-allocate: ` + tt.wantErr
			if err == nil || err.Error() != want {
				t.Fatalf("error %v, want %q", err, want)
			}
		})
	}
}

func mustDecode(t *testing.T, pod corev1.Pod) vgpu.PodDevices {
	t.Helper()
	pd, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.DevicesToAllocateAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	return pd
}
