package deviceshare

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Register annotations as upstream device plugins write them.
const (
	uuidA = "GPU-3a6e07b4-8c1d-4f2e-9a5b-7d0c1e2f3a4b"
	uuidB = "GPU-9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0"
	// v1.11 (classic): NVML index order, six fields.
	registerV111 = uuidA + ",10,81920,NVIDIA-NVIDIA A100-SXM4-80GB,true,hami-core:" +
		uuidB + ",10,81920,NVIDIA-NVIDIA A100-SXM4-80GB,true,hami-core:"
	// v1.12 (rebased): an unhealthy GPU, MIG mode.
	registerV112MIG = uuidB + ",10,71885,NVIDIA-NVIDIA H200,false,mig:" + uuidA + ",10,71885,NVIDIA-NVIDIA H200,true,mig:"
	// volcano-sh/devices and the first plugin releases: no mode field.
	registerLegacy = uuidA + ",10,24564,NVIDIA-NVIDIA GeForce RTX 3090,true:"
	// Newer plugins publish mps, which upstream schedules as hami-core.
	registerMPS = uuidA + ",4,40960,NVIDIA-NVIDIA A100-PCIE-40GB,true,mps:"
)

// describeGPUs renders the ledger's GPUs: "uuid split memory type healthy sharing".
func describeGPUs(l *ledger) []string {
	var out []string
	for _, g := range l.gpus {
		out = append(out, fmt.Sprintf("%s %d %d %s %t %T", g.info.UUID, g.slots, g.memory, g.info.upperType, g.healthy, g.sharing))
	}
	return out
}

// registeredNode is a node with the annotations and vGPU allocatable of 20 slots, 163840
// memory units and 200 cores, unless allocatable changes them.
func registeredNode(annotations map[string]string, allocatable ...string) *corev1.Node {
	node := gpuNode("n1", 0, gpus(2, 10, 81920, a100))
	node.Annotations = annotations
	for _, pair := range allocatable {
		k, v, _ := strings.Cut(pair, "=")
		node.Status.Allocatable[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return node
}

func TestDeriveNodeGPUs(t *testing.T) {
	now := time.Date(2026, 5, 9, 12, 0, 0, 0, time.UTC)
	register := func(value string, kv ...string) map[string]string {
		a := map[string]string{vgpu.NodeDevicesAnnotation: value}
		for i := 0; i+1 < len(kv); i += 2 {
			a[kv[i]] = kv[i+1]
		}
		return a
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		// wantGPUs: describeGPUs of the ledger; nil with wantNoLedger or wantUnusable.
		wantGPUs     []string
		wantNoLedger bool
		// wantUnusable: the reason the plugin gives for the node at time now.
		wantUnusable string
	}{
		{
			name: "v1.11 plugin, two A100 in index order",
			node: registeredNode(register(registerV111)),
			wantGPUs: []string{
				uuidA + " 10 81920 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
				uuidB + " 10 81920 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
			},
		},
		{
			name: "v1.12 plugin in MIG mode, a type without MIG geometry: listed, not shared, health kept",
			node: registeredNode(register(registerV112MIG)),
			wantGPUs: []string{
				uuidB + " 10 71885 NVIDIA-NVIDIA H200 false <nil>",
				uuidA + " 10 71885 NVIDIA-NVIDIA H200 true <nil>",
			},
		},
		{
			name:     "legacy record without mode is hami-core",
			node:     registeredNode(register(registerLegacy)),
			wantGPUs: []string{uuidA + " 10 24564 NVIDIA-NVIDIA GEFORCE RTX 3090 true deviceshare.hamiCore"},
		},
		{
			name:     "mps is shared as hami-core",
			node:     registeredNode(register(registerMPS)),
			wantGPUs: []string{uuidA + " 4 40960 NVIDIA-NVIDIA A100-PCIE-40GB true deviceshare.hamiCore"},
		},
		{
			name:         "no register annotation: no ledger",
			node:         registeredNode(map[string]string{"other": "x"}),
			wantNoLedger: true,
			wantUnusable: "node not initialized with devicehamivgpu: no volcano.sh/node-vgpu-register annotation (is the vGPU device plugin running?)",
		},
		{
			name:         "vgpu-memory allocatable 0 (kubelet lost the plugin, or the 4 MiB gRPC limit)",
			node:         registeredNode(register(registerV111), string(resMem)+"=0"),
			wantUnusable: "node not initialized with devicehamivgpu: allocatable volcano.sh/vgpu-memory is 0 (is the vGPU device plugin running?)",
		},
		{
			name: "vgpu-cores not allocatable at all",
			node: func() *corev1.Node {
				n := registeredNode(register(registerV111))
				delete(n.Status.Allocatable, resCores)
				return n
			}(),
			wantUnusable: "node not initialized with devicehamivgpu: allocatable volcano.sh/vgpu-cores is 0",
		},
		{
			name: "the device plugin's handshake report",
			node: registeredNode(register(registerV111, vgpu.NodeHandshakeAnnotation, vgpu.FormatReported(now))),
			wantGPUs: []string{
				uuidA + " 10 81920 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
				uuidB + " 10 81920 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
			},
		},
		{
			name: "an upstream scheduler's request, still fresh",
			node: registeredNode(register(registerV111, vgpu.NodeHandshakeAnnotation, vgpu.FormatRequesting(now.Add(-59*time.Second)))),
			wantGPUs: []string{
				uuidA + " 10 81920 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
				uuidB + " 10 81920 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
			},
		},
		{
			name:         "an upstream scheduler's request, unanswered",
			node:         registeredNode(register(registerV111, vgpu.NodeHandshakeAnnotation, vgpu.FormatRequesting(now.Add(-61*time.Second)))),
			wantUnusable: "node not initialized with devicehamivgpu: volcano.sh/node-vgpu-handshake request unanswered for over 1m0s",
		},
		{
			name:         "an upstream scheduler gave up on the node",
			node:         registeredNode(register(registerV111, vgpu.NodeHandshakeAnnotation, vgpu.FormatDeleted(now))),
			wantUnusable: `node not initialized with devicehamivgpu: volcano.sh/node-vgpu-handshake "Deleted_2026.05.09 12:00:00": an upstream scheduler`,
		},
		{
			name:         "unreadable handshake",
			node:         registeredNode(register(registerV111, vgpu.NodeHandshakeAnnotation, "Requesting_yesterday")),
			wantUnusable: `node not initialized with devicehamivgpu: volcano.sh/node-vgpu-handshake: handshake "Requesting_yesterday"`,
		},
		{
			name:         "unreadable register annotation names the GPU and field",
			node:         registeredNode(register(uuidA + ",10,81920,NVIDIA-NVIDIA A100,true,hami-core:" + uuidB + ",ten,81920,NVIDIA-NVIDIA A100,true,hami-core:")),
			wantUnusable: `node not initialized with devicehamivgpu: volcano.sh/node-vgpu-register: GPU 1: count "ten"`,
		},
		{
			name:         "register annotation without GPUs",
			node:         registeredNode(register("")),
			wantUnusable: "node not initialized with devicehamivgpu: volcano.sh/node-vgpu-register lists no GPU",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := nodeInfo(tc.node)
			l := ledgerOf(n)
			if tc.wantNoLedger != (l == nil) {
				t.Fatalf("ledger %+v, want none: %t", l, tc.wantNoLedger)
			}
			p := sessionPlugin(t, now)
			s := p.unusable(l)
			switch {
			case tc.wantUnusable == "" && s != nil:
				t.Fatalf("node unusable: %v", s.Reasons)
			case tc.wantUnusable != "" && (s == nil || !strings.HasPrefix(s.Reasons[0], tc.wantUnusable)):
				t.Fatalf("unusable = %v, want a reason starting %q", s, tc.wantUnusable)
			}
			if tc.wantGPUs != nil {
				if got := describeGPUs(l); strings.Join(got, "\n") != strings.Join(tc.wantGPUs, "\n") {
					t.Errorf("GPUs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.wantGPUs, "\n"))
				}
			}
		})
	}
}

// sessionPlugin is an enabled plugin whose session opened at now.
func sessionPlugin(t *testing.T, now time.Time) *plugin {
	t.Helper()
	fp, err := newPlugin(map[string]interface{}{VGPUEnableArg: true})
	if err != nil {
		t.Fatal(err)
	}
	p := fp.(*plugin)
	p.open(now)
	return p
}

// binding is the session task of a pod the cache is binding with the given assignment.
func binding(p *corev1.Pod, node, assignment string) *api.TaskInfo {
	asking(p, assignment)
	t := api.NewTaskInfo(p)
	t.NodeName, t.Status = node, api.Binding
	t.BindAnnotations = map[string]string{vgpu.AssignedNodeAnnotation: node, vgpu.AssignedDevicesAnnotation: assignment}
	return t
}

// TestDeriveBookings: the ledger books every assignment held on the node, whether the pod
// carries it or is being bound with it, and skips what it cannot place.
func TestDeriveBookings(t *testing.T) {
	node := gpuNode("n1", 0, gpus(3, 10, 30000, h200))
	n := api.NewNodeInfo(node)
	for _, task := range []*api.TaskInfo{
		api.NewTaskInfo(runningWith(pod("one", "pg"), "n1", uuid(0)+",NVIDIA,2000,30:")),
		api.NewTaskInfo(runningWith(pod("two-containers", "pg"), "n1", uuid(0)+",NVIDIA,1000,0:;"+uuid(1)+",NVIDIA,500,10:")),
		api.NewTaskInfo(runningWith(pod("two-gpus", "pg"), "n1", uuid(1)+",NVIDIA,3000,0:"+uuid(2)+",NVIDIA,3000,0:")),
		// Bound with our Binding: the cache still holds the annotations the Binding carries,
		// which win over a stale assignment the pod may show.
		binding(annotated(pod("binding", "pg"), vgpu.AssignedDevicesAnnotation, uuid(0)+",NVIDIA,9999,0:"), "n1", uuid(2)+",NVIDIA,4000,100:"),
		api.NewTaskInfo(runningWith(pod("mig", "pg"), "n1", uuid(2)+"[group1-0],NVIDIA,5000,0:")),
		api.NewTaskInfo(runningWith(pod("elsewhere", "pg"), "n1", uuid(7)+",NVIDIA,8000,0:")),
		api.NewTaskInfo(runningWith(pod("unreadable", "pg"), "n1", uuid(0)+",NVIDIA,lots,0:")),
		api.NewTaskInfo(pod("no-assignment", "pg", vgpuCtr("c", 1, 100, 0))),
	} {
		n.AddTask(task)
	}
	l := NewDeriver().Derive(n).(*ledger)
	if got, want := usageOf(l), "0:2/3000/30 1:2/3500/10 2:3/12000/100"; got != want {
		t.Fatalf("bookings %s, want %s", got, want)
	}
	// Each pod's bookings are found by its UID, all of them and no other pod's.
	for id, task := range n.Tasks {
		var want []booking
		for _, b := range l.derived.bookings {
			if b.task == id {
				want = append(want, b)
			}
		}
		if got := l.derived.of(id); !slices.Equal(got, want) {
			t.Errorf("%s: bookings by UID %v, want %v", task.Name, got, want)
		}
	}

	// Deriving again, after a pod left, reuses the decoded GPUs but none of the old bookings,
	// and leaves the previous ledger (which snapshots may hold) alone.
	n.Devices = map[string]api.Devices{PluginName: l}
	n.RemoveTask(&api.TaskInfo{UID: "uid-two-gpus"})
	again := NewDeriver().Derive(n).(*ledger)
	if got, want := usageOf(again), "0:2/3000/30 1:1/500/10 2:2/9000/100"; got != want {
		t.Errorf("after the pod left: %s, want %s", got, want)
	}
	if got, want := usageOf(l), "0:2/3000/30 1:2/3500/10 2:3/12000/100"; got != want {
		t.Errorf("the previous ledger changed: %s", got)
	}

	// A new register annotation is decoded afresh.
	n.SetNode(gpuNode("n1", 0, gpus(2, 4, 40000, a100)))
	renewed := NewDeriver().Derive(n).(*ledger)
	if got, want := fmt.Sprint(describeGPUs(renewed)), fmt.Sprint([]string{
		uuid(0) + " 4 40000 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
		uuid(1) + " 4 40000 NVIDIA-NVIDIA A100-SXM4-80GB true deviceshare.hamiCore",
	}); got != want {
		t.Errorf("after the GPUs changed: %s, want %s", got, want)
	}
}

// A pod books no more than it asks, whatever its assignment says: a pod that asks no vGPU
// books nothing, a pod that asks 10 units and 20 cores books those, a container entry with
// more devices than asked books as many as asked. Each such pod gets one Warning Event.
func TestDeriveBooksNoMoreThanRequested(t *testing.T) {
	node := gpuNode("n1", 0, gpus(2, 10, 30000, h200))
	n := api.NewNodeInfo(node)
	noRequest := annotated(pod("no-request", "pg", ctr("c", "cpu=100m")), vgpu.AssignedNodeAnnotation, "n1",
		vgpu.AssignedDevicesAnnotation, uuid(0)+",NVIDIA,2147483647,100:")
	noRequest.Spec.NodeName = "n1"
	greedy := runningWith(pod("greedy", "pg", vgpuCtr("c", 1, 10, 20)), "n1", uuid(1)+",NVIDIA,30000,100:")
	extra := runningWith(pod("extra", "pg", vgpuCtr("c", 1, 500, 0)), "n1", uuid(0)+",NVIDIA,500,0:"+uuid(1)+",NVIDIA,500,0:")
	for _, p := range []*corev1.Pod{noRequest, greedy, extra} {
		n.AddTask(api.NewTaskInfo(p))
	}
	events := record.NewFakeRecorder(10)
	d := NewDeriverFor(defaultDevices, events)
	l := d.Derive(n).(*ledger)
	if got, want := usageOf(l), "0:1/500/0 1:1/10/20"; got != want {
		t.Fatalf("bookings %s, want %s", got, want)
	}
	d.Derive(n) // the cache derives again after every change: no second Event
	var got []string
	for len(events.Events) > 0 {
		got = append(got, <-events.Events)
	}
	want := []string{
		"Warning VGPUAssignmentNotBooked nothing booked: no container requests " + string(resCount),
		`Warning VGPUAssignmentNotBooked booked only what the pod requests: container "c" on GPU ` + uuid(1) + ": 30000 memory units and 100 cores for 10 and 20 requested",
		`Warning VGPUAssignmentNotBooked booked only what the pod requests: container "c": 2 devices for 1 requested`,
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
