package consolidate_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/consolidate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/pdb"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/charttest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// gpuMiB is each GPU's memory (a 24 GiB card); three 6000 MiB slices leave 6576 MiB free.
const gpuMiB, slice = 24576, 6000

// owner is who recreates a pod: a ReplicaSet, a StatefulSet, or nobody (a bare pod).
type owner string

const (
	replicaSet  owner = "ReplicaSet"
	statefulSet owner = "StatefulSet"
	bare        owner = ""
)

// runner is a running pod of slice MiB on GPU gpu (node gpu/2, two GPUs a node).
type runner struct {
	gpu   int
	owner owner
	keep  bool
}

// group is a PodGroup of minMember min and its running pods; a pending pod of memory MiB
// and cpu cores each when pending > 0.
type group struct {
	name          string
	min           int32
	running       []runner
	pending       int
	memory, cores int
	// keep marks the PodGroup volcano.sh/preemptable: "false".
	keep bool
	// queue is the PodGroup's queue; "" for queue a.
	queue string
	// app labels the pods app=<app> when set.
	app string
}

func uuid(i int) string { return fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i) }

// fragmented is the shape the action exists for: 2 nodes of 2 GPUs, each GPU holding three
// single-pod jobs of 6000 MiB that a ReplicaSet recreates (a Deployment's pods), 26,304 MiB
// free in all and 6,576 on each GPU.
func fragmented() []group {
	var gs []group
	for g := range 4 {
		for p := range 3 {
			gs = append(gs, group{name: fmt.Sprintf("d-%d-%d", g, p), min: 1, running: []runner{{gpu: g, owner: replicaSet}}})
		}
	}
	return gs
}

// cluster builds the nodes (16 cpus, 64Gi), queues a and b and the groups, each PodGroup with
// the minResources Volcano's controllers give it, the GPU ledgers derived as the cache does.
func cluster(t *testing.T, groups ...group) *api.ClusterInfo {
	t.Helper()
	objs := frameworktest.Objects{Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("a").Weight(1).Obj(), st.MakeQueue().Name("b").Weight(1).Obj()}}
	for _, q := range objs.Queues {
		q.Status.State = schedulingv1beta1.QueueStateOpen
	}
	for n := range 2 {
		devices := []vgpu.NodeDevice{}
		for g := 2 * n; g < 2*n+2; g++ {
			devices = append(devices, vgpu.NodeDevice{UUID: uuid(g), Count: 10, Memory: gpuMiB, Type: "NVIDIA-NVIDIA L4", Healthy: true, Mode: vgpu.ModeHAMiCore})
		}
		register, err := vgpu.EncodeNodeDevices(devices)
		if err != nil {
			t.Fatal(err)
		}
		allocatable := st.Resources("16", "64Gi", "pods", "110", string(vgpu.DefaultCountResource), "20",
			string(vgpu.DefaultMemoryResource), fmt.Sprint(2*gpuMiB), string(vgpu.DefaultCoresResource), "200")
		objs.Nodes = append(objs.Nodes, st.MakeNode().Name(fmt.Sprintf("n%d", n)).Annotation(vgpu.NodeDevicesAnnotation, register).
			Allocatable(allocatable).Capacity(allocatable).Obj())
	}
	for _, g := range groups {
		var pods []*corev1.Pod
		podOf := func(i int, memory, cores int) *st.PodWrapper {
			asks := st.Resources(fmt.Sprint(cores), "2Gi", string(vgpu.DefaultCountResource), "1", string(vgpu.DefaultMemoryResource), fmt.Sprint(memory))
			name := fmt.Sprintf("%s-%d", g.name, i)
			return st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Group(g.name).SchedulerName("volcano").
				Containers(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Limits: asks, Requests: asks.DeepCopy()}})
		}
		phase := schedulingv1beta1.PodGroupInqueue
		for i, r := range g.running {
			w := podOf(i, slice, 1)
			if r.owner != bare {
				controller := true
				w.Owner(metav1.OwnerReference{APIVersion: "apps/v1", Kind: string(r.owner), Name: g.name, UID: types.UID("owner-" + g.name), Controller: &controller})
			}
			if r.keep {
				w.Annotation(schedulingv1beta1.PodPreemptable, "false")
			}
			if g.app != "" {
				w.Label("app", g.app)
			}
			assignment, err := vgpu.PodDevices{{{UUID: uuid(r.gpu), Type: vgpu.DeviceTypeNVIDIA, UsedMemory: slice}}}.Encode()
			if err != nil {
				t.Fatal(err)
			}
			w.Node(fmt.Sprintf("n%d", r.gpu/2)).Phase(corev1.PodRunning).Annotation(vgpu.AssignedNodeAnnotation, fmt.Sprintf("n%d", r.gpu/2)).
				Annotation(vgpu.AssignedDevicesAnnotation, assignment).Annotation(vgpu.DevicesToAllocateAnnotation, "").
				Annotation(vgpu.BindPhaseAnnotation, vgpu.BindPhaseSuccess)
			pods = append(pods, w.Obj())
			phase = schedulingv1beta1.PodGroupRunning
		}
		for i := range g.pending {
			pods = append(pods, podOf(len(g.running)+i, g.memory, g.cores).Obj())
		}
		queue := cmp.Or(g.queue, "a")
		pg := st.MakePodGroup().Namespace("ns").Name(g.name).MinMember(g.min).Queue(queue).
			MinResources(minresources.Of(pods, int(g.min))).Phase(phase).Obj()
		if g.keep {
			pg.Annotations = map[string]string{schedulingv1beta1.PodPreemptable: "false"}
		}
		objs.PodGroups = append(objs.PodGroups, pg)
		objs.Pods = append(objs.Pods, pods...)
	}
	ci := objs.ClusterInfo()
	for _, n := range ci.NodeList {
		n.Devices = map[string]api.Devices{deviceshare.PluginName: deviceshare.NewDeriver().Derive(n)}
	}
	return ci
}

// registry has every plugin the chart's configuration names and the actions it is run with
// here, consolidate among them.
func registry() *framework.Registry { return registryOn(deviceshare.NewStaticShared()) }

// registryOn is registry with deviceshare's state (and gauges) in shared.
func registryOn(shared *deviceshare.Shared) *framework.Registry {
	return charttest.Registry(shared, enqueue.New(), allocate.New(), backfill.New(), consolidate.New())
}

// chartConf is the chart's configuration with actions in place of its own, and the
// consolidate action's arguments when given.
func chartConf(t testing.TB, reg *framework.Registry, actions, arguments string) *conf.SchedulerConfiguration {
	t.Helper()
	more := ""
	if arguments != "" {
		more = "configurations:\n- name: consolidate\n  arguments:\n" + arguments
	}
	return charttest.Conf(t, reg, actions, more)
}

// outcome is what one cycle did: the pods evicted ("pod: reason", sorted), the GPU each ran
// on, the pods pipelined, by node, and the PodGroup events.
type outcome struct {
	evicted   []string
	gpus      map[string]bool
	pipelined map[string]string
	events    []frameworktest.JobEvent
}

// cycle runs the chart's configuration with actions once over ci.
func cycle(t *testing.T, ci *api.ClusterInfo, actions string) outcome {
	t.Helper()
	return cycleWith(t, registry(), ci, actions, "")
}

// cycleWith runs the chart's configuration with actions and the consolidate arguments once
// over ci, with the actions of reg (whose consolidate remembers its moves).
func cycleWith(t *testing.T, reg *framework.Registry, ci *api.ClusterInfo, actions, arguments string) outcome {
	t.Helper()
	out := outcome{gpus: map[string]bool{}, pipelined: map[string]string{}}
	cache := &frameworktest.Cache{Snap: frameworktest.CloneCluster(ci), OnEvict: func(task *api.TaskInfo, reason string) error {
		out.evicted = append(out.evicted, task.Name+": "+reason)
		devices, err := vgpu.DecodePodDevices(task.Pod.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil {
			t.Error(err)
		}
		for _, c := range devices {
			for _, d := range c {
				out.gpus[d.UUID] = true
			}
		}
		return nil
	}}
	ssn := frameworktest.RunActions(t, cache, chartConf(t, reg, actions, arguments), reg)
	slices.Sort(out.evicted)
	for _, job := range ssn.Jobs {
		for _, task := range job.TaskStatusIndex[api.Pipelined] {
			out.pipelined[task.Name] = task.NodeName
		}
	}
	framework.CloseSession(ssn)
	out.events = cache.Events
	return out
}

const withConsolidate = "enqueue, allocate, consolidate, backfill"

// A pod of 20,000 MiB in the fragmented cluster waits for ever under the chart's actions;
// with consolidate, the three pods of one GPU move (each to a GPU with room for it now) and
// the pod is pipelined onto that GPU's node: 3 evictions, all on one GPU.
func TestFragmentedGPUsMakeRoomForAPod(t *testing.T) {
	ci := cluster(t, append(fragmented(), group{name: "big", min: 1, pending: 1, memory: 20000, cores: 2})...)
	if out := cycle(t, ci, "enqueue, allocate, backfill"); len(out.evicted) > 0 || len(out.pipelined) > 0 {
		t.Fatalf("without consolidate: evicted %q, pipelined %v; want nothing", out.evicted, out.pipelined)
	}
	out := cycle(t, ci, withConsolidate)
	if len(out.evicted) != 3 || len(out.gpus) != 1 {
		t.Fatalf("evicted %q on GPUs %v; want the 3 pods of one GPU", out.evicted, out.gpus)
	}
	var gpu string
	for g := range out.gpus {
		gpu = g
	}
	var freed int
	fmt.Sscanf(strings.TrimPrefix(gpu, "GPU-"), "%d", &freed)
	node := fmt.Sprintf("n%d", freed/2)
	reason := fmt.Sprintf("%s: moved to free %s on node %s for podgroup ns/big", consolidate.Name, gpu, node)
	for _, e := range out.evicted {
		if _, why, _ := strings.Cut(e, ": "); why != reason {
			t.Errorf("evicted %q, want the reason %q", e, reason)
		}
	}
	if got := out.pipelined["big-0"]; got != node {
		t.Errorf("big-0 pipelined onto %q, want the freed GPU's node %s (pipelined %v)", got, node, out.pipelined)
	}
	want := frameworktest.JobEvent{PodGroup: "big", Type: corev1.EventTypeNormal, Reason: consolidate.EventReasonConsolidated,
		Message: fmt.Sprintf("moved 3 pods to free %s on node %s: ns/d-%d-0-0, ns/d-%d-1-0, ns/d-%d-2-0", gpu, node, freed, freed, freed)}
	if !slices.Contains(out.events, want) {
		t.Errorf("PodGroup events %+v, want %+v", out.events, want)
	}
}

// Pods that may not move stay: GPU 0 holds a bare pod, GPU 1 a 3-pod StatefulSet gang at
// its minimum, GPU 2 a pod marked volcano.sh/preemptable: "false" (on the pod, or on its
// PodGroup); only GPU 3's pods move.
func TestPodsThatMayNotMoveStay(t *testing.T) {
	for _, mark := range []string{"pod", "podgroup"} {
		groups := fragmented()
		groups[0].running[0].owner = bare
		groups = slices.DeleteFunc(groups, func(g group) bool { return g.name == "d-1-0" || g.name == "d-1-1" || g.name == "d-1-2" })
		groups = append(groups, group{name: "gang", min: 3, running: []runner{{1, statefulSet, false}, {1, statefulSet, false}, {1, statefulSet, false}}})
		for i := range groups {
			if groups[i].name == "d-2-1" {
				groups[i].running[0].keep = mark == "pod"
				groups[i].keep = mark == "podgroup"
			}
		}
		ci := cluster(t, append(groups, group{name: "big", min: 1, pending: 1, memory: 20000, cores: 2})...)
		out := cycle(t, ci, withConsolidate)
		if len(out.evicted) != 3 || !out.gpus[uuid(3)] || len(out.gpus) != 1 {
			t.Fatalf("marked on the %s: evicted %q on GPUs %v; want GPU 3's three pods", mark, out.evicted, out.gpus)
		}
		if out.pipelined["big-0"] != "n1" {
			t.Errorf("marked on the %s: big-0 pipelined %v, want onto n1", mark, out.pipelined)
		}
	}
}

// A gang of two such pods needs two GPUs freed, and the fragmented cluster has room for the
// moved pods of one only: nothing moves (no move that does not end with the job placed).
func TestNoMoveUnlessTheWholeJobIsPlaced(t *testing.T) {
	ci := cluster(t, append(fragmented(), group{name: "pair", min: 2, pending: 2, memory: 20000, cores: 2})...)
	if out := cycle(t, ci, withConsolidate); len(out.evicted) > 0 || len(out.pipelined) > 0 {
		t.Fatalf("evicted %q, pipelined %v; want nothing", out.evicted, out.pipelined)
	}
}

// A pod that also lacks CPU on every node waits for more than GPU room: nothing moves,
// though moving a GPU's pods would free their CPU too.
func TestNoMoveForWhatIsNotGPURoom(t *testing.T) {
	ci := cluster(t, append(fragmented(), group{name: "big", min: 1, pending: 1, memory: 20000, cores: 12})...)
	if out := cycle(t, ci, withConsolidate); len(out.evicted) > 0 || len(out.pipelined) > 0 {
		t.Fatalf("evicted %q, pipelined %v; want nothing", out.evicted, out.pipelined)
	}
}

// The room a moved pod is to find is held for it within the cycle: GPU 0 has room for one
// more pod (6576 MiB free), GPU 1 for none (four pods), GPUs 2 and 3 hold one pod each. A
// gang of two 20,000 MiB pods needs both of those pods moved, and only one has somewhere to
// go: nothing moves. (Counting room free before the cycle, each move on its own finds GPU 0.)
func TestRoomForMovedPodsIsHeld(t *testing.T) {
	var groups []group
	for i, gpu := range []int{0, 0, 0, 1, 1, 1, 1, 2, 3} {
		groups = append(groups, group{name: fmt.Sprintf("d-%d", i), min: 1, running: []runner{{gpu: gpu, owner: replicaSet}}})
	}
	ci := cluster(t, append(groups, group{name: "pair", min: 2, pending: 2, memory: 20000, cores: 2})...)
	if out := cycle(t, ci, withConsolidate); len(out.evicted) > 0 || len(out.pipelined) > 0 {
		t.Fatalf("evicted %q, pipelined %v; want nothing", out.evicted, out.pipelined)
	}
	// One such pod alone moves one pod.
	ci = cluster(t, append(groups, group{name: "one", min: 1, pending: 1, memory: 20000, cores: 2})...)
	if out := cycle(t, ci, withConsolidate); len(out.evicted) != 1 || len(out.pipelined) != 1 {
		t.Fatalf("evicted %q, pipelined %v; want one pod moved and one pipelined", out.evicted, out.pipelined)
	}
}

// The limits a user sets: with maxMovesPerCycle 2 the three moves the pod needs are not made;
// with maxMovesPerHour 4 one pod gets its three moves and, the same hour, a second pod none
// (two cycles of the same action); with minPodAge 10m only GPU 3's pods, which started long
// ago, move; with queues "b" a job of queue a gets no moves, and neither do b's jobs take
// pods of queue a.
func TestLimitsAUserSets(t *testing.T) {
	big := group{name: "big", min: 1, pending: 1, memory: 20000, cores: 2}
	t.Run("maxMovesPerCycle", func(t *testing.T) {
		ci := cluster(t, append(fragmented(), big)...)
		out := cycleWith(t, registry(), ci, withConsolidate, "    maxMovesPerCycle: 2\n")
		if len(out.evicted) > 0 || len(out.pipelined) > 0 {
			t.Errorf("evicted %q, pipelined %v; want nothing", out.evicted, out.pipelined)
		}
	})
	t.Run("maxMovesPerHour", func(t *testing.T) {
		reg := registry()
		ci := cluster(t, append(fragmented(), big)...)
		if out := cycleWith(t, reg, ci, withConsolidate, "    maxMovesPerHour: 4\n"); len(out.evicted) != 3 {
			t.Fatalf("first cycle evicted %q, want 3", out.evicted)
		}
		ci = cluster(t, append(fragmented(), big)...)
		if out := cycleWith(t, reg, ci, withConsolidate, "    maxMovesPerHour: 4\n"); len(out.evicted) > 0 {
			t.Errorf("second cycle of the hour evicted %q, want none (1 move left of 4)", out.evicted)
		}
		if out := cycleWith(t, registry(), ci, withConsolidate, "    maxMovesPerHour: 4\n"); len(out.evicted) != 3 {
			t.Errorf("a fresh action evicted %q, want 3", out.evicted)
		}
	})
	t.Run("minPodAge", func(t *testing.T) {
		ci := cluster(t, append(fragmented(), big)...)
		recent := metav1.NewTime(time.Now().Add(-time.Minute))
		for _, job := range ci.Jobs {
			for _, task := range job.Tasks {
				if task.NodeName != "" && !strings.HasPrefix(task.Name, "d-3-") {
					task.Pod.Status.StartTime = &recent
				}
			}
		}
		out := cycleWith(t, registry(), ci, withConsolidate, "    minPodAge: 10m\n")
		if len(out.evicted) != 3 || !out.gpus[uuid(3)] {
			t.Errorf("evicted %q on %v, want GPU 3's pods, the only ones 10 minutes old", out.evicted, out.gpus)
		}
	})
	t.Run("queues", func(t *testing.T) {
		groups := append(fragmented(), big)
		for i := range groups {
			if !strings.HasPrefix(groups[i].name, "d-0-") {
				groups[i].queue = "b"
			}
		}
		ci := cluster(t, groups...)
		if out := cycleWith(t, registry(), ci, withConsolidate, "    queues: a\n"); len(out.evicted) > 0 {
			t.Errorf("with queue b's job left out, evicted %q, want none", out.evicted)
		}
		out := cycleWith(t, registry(), ci, withConsolidate, "    queues: b\n")
		if len(out.evicted) != 3 || out.gpus[uuid(0)] {
			t.Errorf("queue b's job evicted %q on %v, want three pods of queue b (not GPU 0's, of queue a)", out.evicted, out.gpus)
		}
	})
}

// volcano_vgpu_fragmented_memory is the memory consolidate can gather: in the fragmented
// cluster, with a 20,000 MiB pod waiting, the 6,576 MiB free on each of the 4 GPUs; with a
// 6,000 MiB pod waiting instead (it fits), or nothing waiting, none.
func TestFragmentedMemoryGauge(t *testing.T) {
	for _, c := range []struct {
		waiting []group
		want    float64
	}{
		{[]group{{name: "big", min: 1, pending: 1, memory: 20000, cores: 2}}, 4 * (gpuMiB - 3*slice)},
		{[]group{{name: "small", min: 1, pending: 1, memory: slice, cores: 2}}, 0},
		{nil, 0},
	} {
		shared := deviceshare.NewStaticShared()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(shared.Collectors()...)
		ci := cluster(t, append(fragmented(), c.waiting...)...)
		cycleWith(t, registryOn(shared), ci, "enqueue, backfill", "")
		want := fmt.Sprintf(`# HELP volcano_vgpu_fragmented_memory GPU memory free on GPUs that cannot hold the largest vGPU slice a waiting pod asks for (what the consolidate action can gather)
# TYPE volcano_vgpu_fragmented_memory gauge
volcano_vgpu_fragmented_memory %v
`, c.want)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_vgpu_fragmented_memory"); err != nil {
			t.Errorf("waiting %+v: %v", c.waiting, err)
		}
	}
}

// roomCounter is a plugin whose room search counts its calls and finds nothing.
type roomCounter struct{ calls *int }

func (roomCounter) Name() string { return "roomcounter" }
func (c roomCounter) OnSessionOpen(ssn *framework.Session) {
	ssn.AddRoomFn("roomcounter", func(framework.RoomAsk) (framework.Room, bool, bool) {
		*c.calls++
		return framework.Room{}, false, false
	})
}
func (roomCounter) OnSessionClose(*framework.Session) {}

// Five pods alike (single-pod jobs of 20,000 MiB and 2 cpus) and one that asks 3 cpus wait in
// the fragmented cluster; when the search finds no moves for the first, it is not run again
// for the four others alike, only for the one that differs: 2 searches, not 6.
func TestNoSearchAgainForAPodAlike(t *testing.T) {
	groups := fragmented()
	for i := range 5 {
		groups = append(groups, group{name: fmt.Sprintf("big%d", i), min: 1, pending: 1, memory: 20000, cores: 2})
	}
	groups = append(groups, group{name: "other", min: 1, pending: 1, memory: 20000, cores: 3})
	ci := cluster(t, groups...)
	calls := 0
	reg := registry()
	reg.RegisterPlugin("roomcounter", func(conf.Arguments) (framework.Plugin, error) { return roomCounter{&calls}, nil })
	text := strings.Replace(charttest.Text(t, withConsolidate), "tiers:\n", "tiers:\n- plugins:\n  - name: roomcounter\n", 1)
	frameworktest.RunActions(t, &frameworktest.Cache{Snap: ci}, charttest.Parse(t, reg, text), reg)
	if calls != 2 {
		t.Errorf("the room search ran %d times, want 2 (once for the five pods alike, once for the other)", calls)
	}
}

// budgets are PodDisruptionBudgets of namespace ns, listed.
type budgets []*policyv1.PodDisruptionBudget

func (b budgets) InNamespace(string) ([]*policyv1.PodDisruptionBudget, bool) { return b, true }

// A PodDisruptionBudget with no disruption left covers GPU 0's pods (app=guarded), the GPU the
// search tries first: with pdb named, another GPU's pods move; none of GPU 0's does.
func TestPodDisruptionBudgetKeepsItsPods(t *testing.T) {
	groups := fragmented()
	for i := range groups {
		if strings.HasPrefix(groups[i].name, "d-0-") {
			groups[i].app = "guarded"
		}
	}
	ci := cluster(t, append(groups, group{name: "big", min: 1, pending: 1, memory: 20000, cores: 2})...)
	pdbObj := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "guarded"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
	reg := registry()
	reg.RegisterPlugin(pdb.PluginName, pdb.NewBuilder(budgets{pdbObj}))
	text := strings.Replace(charttest.Text(t, withConsolidate), "  - name: deviceshare\n", "  - name: pdb\n  - name: deviceshare\n", 1)
	if !strings.Contains(text, "name: pdb") {
		t.Fatal("config/volcano-scheduler.conf: no deviceshare entry to put pdb before")
	}
	cfg := charttest.Parse(t, reg, text)
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	frameworktest.RunActions(t, cache, cfg, reg)
	if len(evicted) != 3 {
		t.Fatalf("evicted %q, want the three pods of a GPU other than GPU 0", evicted)
	}
	for _, name := range evicted {
		if strings.HasPrefix(name, "d-0-") {
			t.Errorf("evicted %s, which the PodDisruptionBudget covers with no disruption left (evicted %q)", name, evicted)
		}
	}
}
