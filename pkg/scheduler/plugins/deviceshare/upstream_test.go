package deviceshare

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu/upstreamtest"
)

// Compatibility with the upstream device plugin (docs/compatibility.md): this scheduler on
// nodes an upstream plugin registers, and assignments an upstream plugin's Allocate serves.

// upstreamNode is a golden node of an upstream plugin with room for pods besides its GPUs.
func upstreamNode(g upstreamtest.GoldenNode) *corev1.Node {
	node := g.Node.DeepCopy()
	for _, list := range []corev1.ResourceList{node.Status.Allocatable, node.Status.Capacity} {
		list[corev1.ResourceCPU] = resource.MustParse("64")
		list[corev1.ResourcePods] = resource.MustParse("110")
	}
	return node
}

// placeOn places the pod on the node in a session and returns the annotations its Binding
// would carry.
func placeOn(t *testing.T, node *corev1.Node, p *corev1.Pod) map[string]string {
	t.Helper()
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{nodeInfo(node)}, 1, p)}
	ssn := openDeviceSession(cache)
	task := taskOf(t, ssn, p.Name)
	if err := ssn.NewStatement().Allocate(task, ssn.Nodes[node.Name]); err != nil {
		t.Fatalf("place %s on %s: %v", p.Name, node.Name, err)
	}
	return task.BindAnnotations
}

// TestSchedulesOnUpstreamPluginNodes: nodes as the upstream device plugin v1.11 and v1.12
// leave them (register annotation, "Reported" handshake, allocatable) are usable, list the
// GPUs in the plugin's order, and get pods placed on their healthy GPUs only (a MIG
// instance on a GPU in mig mode).
func TestSchedulesOnUpstreamPluginNodes(t *testing.T) {
	for _, g := range upstreamtest.Nodes() {
		t.Run(g.File, func(t *testing.T) {
			node := upstreamNode(g)
			l := ledgerOf(nodeInfo(node))
			if l == nil || l.unavailable != nil || !l.handshakeRequested.IsZero() {
				t.Fatalf("node not usable: %+v", l)
			}
			published, err := upstreamtest.DecodeNodeDevices(node.Annotations[vgpu.NodeDevicesAnnotation])
			if err != nil {
				t.Fatal(err)
			}
			var healthy []string
			for i, gpu := range published {
				if l.gpus[i].info.UUID != gpu.UUID {
					t.Errorf("GPU %d is %s, the plugin lists %s there", i, l.gpus[i].info.UUID, gpu.UUID)
				}
				if gpu.Health {
					healthy = append(healthy, gpu.UUID)
				}
			}

			p := pod("p", "pg", vgpuCtr("main", len(healthy), 1000, 10))
			annotations := placeOn(t, node, p)
			pd, err := upstreamtest.DecodePodDevices(annotations[vgpu.AssignedDevicesAnnotation])
			if err != nil || len(pd) != 1 {
				t.Fatalf("assignment %q: %v", annotations[vgpu.AssignedDevicesAnnotation], err)
			}
			var got []string
			for _, d := range pd[0] {
				uuid, slot, isMIG := strings.Cut(d.ID, "[")
				if isMIG != (published[0].Mode == vgpu.ModeMIG) {
					t.Errorf("device %q on a GPU in mode %s", d.ID, published[0].Mode)
				}
				if isMIG && !regexp.MustCompile(`^[^\[\]]+-[0-9]+\]$`).MatchString(slot) {
					t.Errorf("MIG instance id %q is not uuid[group-position]", d.ID)
				}
				got = append(got, uuid)
			}
			slices.Sort(got)
			slices.Sort(healthy)
			if !slices.Equal(got, healthy) {
				t.Errorf("placed on %v, want the healthy GPUs %v", got, healthy)
			}
		})
	}
}

// upstreamDevice is one device of an assignment in the form upstream plugins parse: a GPU
// UUID as NVML prints it (or a MIG instance id), type NVIDIA, memory units and cores as
// decimal numbers.
var upstreamDevice = regexp.MustCompile(`^GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}(\[[^\[\],:;]+-[0-9]+\])?,NVIDIA,[0-9]+,[0-9]+$`)

// checkUpstreamForm checks the assignment annotations against the rules upstream plugins
// rely on: the six keys, one entry per container that requests vGPU (count or memory), in
// container order, containers separated by ";" with none after the last, every device in
// upstream's form and terminated by ":".
func checkUpstreamForm(t *testing.T, a map[string]string, node string, p *corev1.Pod) {
	t.Helper()
	value := a[vgpu.AssignedDevicesAnnotation]
	if a[vgpu.DevicesToAllocateAnnotation] != value {
		t.Errorf("%s %q differs from %s %q", vgpu.DevicesToAllocateAnnotation, a[vgpu.DevicesToAllocateAnnotation],
			vgpu.AssignedDevicesAnnotation, value)
	}
	digits := regexp.MustCompile(`^[0-9]+$`)
	if a[vgpu.AssignedNodeAnnotation] != node || a[vgpu.BindPhaseAnnotation] != "allocating" ||
		!digits.MatchString(a[vgpu.AssignedTimeAnnotation]) || !digits.MatchString(a[vgpu.BindTimeAnnotation]) {
		t.Errorf("annotations %v", a)
	}
	requesting := 0
	for _, c := range p.Spec.Containers {
		_, count := c.Resources.Limits[resCount]
		_, memory := c.Resources.Limits[resMem]
		if count || memory {
			requesting++
		}
	}
	entries := strings.Split(value, ";")
	if len(entries) != requesting {
		t.Errorf("%d container entries in %q, want %d (one per container requesting vGPU)", len(entries), value, requesting)
	}
	for i, entry := range entries {
		pieces := strings.Split(entry, ":")
		if pieces[len(pieces)-1] != "" {
			t.Errorf("entry %d %q: last device not terminated by \":\"", i, entry)
		}
		for _, device := range pieces[:len(pieces)-1] {
			if !upstreamDevice.MatchString(device) {
				t.Errorf("entry %d device %q is not in upstream's form", i, device)
			}
		}
	}
}

// TestUpstreamPluginServesOurAssignments: the assignments this scheduler writes are served by
// the upstream device plugin's Allocate (v1.11 and v1.12, modelled in upstreamtest) the way
// kubelet drives it, one call per container with a vGPU count, in container order: each call
// hands the container the GPUs, memory limits (times the plugin's memory factor) and core
// limit this scheduler assigned it, and the last one ends the hand-off with bind-phase
// success. Two upstream limitations are recorded as they are, not worked around: upstream
// names the container by the entry's position among all containers (so a container without
// vGPU before a vGPU one gets its name on the cache directory), and v1.12 finds no pod for a
// pod with two vGPU containers.
func TestUpstreamPluginServesOurAssignments(t *testing.T) {
	sidecar := ctr("sidecar", "cpu=1")
	tests := []struct {
		name       string
		containers []corev1.Container
		// want is, per release, the containers upstream names in turn, then "!" and the
		// error if a call fails.
		want map[upstreamtest.PluginRelease]string
	}{
		{name: "one vGPU", containers: []corev1.Container{vgpuCtr("main", 1, 1000, 30)},
			want: map[upstreamtest.PluginRelease]string{upstreamtest.PluginV1_11: "main", upstreamtest.PluginV1_12: "main"}},
		{name: "two vGPUs in one container", containers: []corev1.Container{vgpuCtr("main", 2, 3000, 0)},
			want: map[upstreamtest.PluginRelease]string{upstreamtest.PluginV1_11: "main", upstreamtest.PluginV1_12: "main"}},
		{name: "whole GPUs", containers: []corev1.Container{vgpuCtr("main", 2, 0, 100)},
			want: map[upstreamtest.PluginRelease]string{upstreamtest.PluginV1_11: "main", upstreamtest.PluginV1_12: "main"}},
		{name: "sidecar after", containers: []corev1.Container{vgpuCtr("main", 1, 2000, 0), sidecar},
			want: map[upstreamtest.PluginRelease]string{upstreamtest.PluginV1_11: "main", upstreamtest.PluginV1_12: "main"}},
		{name: "sidecar first", containers: []corev1.Container{sidecar, vgpuCtr("main", 1, 2000, 0)},
			want: map[upstreamtest.PluginRelease]string{upstreamtest.PluginV1_11: "sidecar", upstreamtest.PluginV1_12: "sidecar"}},
		{name: "two vGPU containers", containers: []corev1.Container{vgpuCtr("a", 1, 1000, 0), sidecar, vgpuCtr("b", 2, 1000, 20)},
			want: map[upstreamtest.PluginRelease]string{upstreamtest.PluginV1_11: "a sidecar", upstreamtest.PluginV1_12: "!no valid pod"}},
	}
	goldens := map[upstreamtest.PluginRelease]upstreamtest.GoldenNode{}
	for _, g := range upstreamtest.Nodes() {
		if _, ok := goldens[g.Plugin]; !ok {
			goldens[g.Plugin] = g
		}
	}
	for _, tt := range tests {
		for _, release := range upstreamtest.PluginReleases {
			t.Run(tt.name+" "+string(release), func(t *testing.T) {
				g := goldens[release]
				node := upstreamNode(g)
				p := pod("p", "pg", tt.containers...)
				annotations := placeOn(t, node, p)
				checkUpstreamForm(t, annotations, node.Name, p)
				ours, err := vgpu.DecodePodDevices(annotations[vgpu.AssignedDevicesAnnotation])
				if err != nil {
					t.Fatal(err)
				}

				// The pod as kubelet's Allocate calls find it: bound, with the annotations.
				bound := p.DeepCopy()
				bound.Spec.NodeName = node.Name
				for k, v := range annotations {
					bound.Annotations[k] = v
				}
				var outcome []string
				failed := false
				entry := 0
				for _, c := range p.Spec.Containers {
					q, ok := c.Resources.Limits[resCount]
					if !ok || q.Value() == 0 {
						continue
					}
					served, err := release.Allocate([]*corev1.Pod{bound}, node.Name, int(q.Value()), g.MemoryFactor)
					if err != nil {
						outcome = append(outcome, "!"+strings.TrimPrefix(err.Error(), "upstream plugin: "))
						failed = true
						break
					}
					outcome = append(outcome, served.Container)
					checkServed(t, served, ours[entry], g.MemoryFactor)
					entry++
				}
				got := strings.Join(outcome, " ")
				if want := tt.want[release]; got != want && !(strings.HasPrefix(want, "!") && strings.HasPrefix(got, want)) {
					t.Errorf("upstream served %q, want %q", got, want)
				}
				if failed {
					return
				}
				if bound.Annotations[vgpu.BindPhaseAnnotation] != "success" || bound.Annotations[vgpu.AssignedTimeAnnotation] != vgpu.AssignedTimeReleased {
					t.Errorf("after the last container: bind phase %q, time %q; want success, %s", bound.Annotations[vgpu.BindPhaseAnnotation],
						bound.Annotations[vgpu.AssignedTimeAnnotation], vgpu.AssignedTimeReleased)
				}
				if bound.Annotations[vgpu.AssignedDevicesAnnotation] != annotations[vgpu.AssignedDevicesAnnotation] {
					t.Errorf("the ledger annotation changed")
				}
			})
		}
	}
}

// checkServed checks one upstream Allocate response against the entry we assigned.
func checkServed(t *testing.T, served upstreamtest.Served, entry vgpu.ContainerDevices, factor int32) {
	t.Helper()
	ids := make([]string, len(entry))
	want := map[string]string{"CUDA_DEVICE_SM_LIMIT": fmt.Sprint(entry[0].UsedCores)}
	for i, d := range entry {
		ids[i] = d.UUID
		want[fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_%d", i)] = fmt.Sprintf("%dm", int64(d.UsedMemory)*int64(factor))
		if d.UsedMemory == 0 {
			t.Errorf("device %d booked 0 memory: upstream would set a 0m limit", i)
		}
	}
	want["NVIDIA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
	for k, v := range want {
		if served.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, served.Env[k], v)
		}
	}
	if !served.Preload {
		t.Errorf("HAMi-core not preloaded")
	}
}
