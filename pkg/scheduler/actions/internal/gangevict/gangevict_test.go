package gangevict_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangpreempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangreclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/charttest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// gpuMiB is each GPU's memory: a pod of gpuMiB takes a whole GPU, one of half takes half.
const gpuMiB, half = 24576, 12288

// pod is a pod of a job asking 1 cpu, 1Gi and one vGPU of memory MiB: running on GPU gpu of
// n0, or pending when gpu is -1; keep marks it volcano.sh/preemptable: "false"; role, when
// set, is the VolcanoJob task it is a pod of (its volcano.sh/task-spec annotation).
type pod struct {
	memory int32
	gpu    int
	keep   bool
	role   string
}

// job is a PodGroup of the given queue, priority, minMember and minTaskMember, its pods
// named <name>-<i>, or <name>-<role>-<i> as a VolcanoJob names its tasks' pods.
type job struct {
	name, queue   string
	prio, min     int32
	pods          []pod
	minTaskMember map[string]int32
}

// singles is n single-pod jobs <prefix><i> of queue, priority prio, each pod of memory MiB on
// GPU gpu(i).
func singles(prefix, queue string, prio int32, n int, memory int32, gpu func(int) int) []job {
	out := make([]job, n)
	for i := range out {
		out[i] = job{fmt.Sprintf("%s%d", prefix, i), queue, prio, 1, []pod{{memory, gpu(i), false, ""}}, nil}
	}
	return out
}

// pending is n pending pods of memory MiB.
func pending(n int, memory int32) []pod {
	out := make([]pod, n)
	for i := range out {
		out[i] = pod{memory, -1, false, ""}
	}
	return out
}

// cluster is node n0 with gpus GPUs of gpuMiB (split 10), 64 cpus and 256Gi, queues of the
// given weights, and the jobs, each PodGroup with the minResources Volcano's job controller
// gives it; the GPU ledger is derived from the running pods' assignments as the cache does.
func cluster(t *testing.T, gpus int, weights map[string]int32, jobs ...job) *api.ClusterInfo {
	t.Helper()
	uuid := func(i int) string { return fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i) }
	devices := make([]vgpu.NodeDevice, gpus)
	for i := range devices {
		devices[i] = vgpu.NodeDevice{UUID: uuid(i), Count: 10, Memory: gpuMiB, Type: "NVIDIA-NVIDIA H200", Healthy: true, Mode: vgpu.ModeHAMiCore}
	}
	register, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	allocatable := st.Resources("64", "256Gi", "pods", "110", string(vgpu.DefaultCountResource), fmt.Sprint(10*gpus),
		string(vgpu.DefaultMemoryResource), fmt.Sprint(gpuMiB*gpus), string(vgpu.DefaultCoresResource), fmt.Sprint(100*gpus))
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Annotation(vgpu.NodeDevicesAnnotation, register).
		Allocatable(allocatable).Capacity(allocatable).Obj())
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{n.Name: n},
		NodeList: []*api.NodeInfo{n}, Queues: map[api.QueueID]*api.QueueInfo{}}
	for name, w := range weights {
		q := st.MakeQueue().Name(name).Weight(w).Obj()
		q.Status.State = schedulingv1beta1.QueueStateOpen
		ci.Queues[api.QueueID(name)] = api.NewQueueInfo(q)
	}
	for _, j := range jobs {
		phase := schedulingv1beta1.PodGroupInqueue
		var objs []*corev1.Pod
		index := map[string]int{}
		for _, p := range j.pods {
			name := fmt.Sprintf("%s-%d", j.name, index[p.role])
			if p.role != "" {
				name = fmt.Sprintf("%s-%s-%d", j.name, p.role, index[p.role])
			}
			index[p.role]++
			asks := st.Resources("1", "1Gi", string(vgpu.DefaultCountResource), "1", string(vgpu.DefaultMemoryResource), fmt.Sprint(p.memory))
			w := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).
				Group(j.name).SchedulerName("volcano").Containers(corev1.Container{Name: "main",
				Resources: corev1.ResourceRequirements{Limits: asks, Requests: asks.DeepCopy()}})
			if p.keep {
				w.Annotation(schedulingv1beta1.PodPreemptable, "false")
			}
			if p.role != "" {
				w.Annotation(batchv1alpha1.TaskSpecKey, p.role)
			}
			if p.gpu >= 0 {
				assignment, err := vgpu.PodDevices{{{UUID: uuid(p.gpu), Type: vgpu.DeviceTypeNVIDIA, UsedMemory: p.memory}}}.Encode()
				if err != nil {
					t.Fatal(err)
				}
				w.Node("n0").Phase(corev1.PodRunning).Annotation(vgpu.AssignedNodeAnnotation, "n0").
					Annotation(vgpu.AssignedDevicesAnnotation, assignment).Annotation(vgpu.DevicesToAllocateAnnotation, "").
					Annotation(vgpu.BindPhaseAnnotation, vgpu.BindPhaseSuccess)
				phase = schedulingv1beta1.PodGroupRunning
			}
			objs = append(objs, w.Obj())
		}
		pg := st.MakePodGroup().Namespace("ns").Name(j.name).MinMember(j.min).MinTaskMember(j.minTaskMember).Queue(j.queue).
			MinResources(minresources.Of(objs, int(j.min))).Phase(phase).Obj()
		info := api.NewJobInfo(api.NewJobID("ns", j.name))
		info.Priority = j.prio
		for _, o := range objs {
			task := api.NewTaskInfo(o)
			info.AddTask(task)
			if o.Spec.NodeName != "" {
				n.AddTask(task)
			}
		}
		info.SetPodGroup(pg, j.queue)
		ci.Jobs[info.UID] = info
	}
	if d := deviceshare.NewDeriver().Derive(n); d != nil {
		n.Devices = map[string]api.Devices{deviceshare.PluginName: d}
	}
	return ci
}

// registry has every plugin the chart's configuration names and the actions these tests run:
// the gang actions and the classic eviction ones.
func registry() *framework.Registry {
	return charttest.Registry(deviceshare.NewStaticShared(), enqueue.New(), allocate.New(), backfill.New(),
		gangpreempt.New(), gangreclaim.New(), preempt.New(), reclaim.New())
}

// chartConf is the chart's configuration with actions in place of its own, and
// configurations appended.
func chartConf(t *testing.T, reg *framework.Registry, actions, configurations string) *conf.SchedulerConfiguration {
	t.Helper()
	return charttest.Conf(t, reg, actions, configurations)
}

// runOnce runs the configuration over ci and returns the evicted pods ("pod: reason",
// sorted) and the session.
func runOnce(t *testing.T, ci *api.ClusterInfo, cfg *conf.SchedulerConfiguration, reg *framework.Registry) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, reason string) error {
		evicted = append(evicted, task.Name+": "+reason)
		return nil
	}}
	ssn := frameworktest.RunActions(t, cache, cfg, reg)
	slices.Sort(evicted)
	return evicted, ssn
}

// gpusOf are the GPUs (by index) the named pods ran on in ci.
func gpusOf(t *testing.T, ci *api.ClusterInfo, evicted []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range evicted {
		name, _, _ := strings.Cut(e, ":")
		for _, j := range ci.Jobs {
			for _, task := range j.Tasks {
				if task.Name == name {
					out[task.Pod.Annotations[vgpu.AssignedDevicesAnnotation]]++
				}
			}
		}
	}
	return out
}

// pipelined are the job's pipelined pods, by name, sorted.
func pipelined(ssn *framework.Session, name string) []string {
	var out []string
	for _, task := range ssn.Jobs[api.NewJobID("ns", name)].TaskStatusIndex[api.Pipelined] {
		out = append(out, task.Name)
	}
	slices.Sort(out)
	return out
}

// Issue 47's reclaim case, under the chart's configuration with gangreclaim: queue a fills
// the 4 GPUs with 8 single-pod jobs of half a GPU each (GPU i holds a<i> and a<i+4>, so that
// the least bundles that serve are not the GPUs' pairs); queue b's 2-pod gang of whole GPUs
// takes back its deserved half: exactly 4 pods evicted, 2 on each of 2 GPUs, and both of its
// pods pipelined. Classic reclaim under that configuration takes nothing: gang keeps every
// single-pod job at its minimum.
func TestGangReclaimTakesSinglePodJobs(t *testing.T) {
	jobs := append(singles("a", "a", 1, 8, half, func(i int) int { return i % 4 }), job{"b", "b", 1, 2, pending(2, gpuMiB), nil})
	ci := cluster(t, 4, map[string]int32{"a": 1, "b": 1}, jobs...)
	reg := registry()
	evicted, ssn := runOnce(t, frameworktest.CloneCluster(ci), chartConf(t, reg, "enqueue, allocate, gangreclaim, backfill", ""), reg)
	if len(evicted) != 4 {
		t.Fatalf("evicted %q, want 4 of a's pods", evicted)
	}
	for _, e := range evicted {
		if !strings.HasPrefix(e, "a") || !strings.HasSuffix(e, ": "+gangreclaim.Name) {
			t.Errorf("evicted %q: want a's pods, for %s", e, gangreclaim.Name)
		}
	}
	for gpu, n := range gpusOf(t, ci, evicted) {
		if n != 2 {
			t.Errorf("evicted %d pods on GPU %s, want both of 2 GPUs' pods (%q)", n, gpu, evicted)
		}
	}
	if got := pipelined(ssn, "b"); !slices.Equal(got, []string{"b-0", "b-1"}) {
		t.Errorf("b's pipelined pods are %q, want both", got)
	}
}

// A gang g of 3 pods at minMember 2 (g-0, g-1 on GPU 0, g-2 on GPU 1) beside single-pod
// jobs s0 (on GPU 1), s1 (GPU 2) and s2 (GPU 3), all of priority 1, the other halves of GPUs
// 2 and 3 held by jobs of priority 20, and a preemptor of priority 10, under the chart's
// configuration with gangpreempt: the gang's surplus member goes first; a single-pod job, a
// whole bundle of one, goes with it where the surplus alone makes no room; the gang goes
// whole (all three pods) only where nothing else makes room, as where the single-pod jobs'
// priority is not below the preemptor's (above it or equal). With allowWholeBundle false, no
// whole job goes: only the surplus.
func TestGangPreemptTakesSurplusFirst(t *testing.T) {
	gangAndSingles := func(singlesPrio int32) []job {
		jobs := append(singles("s", "q", singlesPrio, 3, half, func(i int) int { return i + 1 }),
			singles("x", "q", 20, 2, half, func(i int) int { return i + 2 })...)
		return append(jobs, job{"g", "q", 1, 2, []pod{{half, 0, false, ""}, {half, 0, false, ""}, {half, 1, false, ""}}, nil})
	}
	const noWhole = "configurations:\n- name: gangpreempt\n  arguments:\n    allowWholeBundle: false\n"
	cases := []struct {
		name           string
		jobs           []job
		configurations string
		want           []string
	}{
		{"half a GPU: the surplus member", append(gangAndSingles(1), job{"p", "q", 10, 1, pending(1, half), nil}), "",
			[]string{"g-2"}},
		{"a whole GPU: the surplus member and a single-pod job", append(gangAndSingles(1), job{"p", "q", 10, 1, pending(1, gpuMiB), nil}), "",
			[]string{"g-2", "s0-0"}},
		{"a whole GPU, the single-pod jobs ranking higher: the whole gang", append(gangAndSingles(10), job{"p", "q", 5, 1, pending(1, gpuMiB), nil}), "",
			[]string{"g-0", "g-1", "g-2"}},
		{"a whole GPU, the single-pod jobs of the preemptor's priority: the whole gang", append(gangAndSingles(5), job{"p", "q", 5, 1, pending(1, gpuMiB), nil}), "",
			[]string{"g-0", "g-1", "g-2"}},
		{"allowWholeBundle false, half a GPU: the surplus member", append(gangAndSingles(1), job{"p", "q", 10, 1, pending(1, half), nil}), noWhole,
			[]string{"g-2"}},
		{"allowWholeBundle false, a whole GPU: nothing", append(gangAndSingles(1), job{"p", "q", 10, 1, pending(1, gpuMiB), nil}), noWhole,
			nil},
		{"allowWholeBundle false, the single-pod jobs ranking higher: nothing", append(gangAndSingles(10), job{"p", "q", 5, 1, pending(1, gpuMiB), nil}), noWhole,
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := registry()
			ci := cluster(t, 4, map[string]int32{"q": 1}, tc.jobs...)
			got, ssn := runOnce(t, ci, chartConf(t, reg, "enqueue, allocate, gangpreempt, backfill", tc.configurations), reg)
			var want []string
			for _, w := range tc.want {
				want = append(want, w+": "+gangpreempt.Name)
			}
			if !slices.Equal(got, want) {
				t.Errorf("evicted %q, want %q", got, want)
			}
			if wantPlaced := len(tc.want) > 0; wantPlaced != (len(pipelined(ssn, "p")) == 1) {
				t.Errorf("p pipelined: %v, want %v", pipelined(ssn, "p"), wantPlaced)
			}
		})
	}
}

// A preemptor gang that cannot be placed whole evicts nothing: queue b (weight 3, owed 3 of
// the 4 GPUs) reclaims from queue a, whose 4 single-pod jobs hold a GPU each, those on GPUs 2
// and 3 marked volcano.sh/preemptable: "false". A 2-pod gang of whole GPUs takes GPUs 0 and
// 1; a 3-pod gang, for which only two GPUs can be freed, takes nothing.
func TestGangReclaimEvictsNothingUnlessTheWholeGangFits(t *testing.T) {
	for _, tc := range []struct {
		pods int
		want []string
	}{
		{2, []string{"a0-0: gangreclaim", "a1-0: gangreclaim"}},
		{3, nil},
	} {
		t.Run(fmt.Sprintf("%d pods", tc.pods), func(t *testing.T) {
			a := singles("a", "a", 1, 4, gpuMiB, func(i int) int { return i })
			a[2].pods[0].keep, a[3].pods[0].keep = true, true
			ci := cluster(t, 4, map[string]int32{"a": 1, "b": 3}, append(a, job{"b", "b", 1, int32(tc.pods), pending(tc.pods, gpuMiB), nil})...)
			reg := registry()
			got, ssn := runOnce(t, ci, chartConf(t, reg, "enqueue, allocate, gangreclaim, backfill", ""), reg)
			if !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
			if placed := pipelined(ssn, "b"); len(placed) != len(tc.want) {
				t.Errorf("b's pipelined pods are %q, want %d", placed, len(tc.want))
			}
		})
	}
}

// gangpreempt stays inside the preemptor's queue: queue a's single-pod job a0 (priority 1,
// alone on GPU 0) would free a GPU with one eviction, but the preemptor is in queue b; there
// it takes b's low-priority gang bl (3 pods at minMember 2: bl-0, bl-1 on GPU 1, bl-2 on GPU
// 2 beside bx, of priority 10), whole, since only bl-0 and bl-1 together free a GPU and the
// gang cannot run without them.
func TestGangPreemptStaysInsideTheQueue(t *testing.T) {
	ci := cluster(t, 3, map[string]int32{"a": 1, "b": 3},
		job{"a0", "a", 1, 1, []pod{{gpuMiB, 0, false, ""}}, nil},
		job{"bl", "b", 1, 2, []pod{{half, 1, false, ""}, {half, 1, false, ""}, {half, 2, false, ""}}, nil},
		job{"bx", "b", 10, 1, []pod{{half, 2, false, ""}}, nil},
		job{"bh", "b", 10, 1, pending(1, gpuMiB), nil})
	reg := registry()
	got, ssn := runOnce(t, ci, chartConf(t, reg, "enqueue, allocate, gangpreempt, backfill", ""), reg)
	if want := []string{"bl-0: gangpreempt", "bl-1: gangpreempt", "bl-2: gangpreempt"}; !slices.Equal(got, want) {
		t.Errorf("evicted %q, want %q", got, want)
	}
	if placed := pipelined(ssn, "bh"); !slices.Equal(placed, []string{"bh-0"}) {
		t.Errorf("bh's pipelined pods are %q, want bh-0", placed)
	}
}

// gangreclaim takes from other queues only: queue b (weight 3, owed 3 of the 4 GPUs) holds
// GPUs 2 and 3 with single-pod jobs of priority 1, queue a GPUs 0 and 1 (owed 1). b's 2-pod
// gang of whole GPUs, priority 10, could run on b's own GPUs, but gangreclaim takes only
// from a, and a can give only 1 GPU: nothing is evicted. Named beside it, gangpreempt takes
// b's own two (priority 1, below the gang's).
func TestGangReclaimTakesFromOtherQueuesOnly(t *testing.T) {
	for _, tc := range []struct {
		actions string
		want    []string
	}{
		{"enqueue, allocate, gangreclaim, backfill", nil},
		{"enqueue, allocate, gangpreempt, gangreclaim, backfill", []string{"b0-0: gangpreempt", "b1-0: gangpreempt"}},
	} {
		t.Run(tc.actions, func(t *testing.T) {
			jobs := append(singles("a", "a", 1, 2, gpuMiB, func(i int) int { return i }),
				singles("b", "b", 1, 2, gpuMiB, func(i int) int { return i + 2 })...)
			ci := cluster(t, 4, map[string]int32{"a": 1, "b": 3}, append(jobs, job{"g", "b", 10, 2, pending(2, gpuMiB), nil})...)
			reg := registry()
			got, ssn := runOnce(t, ci, chartConf(t, reg, tc.actions, ""), reg)
			if !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
			if placed := pipelined(ssn, "g"); len(placed) != len(tc.want) {
				t.Errorf("g's pipelined pods are %q, want %d", placed, len(tc.want))
			}
		})
	}
}

// train is the PodGroup Volcano's job controller writes for a VolcanoJob of minAvailable min
// with tasks ps (one pod) and worker, minTaskMember those tasks' minAvailable: ps-0 holds
// the whole of GPU 0, the workers half a GPU each on the GPUs given, in queue, priority 1.
func train(queue string, min int32, minTaskMember map[string]int32, workerGPUs ...int) job {
	pods := []pod{{gpuMiB, 0, false, "ps"}}
	for _, gpu := range workerGPUs {
		pods = append(pods, pod{half, gpu, false, "worker"})
	}
	return job{"train", queue, 1, min, pods, minTaskMember}
}

// A job's surplus keeps each role at its minTaskMember, as upstream's bundles do: train
// (minMember 3; ps 1 of minimum 1, workers 4 of minimum 2: workers 0 and 1 on GPU 1, 2 and 3
// on GPUs 2 and 3 beside single-pod jobs of priority 20) and a single-pod preemptor of
// priority 10 asking a whole GPU. Its surplus is two workers, never its only ps, though the
// ps alone frees a GPU with one eviction: workers 0 and 1 go. Where the ps's role has no
// minTaskMember, or the roles do not bind (minMember 2, below their total 3), only minMember
// bounds the surplus and the ps goes. With one worker on each of GPUs 1 to 3, only the ps's
// GPU can be freed: the whole job goes (without allowWholeBundle, nothing). gangreclaim
// counts the same: queue b reclaiming a GPU from queue a's train takes workers 0 and 1.
// Classic reclaim keeps train at minMember only, as upstream v1.15.1's gang plugin does
// (gang's TestEvictionKeepsMinMemberNotRoles): it takes the ps, deviceshare's fewest victims
// that free a GPU.
func TestGangEvictionKeepsEachRoleAtItsMinimum(t *testing.T) {
	roles := map[string]int32{"ps": 1, "worker": 2}
	paired := func(queue string, min int32, minTaskMember map[string]int32) []job {
		return append(singles("x", queue, 20, 2, half, func(i int) int { return i + 2 }), train(queue, min, minTaskMember, 1, 1, 2, 3))
	}
	spread := append(singles("x", "q", 20, 3, half, func(i int) int { return i + 1 }), train("q", 3, roles, 1, 2, 3))
	preemptor := func(queue string) job { return job{"p", queue, 10, 1, pending(1, gpuMiB), nil} }
	const preempt, reclaim = "enqueue, allocate, gangpreempt, backfill", "enqueue, allocate, gangreclaim, backfill"
	const classicReclaim = "enqueue, allocate, reclaim, backfill"
	const noWhole = "configurations:\n- name: gangpreempt\n  arguments:\n    allowWholeBundle: false\n"
	cases := []struct {
		name, actions, configurations string
		jobs                          []job
		want                          []string
	}{
		{"ps and workers at their minimum: two workers", preempt, "",
			append(paired("q", 3, roles), preemptor("q")), []string{"train-worker-0", "train-worker-1"}},
		{"ps without a minTaskMember: the ps", preempt, "",
			append(paired("q", 3, map[string]int32{"worker": 2}), preemptor("q")), []string{"train-ps-0"}},
		{"minMember below the roles' total: the ps", preempt, "",
			append(paired("q", 2, roles), preemptor("q")), []string{"train-ps-0"}},
		{"only the ps's GPU can be freed: the whole job", preempt, "",
			append(spread, preemptor("q")), []string{"train-ps-0", "train-worker-0", "train-worker-1", "train-worker-2"}},
		{"only the ps's GPU can be freed, allowWholeBundle false: nothing", preempt, noWhole,
			append(spread, preemptor("q")), nil},
		{"gangreclaim, ps and workers at their minimum: two workers", reclaim, "",
			append(paired("a", 3, roles), preemptor("b")), []string{"train-worker-0", "train-worker-1"}},
		{"classic reclaim, ps and workers at their minimum: the ps", classicReclaim, "",
			append(paired("a", 3, roles), preemptor("b")), []string{"train-ps-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := registry()
			ci := cluster(t, 4, map[string]int32{"q": 1, "a": 1, "b": 1}, tc.jobs...)
			got, ssn := runOnce(t, ci, chartConf(t, reg, tc.actions, tc.configurations), reg)
			reason := strings.TrimSuffix(strings.Fields(tc.actions)[2], ",")
			var want []string
			for _, w := range tc.want {
				want = append(want, w+": "+reason)
			}
			if !slices.Equal(got, want) {
				t.Errorf("evicted %q, want %q", got, want)
			}
			if wantPlaced := len(tc.want) > 0; wantPlaced != (len(pipelined(ssn, "p")) == 1) {
				t.Errorf("p pipelined: %v, want %v", pipelined(ssn, "p"), wantPlaced)
			}
		})
	}
}

// markPodGroup gives job name's PodGroup in ci the annotations and labels, as its author
// writes them on the PodGroup (its pods keep none).
func markPodGroup(t *testing.T, ci *api.ClusterInfo, name string, annotations, labels map[string]string) {
	t.Helper()
	job := ci.Jobs[api.NewJobID("ns", name)]
	if job == nil {
		t.Fatalf("no job %s", name)
	}
	pg := job.PodGroup.DeepCopy()
	pg.Annotations, pg.Labels = annotations, labels
	job.SetPodGroup(pg, pg.Spec.Queue)
}

// A PodGroup annotated, or labelled, volcano.sh/preemptable: "false" keeps all its pods from
// gangreclaim and gangpreempt (its pods carry no mark of their own), as upstream's
// PodGroup-level check: the action takes another job's pods instead, or nothing. The
// annotation, where present, is read before the label; a value other than "false" is read
// as a pod's is and shields nothing.
//
// gangreclaim: queue b (weight 3, owed 3 of the 4 GPUs) reclaims 2 whole GPUs for a 2-pod
// gang from queue a, whose single-pod jobs a0..a3 hold a GPU each (unmarked, a2 and a3 go).
// gangpreempt: TestGangPreemptTakesSurplusFirst's cluster, gang g (3 pods at minMember 2)
// marked: the preemptor of half a GPU takes a single-pod job instead of g's surplus member;
// one of a whole GPU finds no GPU freed without g's pods and takes nothing. Classic preempt
// and reclaim read only the pods' marks, as upstream's: they still take a marked gang's
// surplus member (reclaim: queue a's gang g of 2 whole-GPU pods at minMember 1, beside two
// single-pod jobs that gang's rule keeps, gives queue b one GPU).
func TestGangEvictionSparesPodGroupsMarkedNotPreemptable(t *testing.T) {
	annotated := map[string]string{schedulingv1beta1.PodPreemptable: "false"}
	type mark struct {
		job                 string
		annotations, labels map[string]string
	}
	reclaimCluster := func(t *testing.T) *api.ClusterInfo {
		a := singles("a", "a", 1, 4, gpuMiB, func(i int) int { return i })
		return cluster(t, 4, map[string]int32{"a": 1, "b": 3}, append(a, job{"b", "b", 1, 2, pending(2, gpuMiB), nil})...)
	}
	preemptCluster := func(memory int32) func(t *testing.T) *api.ClusterInfo {
		return func(t *testing.T) *api.ClusterInfo {
			jobs := append(singles("s", "q", 1, 3, half, func(i int) int { return i + 1 }),
				singles("x", "q", 20, 2, half, func(i int) int { return i + 2 })...)
			jobs = append(jobs, job{"g", "q", 1, 2, []pod{{half, 0, false, ""}, {half, 0, false, ""}, {half, 1, false, ""}}, nil},
				job{"p", "q", 10, 1, pending(1, memory), nil})
			return cluster(t, 4, map[string]int32{"q": 1}, jobs...)
		}
	}
	gangReclaimCluster := func(t *testing.T) *api.ClusterInfo {
		jobs := append(singles("a", "a", 1, 2, gpuMiB, func(i int) int { return i }),
			job{"g", "a", 1, 1, []pod{{gpuMiB, 2, false, ""}, {gpuMiB, 3, false, ""}}, nil}, job{"b", "b", 1, 1, pending(1, gpuMiB), nil})
		return cluster(t, 4, map[string]int32{"a": 1, "b": 3}, jobs...)
	}
	const gangReclaim, gangPreempt = "enqueue, allocate, gangreclaim, backfill", "enqueue, allocate, gangpreempt, backfill"
	const classicReclaim, classicPreempt = "enqueue, allocate, reclaim, backfill", "enqueue, allocate, preempt, backfill"
	cases := []struct {
		name, actions, placed string
		cluster               func(*testing.T) *api.ClusterInfo
		marks                 []mark
		want                  []string
	}{
		{"gangreclaim, none marked: a2 and a3", gangReclaim, "b", reclaimCluster, nil,
			[]string{"a2-0", "a3-0"}},
		{"gangreclaim, a2 and a3 annotated: a0 and a1", gangReclaim, "b", reclaimCluster,
			[]mark{{"a2", annotated, nil}, {"a3", annotated, nil}}, []string{"a0-0", "a1-0"}},
		{"gangreclaim, a2 labelled, a3 annotated: a0 and a1", gangReclaim, "b", reclaimCluster,
			[]mark{{"a2", nil, annotated}, {"a3", annotated, nil}}, []string{"a0-0", "a1-0"}},
		{"gangreclaim, a3's annotation true over its label, a1 and a2 annotated: a0 and a3", gangReclaim, "b", reclaimCluster,
			[]mark{{"a3", map[string]string{schedulingv1beta1.PodPreemptable: "true"}, annotated}, {"a1", annotated, nil}, {"a2", annotated, nil}},
			[]string{"a0-0", "a3-0"}},
		{"gangreclaim, a2 and a3 marked other than false: a2 and a3", gangReclaim, "b", reclaimCluster,
			[]mark{{"a2", map[string]string{schedulingv1beta1.PodPreemptable: "no"}, nil}, {"a3", nil, map[string]string{schedulingv1beta1.PodPreemptable: "true"}}},
			[]string{"a2-0", "a3-0"}},
		{"gangreclaim, a1 to a3 annotated, one GPU left to free: nothing", gangReclaim, "b", reclaimCluster,
			[]mark{{"a1", annotated, nil}, {"a2", annotated, nil}, {"a3", annotated, nil}}, nil},
		{"gangpreempt, half a GPU, none marked: g's surplus member", gangPreempt, "p", preemptCluster(half), nil,
			[]string{"g-2"}},
		{"gangpreempt, half a GPU, g annotated: a single-pod job", gangPreempt, "p", preemptCluster(half),
			[]mark{{"g", annotated, nil}}, []string{"s2-0"}},
		{"gangpreempt, half a GPU, g labelled: a single-pod job", gangPreempt, "p", preemptCluster(half),
			[]mark{{"g", nil, annotated}}, []string{"s2-0"}},
		{"gangpreempt, a whole GPU, g annotated: nothing", gangPreempt, "p", preemptCluster(gpuMiB),
			[]mark{{"g", annotated, nil}}, nil},
		{"classic preempt, g annotated: g's surplus member all the same", classicPreempt, "p", preemptCluster(half),
			[]mark{{"g", annotated, nil}}, []string{"g-2"}},
		{"classic reclaim, g annotated: g's surplus member all the same", classicReclaim, "b", gangReclaimCluster,
			[]mark{{"g", annotated, nil}}, []string{"g-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ci := tc.cluster(t)
			for _, m := range tc.marks {
				markPodGroup(t, ci, m.job, m.annotations, m.labels)
			}
			reg := registry()
			got, ssn := runOnce(t, ci, chartConf(t, reg, tc.actions, ""), reg)
			reason := strings.TrimSuffix(strings.Fields(tc.actions)[2], ",")
			var want []string
			for _, w := range tc.want {
				want = append(want, w+": "+reason)
			}
			if !slices.Equal(got, want) {
				t.Errorf("evicted %q, want %q", got, want)
			}
			if placed := pipelined(ssn, tc.placed); (len(placed) > 0) != (len(tc.want) > 0) {
				t.Errorf("%s's pipelined pods are %q, want them placed: %v", tc.placed, placed, len(tc.want) > 0)
			}
		})
	}
}
