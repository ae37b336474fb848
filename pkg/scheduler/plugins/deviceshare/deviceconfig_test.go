package deviceshare

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// sliceNames are resource names a device ConfigMap may give instead of the shipped ones.
var sliceNames = vgpu.ResourceNames{
	Count: "example.com/gpu-slices", Memory: "example.com/gpu-slice-memory",
	Cores: "example.com/gpu-slice-cores", MemoryPercentage: "example.com/gpu-slice-memory-percentage",
}

// sliceDevices serves a configuration with sliceNames.
func sliceDevices() *devicewatch.Source {
	c := vgpu.DefaultNvidiaConfig()
	c.ResourceCountName, c.ResourceMemoryName = sliceNames.Count, sliceNames.Memory
	c.ResourceCoreName, c.ResourceMemoryPercentageName = sliceNames.Cores, sliceNames.MemoryPercentage
	return devicewatch.Static(c)
}

// sliceNode is gpuNode with its vGPU allocatable under sliceNames, as a device plugin
// reading the same ConfigMap advertises it.
func sliceNode(specs []gpuSpec) *corev1.Node {
	node := gpuNode("n1", 0, specs)
	// Allocatable and Capacity share one list.
	list := node.Status.Allocatable
	for shipped, renamed := range map[corev1.ResourceName]corev1.ResourceName{
		resCount: sliceNames.Count, resMem: sliceNames.Memory, resCores: sliceNames.Cores,
	} {
		list[renamed] = list[shipped]
		delete(list, shipped)
	}
	return node
}

// sliceCtr is a container asking for count vGPUs of memory MiB each under sliceNames.
func sliceCtr(count, memory int) corev1.Container {
	return ctr("main", fmt.Sprintf("%s=%d", sliceNames.Count, count), fmt.Sprintf("%s=%d", sliceNames.Memory, memory))
}

// TestCustomResourceNames: with a device configuration that renames the resources, the
// deriver judges nodes by the new names, and the plugin reads requests, explains refusals
// and places pods under them; the shipped names no longer ask for vGPUs.
func TestCustomResourceNames(t *testing.T) {
	devices := sliceDevices()
	n := api.NewNodeInfo(sliceNode(gpus(2, 10, 30000, h200)))
	l := NewDeriverFor(devices, nil).Derive(n).(*ledger)
	if l.unavailable != nil || len(l.gpus) != 2 {
		t.Fatalf("ledger under the ConfigMap's names: unavailable %v, %d GPUs; want 2 usable GPUs", l.unavailable, len(l.gpus))
	}
	if s := NewDeriverFor(defaultDevices, nil).Derive(n).(*ledger).unavailable; s == nil || !strings.Contains(s.Reasons[0], "allocatable "+string(resCount)+" is 0") {
		t.Errorf("ledger under the shipped names: unavailable %v, want the shipped count missing", s)
	}
	n.Devices = map[string]api.Devices{PluginName: l}

	fp, err := NewBuilder(NewShared(devices))(conf.Arguments{VGPUEnableArg: true})
	if err != nil {
		t.Fatal(err)
	}
	p := fp.(*plugin)
	p.open(fixedClock)

	fits := api.NewTaskInfo(pod("fits", "pg", sliceCtr(1, 1000)))
	if s := p.predicate(fits, n); s != nil {
		t.Fatalf("predicate refused a pod asking for %s: %v", sliceNames.Count, s.Reasons)
	}
	fits.Status = api.Allocated
	e := &framework.Event{Task: fits, Node: n}
	p.allocate(e)
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	if got := fits.BindAnnotations[vgpu.AssignedDevicesAnnotation]; !strings.HasPrefix(got, uuid(0)+",") || !strings.Contains(got, ",1000,") {
		t.Errorf("assignment %q, want 1000 MiB on GPU 0", got)
	}

	tooMany := api.NewTaskInfo(pod("too-many", "pg", sliceCtr(3, 1000)))
	if s := p.predicate(tooMany, n); s == nil || !strings.Contains(s.Reasons[0], string(sliceNames.Count)) {
		t.Errorf("predicate for 3 GPUs on 2: %v, want a refusal naming %s", s, sliceNames.Count)
	}

	if p.request(api.NewTaskInfo(pod("shipped", "pg", vgpuCtr("main", 1, 1000, 0)))).wantsGPUs() {
		t.Errorf("a pod asking for %s wants vGPUs under the ConfigMap's names", resCount)
	}
}

// TestConfigMapArguments: once the configuration is loaded (Shared.Configure), sessions
// read the names of the ConfigMap the plugin's arguments name, the deriver Start gave the
// cache follows that ConfigMap, and the cache is told to derive its ledgers again.
func TestConfigMapArguments(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-system", Name: "gpu-slices"},
		Data: map[string]string{vgpu.DeviceConfigKey: fmt.Sprintf("nvidia:\n  resourceCountName: %s\n  resourceMemoryName: %s\n  resourceCoreName: %s\n",
			sliceNames.Count, sliceNames.Memory, sliceNames.Cores)},
	}
	shared := NewSharedOn(kubefake.NewClientset(cm), nil)
	cache := &frameworktest.ComponentCache{}
	shared.Start(ctx, cache)
	if len(cache.Derivers) != 1 {
		t.Fatalf("Start added %d device derivers to the cache, want 1", len(cache.Derivers))
	}
	n := api.NewNodeInfo(sliceNode(gpus(1, 10, 30000, h200)))
	deriver := cache.Derivers[0]
	if l := deriver.Derive(n).(*ledger); l.unavailable == nil {
		t.Errorf("before any configuration the deriver follows the default ConfigMap, which is missing: want the node unusable")
	}

	args := conf.Arguments{VGPUEnableArg: true, KnownGeometriesCMNameArg: "gpu-slices", KnownGeometriesCMNamespaceArg: "gpu-system"}
	shared.Configure(ctx, &conf.SchedulerConfiguration{Actions: "allocate",
		Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName, Arguments: args}}}}})
	if cache.Rederived.Load() == 0 {
		t.Error("the ConfigMap in use changed and the cache was not told to derive the ledgers again")
	}
	fp, err := NewBuilder(shared)(args)
	if err != nil {
		t.Fatal(err)
	}
	p := fp.(*plugin)
	p.open(time.Now())
	want := sliceNames
	want.MemoryPercentage = vgpu.DefaultMemoryPercentageResource // left out of the ConfigMap
	if p.names != want {
		t.Errorf("plugin names %+v, want the ConfigMap's %+v", p.names, want)
	}
	if l := deriver.Derive(n).(*ledger); l.unavailable != nil {
		t.Errorf("after the session the deriver still judges by other names: %v", l.unavailable.Reasons)
	}
}

// What deviceshare alone places follows the device ConfigMap in use: its count and memory
// names, which make a container a vGPU request; an entry places them only with vGPU on.
func TestSharedOwnsTheVGPUResourcesInUse(t *testing.T) {
	shared := NewShared(sliceDevices())
	if got, want := shared.OwnedResources(), []corev1.ResourceName{sliceNames.Count, sliceNames.Memory}; !slices.Equal(got, want) {
		t.Errorf("OwnedResources = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		args conf.Arguments
		want bool
	}{
		{nil, false},
		{conf.Arguments{VGPUEnableArg: false}, false},
		{conf.Arguments{VGPUEnableArg: "true"}, true},
		{conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: "tight"}, false},
	} {
		if got := shared.PlacesWith(tt.args); got != tt.want {
			t.Errorf("PlacesWith(%v) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
