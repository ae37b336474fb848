package deviceshare

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// reserveDevices serves the shipped configuration with a context reserve of 518 MiB on H200s.
var reserveDevices = devicewatch.Static(func() vgpu.NvidiaConfig {
	c := vgpu.DefaultNvidiaConfig()
	c.ContextReserves = vgpu.ContextReserves{{Models: []string{"H200"}, ContextReserveMiB: 518}}
	return c
}())

// reservePlugin is an enabled plugin under reserveDevices, its session open.
func reservePlugin(t *testing.T) *plugin {
	t.Helper()
	fp, err := NewBuilder(NewShared(reserveDevices))(conf.Arguments{VGPUEnableArg: true})
	if err != nil {
		t.Fatal(err)
	}
	p := fp.(*plugin)
	p.open(fixedClock)
	return p
}

// reserveNodeInfo is the node with the pods on it, its ledger derived under reserveDevices.
func reserveNodeInfo(node *corev1.Node, pods ...*corev1.Pod) *api.NodeInfo {
	n := api.NewNodeInfo(node)
	for _, p := range pods {
		n.AddTask(api.NewTaskInfo(p))
	}
	if d := NewDeriverFor(reserveDevices, nil).Derive(n); d != nil {
		n.Devices = map[string]api.Devices{PluginName: d}
	}
	return n
}

// withFactor is the node with the memory factor annotation our device plugin writes.
func withFactor(node *corev1.Node, factor string) *corev1.Node {
	node.Annotations[vgpu.NodeMemoryFactorAnnotation] = factor
	return node
}

// TestContextReserveFit: on a GPU whose model has a context reserve, a vgpu-memory request
// books the request plus the reserve (in the node's memory units, rounded up), and the
// assignment carries the sum; a percentage or whole-GPU request, a GPU of another model and a
// GPU in mig mode book no reserve. The reserve counts when the GPU's free memory is checked.
func TestContextReserveFit(t *testing.T) {
	pct := func(percent string) *corev1.Pod {
		return pod("new", "pg", ctr("main", string(resCount)+"=1", string(resPct)+"="+percent))
	}
	one := func(memory int) *corev1.Pod { return pod("new", "pg", vgpuCtr("main", 1, memory, 0)) }
	h200Node := func() *corev1.Node { return gpuNode("n1", 0, gpus(1, 10, 81920, h200)) }
	for _, tc := range []struct {
		name   string
		node   *corev1.Node
		onNode []*corev1.Pod
		pod    *corev1.Pod
		// want is the assignment; empty when the node must refuse the pod with wantReason.
		want       string
		wantReason constraint
	}{
		{name: "memory request: request + reserve", node: h200Node(), pod: one(2000), want: dev(0, "2518", "0")},
		{name: "factor 5 from the node: 104 units of reserve", node: withFactor(h200Node(), "5"), pod: one(400), want: dev(0, "504", "0")},
		{name: "factor 40: 13 units", node: withFactor(h200Node(), "40"), pod: one(100), want: dev(0, "113", "0")},
		{name: "percentage: its share only", node: h200Node(), pod: pct("50"), want: dev(0, "40960", "0")},
		{name: "whole GPU: all of it", node: h200Node(), pod: pod("new", "pg", vgpuCtr("main", 1, 0, 0)), want: dev(0, "81920", "0")},
		{name: "a model without a reserve", node: gpuNode("n1", 0, gpus(1, 10, 81920, a100)), pod: one(2000), want: dev(0, "2000", "0")},
		{name: "the reserve must fit in the free memory", node: h200Node(),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "80000", "0"))}, pod: one(1500), wantReason: memoryShort},
		{name: "request and reserve just fit", node: h200Node(),
			onNode: []*corev1.Pod{using("a", "x", dev(0, "80000", "0"))}, pod: one(1402), want: dev(0, "1920", "0")},
		{name: "request fits the GPU, request + reserve does not", node: h200Node(), pod: one(81920), wantReason: reserveOverGPU},
		{name: "request larger than the GPU", node: h200Node(), pod: one(90000), wantReason: memoryOverGPU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := place(t, reservePlugin(t), reserveNodeInfo(tc.node, tc.onNode...), tc.pod)
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got %q (constraint %d), want %q (constraint %d)", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

// TestContextReserveReason: the refusal of a request that fits the GPU only without the
// reserve says so, and how to ask for a whole GPU instead.
func TestContextReserveReason(t *testing.T) {
	p := reservePlugin(t)
	n := reserveNodeInfo(gpuNode("n1", 0, gpus(1, 10, 81920, h200)))
	s := p.predicate(api.NewTaskInfo(pod("new", "pg", vgpuCtr("main", 1, 81920, 0))), n)
	want := "hami-vgpuDeviceSharing error: a container's volcano.sh/vgpu-memory plus the GPU's CUDA context reserve " +
		"(contextReserves in the device ConfigMap) is more than the GPU's whole memory; leave volcano.sh/vgpu-memory out for a whole GPU"
	if s == nil || s.Code != api.UnschedulableAndUnresolvable || s.Reasons[0] != want {
		t.Errorf("predicate %+v, want UnschedulableAndUnresolvable %q", s, want)
	}
}

// TestMIGBooksNoReserve: a GPU in mig mode takes no reserve, whatever its model: a MIG
// instance is memory of its own.
func TestMIGBooksNoReserve(t *testing.T) {
	fp, err := NewBuilder(NewShared(devicewatch.Static(func() vgpu.NvidiaConfig {
		c := vgpu.DefaultNvidiaConfig()
		c.ContextReserves = vgpu.ContextReserves{{Models: []string{"A100"}, ContextReserveMiB: 518}}
		return c
	}())))(conf.Arguments{VGPUEnableArg: true})
	if err != nil {
		t.Fatal(err)
	}
	p := fp.(*plugin)
	p.open(fixedClock)
	n := api.NewNodeInfo(gpuNode("n1", 0, []gpuSpec{migGPU(10)}))
	l := NewDeriverFor(p.shared.devices, nil).Derive(n).(*ledger)
	if l.gpus[0].reserve != 0 {
		t.Fatalf("MIG GPU reserve %d, want 0", l.gpus[0].reserve)
	}
	n.Devices = map[string]api.Devices{PluginName: l}
	if got, reason := place(t, p, n, pod("new", "pg", vgpuCtr("main", 1, 4000, 0))); got != migDev(0, "group1", 0, "5120", "0") {
		t.Errorf("got %q (constraint %d), want a 1g.5gb instance", got, reason)
	}
}

// TestDeriveContextReserve: the deriver books what an assignment holds up to the request and
// the reserve, and tells the reserve apart (an upstream scheduler's assignment holds none);
// more is cut, the Event naming the reserve. An unreadable memory factor makes the node
// unusable only where a reserve needs it.
func TestDeriveContextReserve(t *testing.T) {
	node := gpuNode("n1", 0, gpus(2, 10, 81920, h200))
	n := api.NewNodeInfo(node)
	for _, p := range []*corev1.Pod{
		runningWith(pod("ours", "pg", vgpuCtr("c", 1, 2000, 0)), "n1", dev(0, "2518", "0")),
		runningWith(pod("upstream", "pg", vgpuCtr("c", 1, 2000, 0)), "n1", dev(0, "2000", "0")),
		runningWith(pod("pct", "pg", ctr("c", string(resCount)+"=1", string(resPct)+"=25")), "n1", dev(1, "20480", "0")),
		runningWith(pod("greedy", "pg", vgpuCtr("c", 1, 2000, 0)), "n1", dev(1, "3000", "0")),
	} {
		n.AddTask(api.NewTaskInfo(p))
	}
	events := record.NewFakeRecorder(10)
	l := NewDeriverFor(reserveDevices, events).Derive(n).(*ledger)
	if got, want := usageOf(l), "0:2/4518/0 1:2/22998/0"; got != want {
		t.Fatalf("bookings %s, want %s", got, want)
	}
	var reserves []string
	for _, b := range l.derived.bookings {
		reserves = append(reserves, b.pod+"="+strconv.Itoa(int(b.reserve)))
	}
	slices.Sort(reserves)
	if got, want := strings.Join(reserves, " "), "greedy=518 ours=518 pct=0 upstream=0"; got != want {
		t.Errorf("reserves %s, want %s", got, want)
	}
	want := `Warning VGPUAssignmentNotBooked booked only what the pod requests: container "c" on GPU ` + uuid(1) +
		": 3000 memory units and 0 cores for 2518 (with the GPU's context reserve of 518) and 0 requested"
	if len(events.Events) != 1 || <-events.Events != want {
		t.Errorf("want the one Event %q", want)
	}

	for _, tc := range []struct {
		name    string
		devices *devicewatch.Source
		usable  bool
	}{
		{"with a reserve to convert", reserveDevices, false},
		{"without one", defaultDevices, true},
	} {
		bad := api.NewNodeInfo(withFactor(gpuNode("n1", 0, gpus(1, 10, 81920, h200)), "5MiB"))
		l := NewDeriverFor(tc.devices, nil).Derive(bad).(*ledger)
		if tc.usable != (l.unavailable == nil) {
			t.Errorf("%s: unavailable %v, want usable %v", tc.name, l.unavailable, tc.usable)
		}
		if !tc.usable && !strings.Contains(l.unavailable.Reasons[0], vgpu.NodeMemoryFactorAnnotation+` "5MiB"`) {
			t.Errorf("%s: reason %q does not name the annotation and its value", tc.name, l.unavailable.Reasons[0])
		}
	}
}

// TestContextReserveFollowsTheConfig: deriving again after the device ConfigMap changed
// gives the GPUs the new reserve, though their register annotation did not change.
func TestContextReserveFollowsTheConfig(t *testing.T) {
	n := api.NewNodeInfo(gpuNode("n1", 0, gpus(1, 10, 81920, h200)))
	l := NewDeriverFor(defaultDevices, nil).Derive(n).(*ledger)
	n.Devices = map[string]api.Devices{PluginName: l}
	again := NewDeriverFor(reserveDevices, nil).Derive(n).(*ledger)
	if l.gpus[0].reserve != 0 || again.gpus[0].reserve != 518 {
		t.Errorf("reserve %d, then %d after the config changed; want 0, then 518", l.gpus[0].reserve, again.gpus[0].reserve)
	}
}

// TestQueueUsageLeavesTheReserveOut: the queue counts the memory its tasks asked for, placed
// in the session or found bound; the GPU books the reserve on top.
func TestQueueUsageLeavesTheReserveOut(t *testing.T) {
	running := runningWith(pod("running", "pg", vgpuCtr("main", 1, 2000, 0)), "n1", dev(0, "2518", "0"))
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{reserveNodeInfo(gpuNode("n1", 0, gpus(1, 10, 81920, h200)), running)}, 1,
		running, pod("new", "pg", vgpuCtr("main", 1, 1000, 0)))}
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{
		Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true}}}}}}
	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, NewBuilder(NewShared(reserveDevices)))
	ssn := framework.OpenSession(cache, cfg, reg, nil)
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(taskOf(t, ssn, "new"), ssn.Nodes["n1"]); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()
	if got, want := usageOf(ledgerOf(ssn.Nodes["n1"])), "0:2/4036/0"; got != want {
		t.Errorf("GPU books %s, want %s", got, want)
	}
	framework.CloseSession(ssn)
	if got, want := vgpuOf(cache.Allocated["default"]), "number 2000 memory 3e+06 cores 0"; got != want {
		t.Errorf("queue allocated %s, want %s", got, want)
	}
}

// TestContextReserveMetrics: the memory gauges show what the GPUs book, reserves included,
// and the reserve gauges which part of it is reserve: for every GPU with one, and for every pod
// holding some (golden file). A GPU of a model without one gets no reserve series.
func TestContextReserveMetrics(t *testing.T) {
	t.Cleanup(restartMetrics)
	shared := NewShared(reserveDevices)
	metricsRegistry = prometheus.NewRegistry()
	metricsRegistry.MustRegister(shared.Collectors()...)
	running := runningWith(pod("running", "pg", vgpuCtr("main", 1, 2000, 0)), "n1", dev(0, "2518", "0"))
	nodes := []*api.NodeInfo{
		reserveNodeInfo(gpuNode("n1", 0, []gpuSpec{gpus(1, 10, 81920, h200)[0], gpus(1, 10, 81920, a100)[0]}), running),
	}
	cache := &frameworktest.Cache{Snap: snapshot(nodes, 1, running,
		pod("new", "pg", vgpuCtr("main", 1, 1000, 0)), pod("half", "pg", ctr("main", string(resCount)+"=1", string(resPct)+"=50")))}
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{
		Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true}}}}}}
	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, NewBuilder(shared))
	ssn := framework.OpenSession(cache, cfg, reg, nil)
	stmt := ssn.NewStatement()
	for _, name := range []string{"new", "half"} {
		if err := stmt.Allocate(taskOf(t, ssn, name), ssn.Nodes["n1"]); err != nil {
			t.Fatal(err)
		}
	}
	stmt.Commit()
	framework.CloseSession(ssn)
	compareGolden(t, "testdata/metrics_reserve.golden")
}
