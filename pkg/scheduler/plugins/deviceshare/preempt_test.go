package deviceshare

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/capacity"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// gpuJob is a PodGroup of a test cluster: its priority, minMember and pods (running ones
// have a node).
type gpuJob struct {
	name      string
	priority  int32
	minMember int32
	pods      []*corev1.Pod
}

// gpuCluster is the node, with the jobs' running pods on it and its ledger derived as the
// cache would, and the jobs in queue "default".
func gpuCluster(node *corev1.Node, jobs ...gpuJob) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
	n := api.NewNodeInfo(node)
	for _, j := range jobs {
		pg := st.MakePodGroup().Namespace(testNS).Name(j.name).MinMember(j.minMember).Queue("default").Phase(schedulingv1beta1.PodGroupInqueue).Obj()
		job := api.NewJobInfo(api.NewJobID(testNS, j.name))
		job.Priority = j.priority
		for _, p := range j.pods {
			task := api.NewTaskInfo(p)
			job.AddTask(task)
			if p.Spec.NodeName != "" {
				pg.Status.Phase = schedulingv1beta1.PodGroupRunning
				n.AddTask(task)
			}
		}
		job.SetPodGroup(pg, "default")
		ci.Jobs[job.UID] = job
	}
	if d := NewDeriverFor(defaultDevices, nil).Derive(n); d != nil {
		n.Devices = map[string]api.Devices{PluginName: d}
	}
	ci.Nodes[n.Name], ci.NodeList = n, []*api.NodeInfo{n}
	return ci
}

// holding is n running pods of job, named job-i, each holding one vGPU of memory MiB on
// the GPU gpuOf(i) of node n1.
func holding(job string, n, memory int, gpuOf func(int) int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		mem := fmt.Sprint(memory)
		pods[i] = runningWith(pod(fmt.Sprintf("%s-%d", job, i), job, vgpuCtr("main", 1, memory, 0)), "n1", dev(gpuOf(i), mem, "0"))
	}
	return pods
}

// asking is n pending pods of job, each asking one container of count vGPUs of memory MiB.
func pendingPods(job string, n, count, memory int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("%s-%d", job, i), job, vgpuCtr("main", count, memory, 0))
	}
	return pods
}

// podNames is job-from to job-(to-1), sorted as strings.
func podNames(job string, from, to int) []string {
	var names []string
	for i := from; i < to; i++ {
		names = append(names, fmt.Sprintf("%s-%d", job, i))
	}
	slices.Sort(names)
	return names
}

// preemptTiers is priority, gang and conformance, then deviceshare (vGPU on, binpack).
func preemptTiers(actions string) *conf.SchedulerConfiguration {
	return &conf.SchedulerConfiguration{Actions: actions, Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}},
		{Plugins: []conf.PluginOption{{Name: predicates.PluginName}, {Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: PolicyBinpack}}}},
	}}
}

// withPlugin registers deviceshare (its clock fixed) in reg so that *built is the
// session's plugin.
func withPlugin(reg *framework.Registry, built **plugin) *framework.Registry {
	reg.RegisterPlugin(PluginName, func(args conf.Arguments) (framework.Plugin, error) {
		fp, err := newPlugin(args)
		if err == nil {
			*built = fp.(*plugin)
			(*built).now = func() time.Time { return fixedClock }
		}
		return fp, err
	})
	return reg
}

// testRegistry has the plugins preemptTiers names, deviceshare through withPlugin.
func testRegistry(built **plugin) *framework.Registry {
	return withPlugin(registry(map[string]framework.PluginBuilder{priority.PluginName: priority.New, gang.PluginName: gang.New,
		conformance.PluginName: conformance.New, predicates.PluginName: predicates.New}), built)
}

// runPreempt runs preempt over the cluster and returns the pods evicted (sorted), the
// session and its deviceshare plugin.
func runPreempt(t *testing.T, ci *api.ClusterInfo) ([]string, *framework.Session, *plugin) {
	t.Helper()
	var p *plugin
	reg := testRegistry(&p)
	reg.RegisterAction(preempt.New())
	evicted, ssn := runEvicting(t, ci, preemptTiers(preempt.Name), reg)
	return evicted, ssn, p
}

// runEvicting runs cfg's actions over the cluster with reg and returns the pods they evicted
// (sorted) and the session.
func runEvicting(t *testing.T, ci *api.ClusterInfo, cfg *conf.SchedulerConfiguration, reg *framework.Registry) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	ssn := frameworktest.RunActions(t, cache, cfg, reg)
	slices.Sort(evicted)
	return evicted, ssn
}

// promisedGPUs is the GPUs the session's deviceshare plugin p promised the pipelined tasks
// of job, by pod.
func promisedGPUs(ssn *framework.Session, p *plugin, job string) map[string][]string {
	out := map[string][]string{}
	for _, task := range ssn.Jobs[api.JobID(testNS+"/"+job)].Tasks {
		if task.Status != api.Pipelined {
			continue
		}
		out[task.Name] = nil
		for _, devices := range p.promised[task.UID] {
			for _, d := range devices {
				out[task.Name] = append(out[task.Name], d.UUID)
			}
		}
	}
	return out
}

func TestPreemptVGPU(t *testing.T) {
	gpu0 := func(int) int { return 0 }
	byPair := func(i int) int { return i / 2 }
	cases := []struct {
		name string
		ci   *api.ClusterInfo
		job  string
		// wantEvicted: which of equally ranked pods go is the session's task order's choice.
		wantEvicted []string
		// wantPromised: each pipelined pod of job and the GPUs it is promised.
		wantPromised map[string][]string
	}{
		{"a gang evicts just enough on its GPU",
			gpuCluster(gpuNode("n1", 0, gpus(1, 10, 24576, h200)),
				gpuJob{"low", 1, 1, holding("low", 4, 6000, gpu0)},
				gpuJob{"high", 10, 2, pendingPods("high", 2, 1, 6000)}),
			"high", []string{"low-2", "low-3"},
			map[string][]string{"high-0": {uuid(0)}, "high-1": {uuid(0)}}},
		{"two half-free GPUs are not one free GPU: the pods of one GPU go",
			gpuCluster(gpuNode("n1", 0, gpus(2, 10, 24576, h200)),
				gpuJob{"low", 1, 1, holding("low", 4, 10000, byPair)},
				gpuJob{"high", 10, 1, pendingPods("high", 1, 1, 20000)}),
			"high", []string{"low-2", "low-3"},
			map[string][]string{"high-0": {uuid(1)}}},
		{"a whole GPU of a dense node: its eight pods",
			gpuCluster(gpuNode("n1", 0, gpus(8, 10, 81920, h200)),
				gpuJob{"low", 1, 1, holding("low", 64, 10000, func(i int) int { return i / 8 })},
				gpuJob{"high", 10, 1, pendingPods("high", 1, 1, 81920)}),
			"high", podNames("low", 56, 64),
			map[string][]string{"high-0": {uuid(7)}}},
		{"two whole GPUs of a dense node: their sixteen pods, past the bound on sets tried",
			gpuCluster(gpuNode("n1", 0, gpus(8, 10, 81920, h200)),
				gpuJob{"low", 1, 1, holding("low", 64, 10000, func(i int) int { return i / 8 })},
				gpuJob{"high", 10, 1, pendingPods("high", 1, 2, 81920)}),
			"high", podNames("low", 48, 64),
			map[string][]string{"high-0": {uuid(6), uuid(7)}}},
		{"a gang that cannot all fit evicts nothing",
			gpuCluster(gpuNode("n1", 0, gpus(1, 10, 24576, h200)),
				gpuJob{"low", 1, 1, holding("low", 4, 6000, gpu0)},
				gpuJob{"high", 10, 2, pendingPods("high", 2, 1, 13000)}),
			"high", nil, map[string][]string{}},
		{"two vGPUs of 13000 MiB on one GPU evict nothing",
			gpuCluster(gpuNode("n1", 0, gpus(1, 10, 24576, h200)),
				gpuJob{"low", 1, 1, holding("low", 4, 6000, gpu0)},
				gpuJob{"high", 10, 1, pendingPods("high", 1, 2, 13000)}),
			"high", nil, map[string][]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evicted, ssn, p := runPreempt(t, tc.ci)
			if !reflect.DeepEqual(evicted, tc.wantEvicted) {
				t.Errorf("evicted %v, want %v", evicted, tc.wantEvicted)
			}
			if got := promisedGPUs(ssn, p, tc.job); !reflect.DeepEqual(got, tc.wantPromised) {
				t.Errorf("pipelined %v, want %v", got, tc.wantPromised)
			}
			l := ledgerOf(ssn.Nodes["n1"])
			for i, g := range l.gpus {
				if g.used.memory > int64(g.memory) || g.used.devices > g.slots {
					t.Errorf("GPU %d over-booked: %+v", i, g.used)
				}
			}
		})
	}
}

// TestAnnotatedTaskPriorityOrdersItsOwnJobOnly: a pod's author may set its task priority
// with the volcano.sh/task-priority annotation; between jobs the job's priority decides which
// pod goes. GPU 0 holds a pod of a priority-1 job annotated 1000000, GPU 1 a pod of a
// priority-5 job, GPU 2 their jobs' second pods beside a pod of a priority-20 job; a
// priority-10 pod needing 20000 MiB evicts the priority-1 job's pod, not the other.
func TestAnnotatedTaskPriorityOrdersItsOwnJobOnly(t *testing.T) {
	on := func(name, job string, gpu, memory int) *corev1.Pod {
		return runningWith(pod(name, job, vgpuCtr("main", 1, memory, 0)), "n1", dev(gpu, fmt.Sprint(memory), "0"))
	}
	annotated := on("low-0", "low", 0, 20000)
	annotated.Annotations[api.TaskPriorityAnnotation] = "1000000"
	ci := gpuCluster(gpuNode("n1", 0, gpus(3, 10, 24576, h200)),
		gpuJob{"low", 1, 1, []*corev1.Pod{annotated, on("low-1", "low", 2, 2000)}},
		gpuJob{"middle", 5, 1, []*corev1.Pod{on("middle-0", "middle", 1, 20000), on("middle-1", "middle", 2, 2000)}},
		gpuJob{"other", 20, 1, []*corev1.Pod{on("other-0", "other", 2, 20000)}},
		gpuJob{"high", 10, 1, pendingPods("high", 1, 1, 20000)})
	evicted, _, _ := runPreempt(t, ci)
	if want := []string{"low-0"}; !reflect.DeepEqual(evicted, want) {
		t.Errorf("evicted %v, want %v: the annotation ranks a pod within its own job only", evicted, want)
	}
}

// TestGangMinimumBoundsTheSetNotTheCandidates: gang g (minMember 2) runs g-0 and g-1 on GPU 0
// and g-2 on GPU 1; job l (minMember 1) runs l-0 on GPU 1 and l-1 on GPU 2 beside a pod of a
// higher-priority job. A pod needing 20000 MiB frees GPU 1 by evicting g-2 and l-0, which
// leaves both jobs at their minimum; freeing GPU 0 would take g below its own. Cutting the
// candidates to each job's surplus in name order (g-0 and l-0) would free no GPU.
func TestGangMinimumBoundsTheSetNotTheCandidates(t *testing.T) {
	on := func(name, job string, gpu, memory int) *corev1.Pod {
		return runningWith(pod(name, job, vgpuCtr("main", 1, memory, 0)), "n1", dev(gpu, fmt.Sprint(memory), "0"))
	}
	ci := gpuCluster(gpuNode("n1", 0, gpus(3, 10, 24576, h200)),
		gpuJob{"g", 1, 2, []*corev1.Pod{on("g-0", "g", 0, 10000), on("g-1", "g", 0, 10000), on("g-2", "g", 1, 10000)}},
		gpuJob{"l", 1, 1, []*corev1.Pod{on("l-0", "l", 1, 10000), on("l-1", "l", 2, 10000)}},
		gpuJob{"other", 20, 1, []*corev1.Pod{on("other-0", "other", 2, 12000)}},
		gpuJob{"high", 10, 1, pendingPods("high", 1, 1, 20000)})
	evicted, ssn, p := runPreempt(t, ci)
	if want := []string{"g-2", "l-0"}; !reflect.DeepEqual(evicted, want) {
		t.Errorf("evicted %v, want %v", evicted, want)
	}
	if got, want := promisedGPUs(ssn, p, "high"), map[string][]string{"high-0": {uuid(1)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pipelined %v, want %v", got, want)
	}
}

// TestPipelinedBoundOnlyOnceVictimsAreGone: a vGPU pod whose GPU is held by a pod being
// deleted is pipelined there, not bound, even where the node's vGPU totals have room now;
// once the pod is gone it is bound with an assignment on that GPU, and as soon as another
// node has room it is bound there instead.
func TestPipelinedBoundOnlyOnceVictimsAreGone(t *testing.T) {
	cluster := func(victimThere bool) *api.ClusterInfo {
		low := []*corev1.Pod{runningWith(pod("other", "low", vgpuCtr("main", 1, 12000, 0)), "n1", dev(1, "12000", "0"))}
		if victimThere {
			v := runningWith(pod("victim", "low", vgpuCtr("main", 1, 12000, 0)), "n1", dev(0, "12000", "0"))
			v.DeletionTimestamp = &metav1.Time{Time: fixedClock}
			low = append(low, v)
		}
		return gpuCluster(gpuNode("n1", 0, gpus(2, 10, 24576, h200)),
			gpuJob{"low", 1, 1, low}, gpuJob{"high", 10, 1, pendingPods("high", 1, 1, 20000)})
	}

	runAllocate := func(cache *frameworktest.Cache) (*framework.Session, *plugin) {
		var p *plugin
		ssn := frameworktest.RunActions(t, cache, preemptTiers(allocate.Name), withAllocate(testRegistry(&p)))
		return ssn, p
	}
	cache := &frameworktest.Cache{Snap: cluster(true)}
	ssn, p := runAllocate(cache)
	if len(cache.Bound) != 0 {
		t.Fatalf("bound %s while its GPU is still held", cache.Bound[0].Name)
	}
	if got, want := promisedGPUs(ssn, p, "high"), map[string][]string{"high-0": {uuid(0)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pipelined %v, want %v", got, want)
	}

	cache = &frameworktest.Cache{Snap: cluster(false)}
	runAllocate(cache)
	if len(cache.Bound) != 1 || boundPerGPU(t, cache)[uuid(0)] != 1 {
		t.Fatalf("bound %v, want high-0 on GPU 0", boundPerGPU(t, cache))
	}

	// Another node has a free GPU by now: the preemptor is bound there at once, not held back
	// for the victim's GPU.
	freed := cluster(true)
	n2 := api.NewNodeInfo(gpuNode("n2", 2, gpus(1, 10, 24576, h200)))
	n2.Devices = map[string]api.Devices{PluginName: NewDeriverFor(defaultDevices, nil).Derive(n2)}
	freed.Nodes[n2.Name], freed.NodeList = n2, append(freed.NodeList, n2)
	cache = &frameworktest.Cache{Snap: freed}
	runAllocate(cache)
	if len(cache.Bound) != 1 || cache.Bound[0].NodeName != "n2" || boundPerGPU(t, cache)[uuid(2)] != 1 {
		t.Fatalf("bound %v, want high-0 on n2's free GPU", boundPerGPU(t, cache))
	}
}

// TestEvictAndPipelineDiscard: evicting a vGPU pod and pipelining a preemptor onto its slice
// is undone exactly: the node (its ledger included), the tasks and the plugin's promises.
func TestEvictAndPipelineDiscard(t *testing.T) {
	ci := gpuCluster(gpuNode("n1", 0, gpus(1, 10, 24576, h200)),
		gpuJob{"low", 1, 1, holding("low", 4, 6000, func(int) int { return 0 })},
		gpuJob{"high", 10, 1, pendingPods("high", 1, 1, 6000)})
	var p *plugin
	ssn := framework.OpenSession(&frameworktest.Cache{Snap: ci}, preemptTiers(preempt.Name), testRegistry(&p), nil)
	node := ssn.Nodes["n1"]
	victim := ssn.Jobs[api.JobID(testNS+"/low")].Tasks["uid-low-3"]
	preemptor := ssn.Jobs[api.JobID(testNS+"/high")].Tasks["uid-high-0"]
	beforeNode, beforeVictim, beforePreemptor := node.Clone(), victim.Clone(), preemptor.Clone()

	stmt := ssn.NewStatement()
	if ssn.Predicate(preemptor, node) == nil {
		t.Fatal("the preemptor fits before any eviction")
	}
	if err := stmt.Evict(victim, "preempt"); err != nil {
		t.Fatal(err)
	}
	if s := ssn.Predicate(preemptor, node); s != nil {
		t.Fatalf("the preemptor does not fit the releasing slice: %v", s.Reasons)
	}
	if err := stmt.Pipeline(preemptor, node); err != nil {
		t.Fatal(err)
	}
	if got := usageOf(ledgerOf(node)); got != "0:4/24000/0" {
		t.Errorf("the hand-over booked the ledger: %s", got)
	}
	stmt.Discard()
	preemptor.LastTransaction = nil
	if !reflect.DeepEqual(node.Clone(), beforeNode) {
		t.Error("Discard did not restore the node")
	}
	if !reflect.DeepEqual(victim, beforeVictim) || !reflect.DeepEqual(preemptor, beforePreemptor) {
		t.Errorf("Discard did not restore the tasks: victim %s, preemptor %s", victim.Status, preemptor.Status)
	}
	if len(p.promised) != 0 {
		t.Errorf("Discard left promises %v", p.promised)
	}
}

// TestSelectVictimsIsMinimal compares the session's choice of victims with every subset of
// the running pods on small generated nodes. The pods belong to two or three jobs of
// priorities 0 to 2, each a gang at its minMember, above it or below it (a pod of it pending
// again, as after an eviction); a pod's own priority comes from its spec or, for about half,
// from a volcano.sh/task-priority annotation of up to 1000000. The preemptor's job
// has priority 10. The candidates are what the plugins (priority, gang, conformance) let go,
// the sets those that gang lets go together (PreemptTogether). The brute force takes every
// subset that fits the preemptor and leaves each job it touches at its minimum, and wants the
// same minimum always: fewest victims, then lowest ranks (each its job's priority, then its
// own, the highest compared first), then least memory, then earliest in pod order.
func TestSelectVictimsIsMinimal(t *testing.T) {
	rng := rand.New(rand.NewSource(38))
	const split, gpuMemory = 4, 10000
	for round := range 2000 {
		nGPUs := 1 + rng.Intn(3)
		type victimJob struct {
			gpuJob
			running int32
		}
		jobs := make([]victimJob, 2+rng.Intn(2))
		for j := range jobs {
			jobs[j].name, jobs[j].priority = fmt.Sprintf("j%d", j), int32(rng.Intn(3))
		}
		var pods []*corev1.Pod
		jobOf := map[int]int{}
		rankOf := map[int]int64{} // job priority in the high bits, the pod's own below
		for i := range 1 + rng.Intn(8) {
			count := 1 + rng.Intn(min(2, nGPUs))
			memory, cores := 1000*(1+rng.Intn(5)), 10*rng.Intn(6)
			first := rng.Intn(nGPUs)
			assignment := ""
			for v := range count {
				assignment += dev((first+v)%nGPUs, fmt.Sprint(memory), fmt.Sprint(cores))
			}
			j := rng.Intn(len(jobs))
			v := runningWith(pod(fmt.Sprintf("v%d", i), jobs[j].name, vgpuCtr("main", count, memory, cores)), "n1", assignment)
			prio := int32(rng.Intn(3))
			v.Spec.Priority = &prio
			own := int64(prio)
			if rng.Intn(2) == 0 {
				own = int64(rng.Intn(3)) * 500000
				v.Annotations[api.TaskPriorityAnnotation] = fmt.Sprint(own)
			}
			pods = append(pods, v)
			jobs[j].pods = append(jobs[j].pods, v)
			jobs[j].running++
			jobOf[i], rankOf[i] = j, int64(jobs[j].priority)<<32|own
		}
		all := []gpuJob{}
		for j := range jobs {
			switch r := jobs[j].running; {
			case r == 0:
				continue
			case r > 1 && rng.Intn(2) == 0: // above its minimum
				jobs[j].minMember = 1 + int32(rng.Intn(int(r-1)))
			case rng.Intn(2) == 0: // below: one of its pods is pending again
				jobs[j].minMember = r + 1
				jobs[j].pods = append(jobs[j].pods, pod(jobs[j].name+"-again", jobs[j].name, vgpuCtr("main", 1, 1000, 0)))
			default: // at its minimum
				jobs[j].minMember = r
			}
			all = append(all, jobs[j].gpuJob)
		}

		want := struct{ count, memory, cores int }{1 + rng.Intn(nGPUs), 1000 * (1 + rng.Intn(9)), 10 * rng.Intn(11)}
		asks := vgpuCtr("main", want.count, want.memory, want.cores)
		if rng.Intn(3) == 0 { // a share of each GPU's memory instead
			pct := 10 * (1 + rng.Intn(9))
			want.memory = gpuMemory * pct / 100
			asks = vgpuCtr("main", want.count, 0, want.cores)
			asks.Resources.Limits[resPct] = *resource.NewQuantity(int64(pct), resource.DecimalSI)
			asks.Resources.Requests = asks.Resources.Limits.DeepCopy()
		}
		all = append(all, gpuJob{"high", 10, 1, []*corev1.Pod{pod("new", "high", asks)}})
		var p *plugin
		ssn := framework.OpenSession(&frameworktest.Cache{Snap: gpuCluster(gpuNode("n1", 0, gpus(nGPUs, split, gpuMemory, h200)), all...)},
			preemptTiers(preempt.Name), testRegistry(&p), nil)
		node := ssn.Nodes["n1"]
		if ledgerOf(node) == nil {
			t.Fatal("no ledger")
		}
		preemptor := ssn.Jobs[api.JobID(testNS+"/high")].Tasks["uid-new"]
		var running []*api.TaskInfo
		for _, pd := range pods {
			running = append(running, node.Tasks[api.TaskID(pd.UID)])
		}
		got, abstain := p.selectVictims(preemptor, node, ssn.Preemptable(preemptor, running), ssn.PreemptTogether)
		if abstain {
			t.Fatalf("round %d: no say on a vGPU preemptor", round)
		}

		// The brute force: every subset, checked against the rules of a hami-core GPU and each
		// job's minimum.
		fitsWithout := func(gone map[int]bool) bool {
			type use struct{ devices, memory, cores int }
			used := make([]use, nGPUs)
			for i, pd := range pods {
				if gone[i] {
					continue
				}
				devs, _ := assignedDevices(node.Tasks[api.TaskID(pd.UID)])
				for _, c := range devs {
					for _, d := range c {
						g := ledgerOf(node).index(d.UUID)
						used[g].devices++
						used[g].memory += int(d.UsedMemory)
						used[g].cores += int(d.UsedCores)
					}
				}
			}
			free := 0
			for _, u := range used {
				ok := u.devices < split && gpuMemory-u.memory >= want.memory && u.cores+want.cores <= 100 &&
					!(want.cores == 100 && u.devices > 0) && !(want.cores == 0 && u.cores >= 100)
				if ok {
					free++
				}
			}
			return free >= want.count
		}
		keepsMinimums := func(gone map[int]bool) bool {
			taken := make([]int32, len(jobs))
			for i := range gone {
				taken[jobOf[i]]++
			}
			for j, n := range taken {
				if n > 0 && jobs[j].running-n < jobs[j].minMember {
					return false
				}
			}
			return true
		}
		type key struct {
			set    []int
			ranks  []int64
			memory int
		}
		var best *key
		for mask := 0; mask < 1<<len(pods); mask++ {
			gone, k := map[int]bool{}, key{}
			for i := range pods {
				if mask&(1<<i) != 0 {
					gone[i] = true
					k.set = append(k.set, i)
					k.ranks = append(k.ranks, rankOf[i])
					k.memory += int(node.Tasks[api.TaskID(pods[i].UID)].Resreq.ScalarResources[resMem]) / 1000 * countOf(pods[i])
				}
			}
			if !fitsWithout(gone) || !keepsMinimums(gone) {
				continue
			}
			slices.Sort(k.ranks)
			slices.Reverse(k.ranks)
			if best == nil || lessKey(k.set, k.ranks, k.memory, best.set, best.ranks, best.memory) {
				best = &k
			}
		}
		var gotSet []int
		for _, v := range got {
			gotSet = append(gotSet, slices.IndexFunc(pods, func(pd *corev1.Pod) bool { return pd.UID == v.Pod.UID }))
		}
		switch {
		case best == nil && len(got) != 0:
			t.Errorf("round %d: picked %v where no set fits", round, gotSet)
		case best != nil && !reflect.DeepEqual(gotSet, best.set) && !(len(gotSet) == 0 && len(best.set) == 0):
			t.Errorf("round %d: picked %v, the minimum is %v (request %+v, jobs %v, ranks %v)", round, gotSet, best.set, want, jobOf, rankOf)
		}
	}
}

// withAllocate adds the allocate action to reg.
func withAllocate(reg *framework.Registry) *framework.Registry {
	reg.RegisterAction(allocate.New())
	return reg
}

// countOf is how many vGPUs the pod's first container asks.
func countOf(p *corev1.Pod) int {
	q := p.Spec.Containers[0].Resources.Limits[resCount]
	return int(q.Value())
}

// lessKey orders fitting victim sets: fewer, then lower ranks (highest first), then less
// memory, then the highest index lower (and so on down).
func lessKey(a []int, ap []int64, am int, b []int, bp []int64, bm int) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	for i := range ap {
		if ap[i] != bp[i] {
			return ap[i] < bp[i]
		}
	}
	if am != bm {
		return am < bm
	}
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return am < bm
}

// TestPreemptWithinQueueShare: a queue holding exactly its vGPU capability and deserved share
// (capacity's) preempts within itself, and the next cycles pipeline and then bind the gang
// on the freed GPU: the victims' share is the preemptor's, not refused as over the queue's.
func TestPreemptWithinQueueShare(t *testing.T) {
	cluster := func(victims string) *api.ClusterInfo {
		low := holding("low", 4, 6000, func(int) int { return 0 })
		switch victims {
		case "releasing":
			for _, v := range low[2:] {
				v.DeletionTimestamp = &metav1.Time{Time: fixedClock}
			}
		case "gone":
			low = low[:2]
		}
		ci := gpuCluster(gpuNode("n1", 0, gpus(1, 10, 24576, h200)),
			gpuJob{"low", 1, 1, low}, gpuJob{"high", 10, 2, pendingPods("high", 2, 1, 6000)})
		deserved := st.Resources("1", "")
		deserved[resCount] = resource.MustParse("4")
		deserved[resMem] = resource.MustParse("24000")
		ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
		ci.Queues["default"].Queue.Spec.Deserved = deserved
		ci.Queues["default"].Queue.Spec.Capability = deserved
		return ci
	}
	tiers := func(actions string) *conf.SchedulerConfiguration {
		cfg := preemptTiers(actions)
		cfg.Tiers[0].Plugins = append(cfg.Tiers[0].Plugins, conf.PluginOption{Name: capacity.PluginName})
		return cfg
	}
	withCapacity := func(reg *framework.Registry) *framework.Registry {
		reg.RegisterPlugin(capacity.PluginName, capacity.New)
		return reg
	}
	run := func(actions string, cache framework.Cache, reg *framework.Registry) *framework.Session {
		return frameworktest.RunActions(t, cache, tiers(actions), withCapacity(reg))
	}

	var p *plugin
	reg := testRegistry(&p)
	reg.RegisterAction(preempt.New())
	evicted, ssn := runEvicting(t, cluster("running"), tiers(preempt.Name), withCapacity(reg))
	if len(evicted) != 2 || len(promisedGPUs(ssn, p, "high")) != 2 {
		t.Fatalf("preempt evicted %v and pipelined %v, want two and the gang", evicted, promisedGPUs(ssn, p, "high"))
	}

	cache := &frameworktest.Cache{Snap: cluster("releasing")}
	ssn = run(allocate.Name, cache, withAllocate(testRegistry(&p)))
	if len(cache.Bound) != 0 || len(promisedGPUs(ssn, p, "high")) != 2 {
		t.Fatalf("with the victims terminating: bound %d, pipelined %v; want the gang pipelined", len(cache.Bound), promisedGPUs(ssn, p, "high"))
	}
	if r := ssn.Jobs[api.JobID(testNS+"/high")].QueueRefusals; len(r) != 0 {
		t.Errorf("queue refused the gang: %v", r)
	}

	cache = &frameworktest.Cache{Snap: cluster("gone")}
	run(allocate.Name, cache, withAllocate(testRegistry(&p)))
	if got := boundPerGPU(t, cache); got[uuid(0)] != 2 {
		t.Errorf("with the victims gone: bound %v, want the gang on GPU 0", got)
	}
}

// inQueue moves the job to queue q (weight 1, open), made as needed.
func inQueue(ci *api.ClusterInfo, job, q string) {
	if ci.Queues[api.QueueID(q)] == nil {
		spec := st.MakeQueue().Name(q).Weight(1).Obj()
		spec.Status.State = schedulingv1beta1.QueueStateOpen
		ci.Queues[api.QueueID(q)] = api.NewQueueInfo(spec)
	}
	j := ci.Jobs[api.JobID(testNS+"/"+job)]
	pg := j.PodGroup.DeepCopy()
	pg.Spec.Queue = q
	j.SetPodGroup(pg, q)
}

// TestReclaimVGPU: a starving queue takes back its half of a GPU from a queue above its
// share, by the vGPUs it needs: two of the other queue's four pods, on that GPU.
func TestReclaimVGPU(t *testing.T) {
	ci := gpuCluster(gpuNode("n1", 0, gpus(1, 10, 24576, h200)),
		gpuJob{"low", 1, 1, holding("low", 4, 6000, func(int) int { return 0 })},
		gpuJob{"high", 1, 2, pendingPods("high", 2, 1, 6000)})
	inQueue(ci, "low", "a")
	inQueue(ci, "high", "b")
	delete(ci.Queues, "default")
	var p *plugin
	reg := testRegistry(&p)
	reg.RegisterAction(reclaim.New())
	reg.RegisterPlugin(proportion.PluginName, proportion.New)
	cfg := preemptTiers(reclaim.Name)
	cfg.Tiers[1].Plugins = append(cfg.Tiers[1].Plugins, conf.PluginOption{Name: proportion.PluginName})
	evicted, ssn := runEvicting(t, ci, cfg, reg)
	if len(evicted) != 2 || len(promisedGPUs(ssn, p, "high")) != 2 {
		t.Errorf("reclaim evicted %v and pipelined %v, want two of queue a's pods and the gang", evicted, promisedGPUs(ssn, p, "high"))
	}
}
