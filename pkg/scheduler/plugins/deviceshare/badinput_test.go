package deviceshare

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestBadPodInputMessages: each pod request or annotation docs/bad-input.md lists gets the
// exact message there, as the allocate action records it for the pod (its FailedScheduling
// Event and PodScheduled condition, and the PodGroup's "Origin reason").
func TestBadPodInputMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"cores above 100", pod("p", "pg", vgpuCtr("main", 1, 1000, 150)),
			`0/1 nodes are unavailable: 1 pod ns/p container "main": volcano.sh/vgpu-cores 150: want 0 to 100.`},
		{"memory percentage above 100", pod("p", "pg", ctr("main", string(resCount)+"=1", string(resPct)+"=101")),
			`0/1 nodes are unavailable: 1 pod ns/p container "main": volcano.sh/vgpu-memory-percentage 101: want 1 to 100.`},
		{"fractional count", pod("p", "pg", ctr("main", string(resCount)+"=1500m")),
			`0/1 nodes are unavailable: 1 pod ns/p container "main": volcano.sh/vgpu-number "1500m": want a whole number from 0 to 2147483647.`},
		{"zero count with memory", pod("p", "pg", ctr("main", string(resCount)+"=0", string(resMem)+"=1000")),
			`0/1 nodes are unavailable: 1 pod ns/p container "main": volcano.sh/vgpu-number is 0 but the container asks for vGPU memory or cores.`},
		{"unknown mode", annotated(pod("p", "pg", vgpuCtr("main", 1, 1000, 0)), vgpu.ModeAnnotation, "mps"),
			`0/1 nodes are unavailable: 1 pod ns/p: volcano.sh/vgpu-mode "mps": want "hami-core" or "mig".`},
		{"memory larger than any card", pod("p", "pg", vgpuCtr("main", 1, 40000, 0)),
			"0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: a container's volcano.sh/vgpu-memory is more than the GPU's whole memory."},
		{"more GPUs than the node has", pod("p", "pg", vgpuCtr("main", 3, 1000, 0)),
			"0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: the node has fewer GPUs than a container's volcano.sh/vgpu-number."},
		{"unknown GPU type", annotated(pod("p", "pg", vgpuCtr("main", 1, 1000, 0)), vgpu.UseGPUTypeAnnotation, "B200"),
			"0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: GPU type not in the pod's nvidia.com/use-gputype."},
		{"every GPU type avoided", annotated(pod("p", "pg", vgpuCtr("main", 1, 1000, 0)), vgpu.NoUseGPUTypeAnnotation, "H200"),
			"0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: GPU type in the pod's nvidia.com/nouse-gputype."},
		{"unknown GPU UUID", annotated(pod("p", "pg", vgpuCtr("main", 1, 1000, 0)), vgpu.UseGPUUUIDAnnotation, "GPU-nope"),
			"0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: GPU not in the pod's volcano.sh/vgpu-use-gpuuuid."},
		{"cores 100 on GPUs already shared", pod("p", "pg", vgpuCtr("main", 1, 1000, 100)),
			"0/1 nodes are unavailable: 1 hami-vgpuDeviceSharing error: volcano.sh/vgpu-cores 100 needs a GPU no other vGPU uses."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var onNode []*corev1.Pod
			if tc.name == "cores 100 on GPUs already shared" {
				onNode = []*corev1.Pod{
					runningWith(pod("a", "x"), "n1", uuid(0)+",NVIDIA,1000,0:"),
					runningWith(pod("b", "x"), "n1", uuid(1)+",NVIDIA,1000,0:"),
				}
			}
			node := nodeInfo(gpuNode("n1", 0, gpus(2, 10, 30000, h200)), onNode...)
			cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{node}, 1, tc.pod)}
			ssn := runAllocate(t, cache, nil)
			if len(cache.Bound) != 0 {
				t.Fatalf("bound %d pods", len(cache.Bound))
			}
			task := taskOf(t, ssn, "p")
			fe := ssn.Jobs["ns/pg"].NodesFitErrors[task.UID]
			if fe == nil || fe.Error() != tc.want {
				t.Errorf("fit error\n got %v\nwant %s", fe, tc.want)
			}
		})
	}
}

// TestMalformedRegisterAnnotation: a node whose register annotation cannot be read takes no
// vGPU pod; the pods' message says why, and the node gets one Warning Event naming the
// annotation and the field, once per bad value.
func TestMalformedRegisterAnnotation(t *testing.T) {
	good := gpuNode("n1", 0, gpus(2, 10, 30000, h200))
	bad := good.DeepCopy()
	bad.Annotations[vgpu.NodeDevicesAnnotation] = uuid(0) + ",10,30000,NVIDIA-NVIDIA H200,yes,hami-core:"
	const why = `volcano.sh/node-vgpu-register: GPU 0: health "yes": want true or false`

	events := record.NewFakeRecorder(10)
	d := NewDeriverFor(defaultDevices, events)
	derive := func(node *corev1.Node) *api.NodeInfo {
		n := api.NewNodeInfo(node)
		if l := d.Derive(n); l != nil {
			n.Devices = map[string]api.Devices{PluginName: l}
		}
		return n
	}
	take := func() []string {
		var got []string
		for len(events.Events) > 0 {
			got = append(got, <-events.Events)
		}
		return got
	}
	n := derive(bad)
	derive(bad) // derived again after any change: no second Event
	wantEvent := "Warning " + EventReasonInvalidRegister + " " + why
	if got := take(); len(got) != 1 || got[0] != wantEvent {
		t.Errorf("events %q, want [%q]", got, wantEvent)
	}

	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{n}, 1, pod("p", "pg", vgpuCtr("main", 1, 1000, 0)))}
	ssn := runAllocate(t, cache, nil)
	want := "0/1 nodes are unavailable: 1 node not initialized with devicehamivgpu: " + why + "."
	if fe := ssn.Jobs["ns/pg"].NodesFitErrors[taskOf(t, ssn, "p").UID]; fe == nil || fe.Error() != want {
		t.Errorf("fit error\n got %v\nwant %s", fe, want)
	}

	derive(good)
	derive(bad) // broken again after a fix: reported again
	if got := take(); len(got) != 1 || got[0] != wantEvent {
		t.Errorf("after a fix and a new break: events %q, want [%q]", got, wantEvent)
	}
	empty := good.DeepCopy()
	empty.Annotations[vgpu.NodeDevicesAnnotation] = ""
	derive(empty)
	if got, want := take(), "Warning "+EventReasonInvalidRegister+" volcano.sh/node-vgpu-register lists no GPU"; len(got) != 1 || got[0] != want {
		t.Errorf("empty annotation: events %q, want [%q]", got, want)
	}
}
