package preempt_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangpreempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/charttest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// cluster is one 4-CPU node and the default queue; jobs are added with addJob.
type cluster struct{ ci *api.ClusterInfo }

func newCluster(nodeCPU string) *cluster {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Allocatable(st.Resources(nodeCPU, "", "pods", "110")).Obj())
	ci.Nodes[n.Name], ci.NodeList = n, []*api.NodeInfo{n}
	return &cluster{ci: ci}
}

// job adds a job of the given priority and minMember with pods each asking cpu; running pods
// are on n0. pod lets a test change each pod.
func (c *cluster) job(ns, name string, prio, minMember int32, running, pending int, cpu string, pod func(*st.PodWrapper)) *api.JobInfo {
	pg := st.MakePodGroup().Namespace(ns).Name(name).MinMember(minMember).Phase(schedulingv1beta1.PodGroupInqueue).Obj()
	if running > 0 {
		pg.Status.Phase = schedulingv1beta1.PodGroupRunning
	}
	job := api.NewJobInfo(api.NewJobID(ns, name))
	job.SetPodGroup(pg, "default")
	job.Priority = prio
	for i := 0; i < running+pending; i++ {
		w := st.MakePod().Namespace(ns).Name(fmt.Sprintf("%s-%d", name, i)).Group(name).Container(st.Resources(cpu, ""))
		if i < running {
			w.Node("n0").Phase(corev1.PodRunning)
		}
		if pod != nil {
			pod(w)
		}
		task := api.NewTaskInfo(w.Obj())
		job.AddTask(task)
		if i < running {
			c.ci.Nodes["n0"].AddTask(task)
		}
	}
	c.ci.Jobs[job.UID] = job
	return job
}

// defaultTier is priority, gang and conformance in one tier, as upstream's first.
var defaultTier = []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}

// preemptOnce runs the action over the cluster with defaultTier, and returns what it evicted
// ("pod: reason") and the session.
func preemptOnce(t *testing.T, c *cluster) ([]string, *framework.Session) {
	t.Helper()
	return run(t, c, preempt.Name, defaultTier)
}

// run loads a configuration of the given actions and one tier of plugins against a registry
// that has preempt and gangpreempt, runs it over the cluster, and returns what it
// evicted ("pod: reason", sorted) and the session.
func run(t *testing.T, c *cluster, actions string, tier []conf.PluginOption) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: c.ci, OnEvict: func(task *api.TaskInfo, reason string) error {
		evicted = append(evicted, task.Name+": "+reason)
		return nil
	}}
	reg := framework.NewRegistry()
	reg.RegisterAction(preempt.New())
	reg.RegisterAction(gangpreempt.New())
	reg.RegisterPlugin(priority.PluginName, priority.New)
	reg.RegisterPlugin(gang.PluginName, gang.New)
	reg.RegisterPlugin(conformance.PluginName, conformance.New)
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: actions, Tiers: []conf.Tier{{Plugins: tier}}}, reg)
	slices.Sort(evicted)
	return evicted, ssn
}

// The Unschedulable conditions of a 1-pod and a 2-pod preemptor whose pods are all pending, up
// to the origin reason (gang's message, as the gang plugin's tests pin it).
const (
	pending1 = "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"
	pending2 = "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 Unschedulable"
)

// oneNode is the fit error of a task that the one node refuses for reason.
func oneNode(reason string) string { return "0/1 nodes are unavailable: 1 " + reason + "." }

// unschedulableMessage closes the session, as a cycle ends, and returns the message of the
// Unschedulable condition gang wrote for the job of that name ("" when there is none).
func unschedulableMessage(t *testing.T, ssn *framework.Session, name string) string {
	t.Helper()
	framework.CloseSession(ssn)
	for _, job := range ssn.Jobs {
		if job.Name != name {
			continue
		}
		for _, c := range job.Status.Conditions {
			if c.Type == schedulingv1beta1.PodGroupUnschedulableType {
				return c.Message
			}
		}
		return ""
	}
	t.Fatalf("no job %s in the session", name)
	return ""
}

func TestPreempt(t *testing.T) {
	nonPreemptable := func(w *st.PodWrapper) { w.Annotation(schedulingv1beta1.PodPreemptable, "false") }
	never := func(w *st.PodWrapper) {
		p := corev1.PreemptNever
		w.Spec.PreemptionPolicy = &p
	}
	cases := []struct {
		name  string
		build func(*cluster)
		want  []string
		// wantMessage is the preemptor's (the priority 10 job's) Unschedulable condition.
		wantMessage string
	}{
		{"a higher-priority gang evicts only what it needs", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, []string{"low-2: preempt", "low-3: preempt"},
			"2/2 tasks in gang unschedulable: pod group is not ready, 2 Pipelined, 2 minAvailable"},
		{"the lowest-priority job goes first", func(c *cluster) {
			c.job("ns", "mid", 5, 1, 2, 0, "1", nil)
			c.job("ns", "low", 1, 1, 2, 0, "1", nil)
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
		}, []string{"low-1: preempt"},
			"1/1 tasks in gang unschedulable: pod group is not ready, 1 Pipelined, 1 minAvailable"},
		{"equal priority evicts nothing", func(c *cluster) {
			c.job("ns", "low", 10, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, nil, pending2 + ". Origin reason is high-0: " + oneNode(evictsearch.ReasonNoVictimAllowed)},
		{"a gang at its minimum is never cut below it", func(c *cluster) {
			c.job("ns", "low", 1, 3, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, nil, pending2 + ". Origin reason is high-1: " + oneNode(evictsearch.ReasonNoVictimAllowed)},
		{"non-preemptable pods are never victims", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nonPreemptable)
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
		}, nil, pending1 + ". Origin reason is high-0: " + oneNode(evictsearch.ReasonNothingToEvict)},
		{"kube-system pods are never victims", func(c *cluster) {
			c.job("kube-system", "low", 1, 1, 4, 0, "1", nil)
			c.job("kube-system", "high", 10, 1, 0, 1, "1", nil)
		}, nil, pending1 + ". Origin reason is high-0: " + oneNode(evictsearch.ReasonNoVictimAllowed)},
		{"critical pods are never victims", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", func(w *st.PodWrapper) { w.PriorityClassName("system-node-critical") })
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
		}, nil, pending1 + ". Origin reason is high-0: " + oneNode(evictsearch.ReasonNoVictimAllowed)},
		{"a preemptor that cannot fit evicts nothing", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 1, 0, 1, "5", nil)
		}, nil, pending1 + ". Origin reason is high-0: " + oneNode("Insufficient cpu"+evictsearch.AfterEvictions)},
		{"a gang that cannot fit whole evicts nothing", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 3, 0, 3, "2", nil)
		}, nil, "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable" +
			". Origin reason is high-1: " + oneNode("Insufficient cpu"+evictsearch.AfterEvictions)},
		{"preemptionPolicy Never never preempts", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 1, 0, 1, "1", never)
		}, nil, pending1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("4")
			tc.build(c)
			got, ssn := preemptOnce(t, c)
			if !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
			if msg := unschedulableMessage(t, ssn, "high"); msg != tc.wantMessage {
				t.Errorf("the preemptor's condition says\n%q, want\n%q", msg, tc.wantMessage)
			}
			for _, job := range ssn.Jobs {
				if job.Priority == 10 && len(tc.want) > 0 && job.TaskCount(api.Pipelined) != job.MinAvailable {
					t.Errorf("preemptor %s has %d pipelined tasks, want %d", job.UID, job.TaskCount(api.Pipelined), job.MinAvailable)
				}
				if job.Name == "low" && job.TaskCount(api.Releasing) != int32(len(got)) {
					t.Errorf("victims' job has %d Releasing tasks, want %d", job.TaskCount(api.Releasing), len(got))
				}
			}
		})
	}
}

// The same shapes under gangpreempt: a victim job's surplus goes first, and a victim gang
// whose surplus cannot make room goes whole, where preempt (with gang's enablePreemptable on,
// as defaultTier leaves it) keeps it at its minimum.
func TestGangPreemptTakesBundles(t *testing.T) {
	cases := []struct {
		name  string
		build func(*cluster)
		want  []string
	}{
		{"a higher-priority gang evicts what it needs", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, []string{"low-2: gangpreempt", "low-3: gangpreempt"}},
		{"a gang that cannot fit whole evicts nothing", func(c *cluster) {
			c.job("ns", "low", 1, 1, 4, 0, "1", nil)
			c.job("ns", "high", 10, 3, 0, 3, "2", nil)
		}, nil},
		{"a victim gang whose surplus cannot make room goes whole", func(c *cluster) {
			c.job("ns", "low", 1, 3, 4, 0, "1", nil)
			c.job("ns", "high", 10, 2, 0, 2, "1", nil)
		}, []string{"low-0: gangpreempt", "low-1: gangpreempt", "low-2: gangpreempt", "low-3: gangpreempt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("4")
			tc.build(c)
			if got, _ := run(t, c, gangpreempt.Name, defaultTier); !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
		})
	}
}

// A preemptor with no pod it may evict on any node has nothing to add to allocate's reason,
// which stays the origin; where allocate ran into no node (the queue refused it, or no
// allocate ran), that is the reason given.
func TestPreemptWithNothingToEvictKeepsAllocateReason(t *testing.T) {
	nonPreemptable := func(w *st.PodWrapper) { w.Annotation(schedulingv1beta1.PodPreemptable, "false") }
	for _, tc := range []struct{ actions, want string }{
		{allocate.Name + ", " + preempt.Name, pending1 + ". Origin reason is high-0: " + oneNode("Insufficient cpu")},
		{preempt.Name, pending1 + ". Origin reason is high-0: " + oneNode(evictsearch.ReasonNothingToEvict)},
	} {
		t.Run(tc.actions, func(t *testing.T) {
			c := newCluster("4")
			c.job("ns", "low", 1, 1, 4, 0, "1", nonPreemptable)
			c.job("ns", "high", 10, 1, 0, 1, "1", nil)
			reg := vgpuRegistry()
			ssn := frameworktest.RunActions(t, &frameworktest.Cache{Snap: c.ci},
				&conf.SchedulerConfiguration{Actions: tc.actions, Tiers: []conf.Tier{{Plugins: defaultTier}}}, reg)
			if msg := unschedulableMessage(t, ssn, "high"); msg != tc.want {
				t.Errorf("the preemptor's condition says\n%q, want\n%q", msg, tc.want)
			}
		})
	}
}

// A node that takes four pods holds four low-priority ones, with CPU to spare: evicting them
// does not free their slots (a pod being deleted still counts), so the predicate's refusal
// stands after every eviction, nothing is evicted, and that refusal is the reason given.
func TestPreemptorThatAPredicateStillRefuses(t *testing.T) {
	c := newCluster("8")
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Allocatable(st.Resources("8", "", "pods", "4")).Obj())
	c.ci.Nodes["n0"], c.ci.NodeList = n, []*api.NodeInfo{n}
	c.job("ns", "low", 1, 1, 4, 0, "1", nil)
	c.job("ns", "high", 10, 1, 0, 1, "1", nil)
	var evicted []string
	cache := &frameworktest.Cache{Snap: c.ci, OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	tiers := []conf.Tier{{Plugins: defaultTier}, {Plugins: []conf.PluginOption{{Name: predicates.PluginName}}}}
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: preempt.Name, Tiers: tiers}, vgpuRegistry())
	if len(evicted) != 0 {
		t.Errorf("evicted %v, want none", evicted)
	}
	want := pending1 + ". Origin reason is high-0: " + oneNode(predicates.ReasonPodNumberExceeded+evictsearch.AfterEvictions)
	if msg := unschedulableMessage(t, ssn, "high"); msg != want {
		t.Errorf("the preemptor's condition says\n%q, want\n%q", msg, want)
	}
}

// Two 12 GiB GPUs each hold a 6000 MiB pod that may go and one that may not: the node's
// vGPU memory, counting both victims, would take a 12000 MiB pod, but no GPU would, so the
// GPU's reason (deviceshare's predicate) is the one given, and nothing is evicted.
func TestVGPUPreemptorThatNoGPUTakesSaysTheGPUReason(t *testing.T) {
	low := []vgpuPod{{6000, 0, false}, {6000, 0, true}, {6000, 1, false}, {6000, 1, true}}
	ci := vgpuCluster(t, 2, 12288, vgpuJob{"low", 1, 1, low}, vgpuJob{"high", 10, 1, pods(1, 12000, -1)})
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	tiers := []conf.Tier{{Plugins: defaultTier}, {Plugins: []conf.PluginOption{{Name: predicates.PluginName},
		{Name: deviceshare.PluginName, Arguments: conf.Arguments{deviceshare.VGPUEnableArg: true, deviceshare.SchedulePolicyArg: deviceshare.PolicyBinpack}}}}}
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: preempt.Name, Tiers: tiers}, vgpuRegistry())
	if len(evicted) != 0 {
		t.Errorf("evicted %v, want none", evicted)
	}
	want := pending1 + ". Origin reason is high-0: " +
		oneNode("hami-vgpuDeviceSharing error: not enough free GPU memory even with every allowed victim evicted")
	if msg := unschedulableMessage(t, ssn, "high"); msg != want {
		t.Errorf("the preemptor's condition says\n%q, want\n%q", msg, want)
	}
}

// The second pass: a job's pending task evicts a lower-priority running task of the same job,
// and only a lower-priority one. gang's JobStarving and Preemptable are off: with them a job
// is starving only below its minimum, where gang lets none of its tasks go, so the pass
// evicts nothing while gang decides in its tier (as upstream's).
func TestPreemptWithinJob(t *testing.T) {
	off := false
	tier := []conf.PluginOption{{Name: priority.PluginName},
		{Name: gang.PluginName, EnabledPreemptable: &off, EnabledJobStarving: &off}, {Name: conformance.PluginName}}
	cases := []struct {
		name            string
		pendingPriority int32
		want            []string
	}{
		{"a higher-priority task evicts one of its job's lower-priority tasks", 10, []string{"mixed-3: preempt"}},
		{"a task of the same priority evicts nothing", 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster("4")
			c.job("ns", "mixed", 1, 1, 4, 1, "1", func(w *st.PodWrapper) {
				prio := int32(1)
				if w.Spec.NodeName == "" {
					prio = tc.pendingPriority
				}
				w.Priority(prio)
			})
			got, ssn := run(t, c, preempt.Name, tier)
			if !slices.Equal(got, tc.want) {
				t.Errorf("evicted %q, want %q", got, tc.want)
			}
			if job, want := ssn.Jobs["ns/mixed"], int32(len(tc.want)); job.TaskCount(api.Pipelined) != want {
				t.Errorf("%d pipelined tasks, want %d", job.TaskCount(api.Pipelined), want)
			}
		})
	}
}

// vgpuPod is a pod of a vgpuJob asking one vGPU of memory MiB: running on GPU gpu of n0, or
// pending when gpu is -1; keep marks it volcano.sh/preemptable: "false".
type vgpuPod struct {
	memory int32
	gpu    int
	keep   bool
}

// vgpuJob is a PodGroup of a vgpuCluster, its pods named <name>-<i>.
type vgpuJob struct {
	name      string
	prio, min int32
	pods      []vgpuPod
}

// vgpuCluster is node n0 with gpus GPUs of gpuMiB each (split 10) and 64 CPUs, the jobs in
// queue default, and the GPU ledger derived from the running pods' assignments as the cache
// derives it.
func vgpuCluster(t *testing.T, gpus int, gpuMiB int32, jobs ...vgpuJob) *api.ClusterInfo {
	t.Helper()
	n := api.NewNodeInfo(withGPUs(t, st.MakeNode().Name("n0"), 0, gpus, gpuMiB, st.Resources("64", "", "pods", "110")).Obj())
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{n.Name: n},
		NodeList: []*api.NodeInfo{n}, Queues: map[api.QueueID]*api.QueueInfo{}}
	ci.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
	for _, j := range jobs {
		pg := st.MakePodGroup().Namespace("ns").Name(j.name).MinMember(j.min).Queue("default").Phase(schedulingv1beta1.PodGroupInqueue).Obj()
		job := api.NewJobInfo(api.NewJobID("ns", j.name))
		job.Priority = j.prio
		for i, p := range j.pods {
			asks := withVGPU(st.Resources("100m", ""), p.memory)
			w := st.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%d", j.name, i)).UID(fmt.Sprintf("uid-%s-%d", j.name, i)).
				Group(j.name).SchedulerName("volcano").Containers(corev1.Container{Name: "main",
				Resources: corev1.ResourceRequirements{Limits: asks, Requests: asks.DeepCopy()}})
			if p.keep {
				w.Annotation(schedulingv1beta1.PodPreemptable, "false")
			}
			if p.gpu >= 0 {
				holdGPU(t, w.Node("n0").Phase(corev1.PodRunning), 0, p)
				pg.Status.Phase = schedulingv1beta1.PodGroupRunning
			}
			task := api.NewTaskInfo(w.Obj())
			job.AddTask(task)
			if p.gpu >= 0 {
				n.AddTask(task)
			}
		}
		job.SetPodGroup(pg, "default")
		ci.Jobs[job.UID] = job
	}
	deriveLedgers(ci)
	return ci
}

// gpuUUID is the UUID of GPU gpu of the node'th node.
func gpuUUID(node, gpu int) string {
	return fmt.Sprintf("GPU-%04d%04d-0000-0000-0000-000000000000", node, gpu)
}

// withGPUs gives the node'th node gpus healthy GPUs of gpuMiB each, split 10 (gpuUUID(node, i)),
// as its device plugin registers them, and allocatable and capacity of base and those GPUs'
// vGPU resources.
func withGPUs(t *testing.T, w *st.NodeWrapper, node, gpus int, gpuMiB int32, base corev1.ResourceList) *st.NodeWrapper {
	t.Helper()
	devices := make([]vgpu.NodeDevice, gpus)
	for i := range devices {
		devices[i] = vgpu.NodeDevice{UUID: gpuUUID(node, i), Count: 10, Memory: gpuMiB, Type: "NVIDIA-NVIDIA H200", Healthy: true, Mode: vgpu.ModeHAMiCore}
	}
	register, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	allocatable := base.DeepCopy()
	for name, q := range st.Resources("", "", string(vgpu.DefaultCountResource), fmt.Sprint(10*gpus),
		string(vgpu.DefaultMemoryResource), fmt.Sprint(int(gpuMiB)*gpus), string(vgpu.DefaultCoresResource), fmt.Sprint(100*gpus)) {
		allocatable[name] = q
	}
	return w.Annotation(vgpu.NodeDevicesAnnotation, register).Allocatable(allocatable).Capacity(allocatable.DeepCopy())
}

// withVGPU is asks and one vGPU of memory MiB.
func withVGPU(asks corev1.ResourceList, memory int32) corev1.ResourceList {
	out := asks.DeepCopy()
	for name, q := range st.Resources("", "", string(vgpu.DefaultCountResource), "1", string(vgpu.DefaultMemoryResource), fmt.Sprint(memory)) {
		out[name] = q
	}
	return out
}

// holdGPU gives the pod, placed on the node'th node, the annotations with which HAMi's
// device plugin leaves a bound pod holding p.memory MiB of that node's GPU p.gpu: what the
// cache derives the GPU ledger from.
func holdGPU(t *testing.T, w *st.PodWrapper, node int, p vgpuPod) {
	t.Helper()
	assignment, err := vgpu.PodDevices{{{UUID: gpuUUID(node, p.gpu), Type: vgpu.DeviceTypeNVIDIA, UsedMemory: p.memory}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	w.Annotation(vgpu.AssignedNodeAnnotation, w.Spec.NodeName).Annotation(vgpu.AssignedDevicesAnnotation, assignment).
		Annotation(vgpu.DevicesToAllocateAnnotation, "").Annotation(vgpu.BindPhaseAnnotation, vgpu.BindPhaseSuccess)
}

// deriveLedgers gives each node of ci its GPU ledger, derived from its pods' assignments as
// the cache derives it.
func deriveLedgers(ci *api.ClusterInfo) {
	for _, n := range ci.Nodes {
		if d := deviceshare.NewDeriver().Derive(n); d != nil {
			n.Devices = map[string]api.Devices{deviceshare.PluginName: d}
		}
	}
}

// pods is n vgpuPods of memory MiB on GPU gpu (-1: pending).
func pods(n int, memory int32, gpu int) []vgpuPod {
	out := make([]vgpuPod, n)
	for i := range out {
		out[i] = vgpuPod{memory: memory, gpu: gpu}
	}
	return out
}

// vgpuRegistry has every action and plugin the tests' configurations name.
func vgpuRegistry() *framework.Registry {
	return charttest.Registry(deviceshare.NewStaticShared(), preempt.New(), allocate.New(), enqueue.New(), backfill.New())
}

// chartConfWithPreempt is the chart's configuration (config/volcano-scheduler.conf) with
// preempt after allocate, as test/e2e runs it.
func chartConfWithPreempt(t *testing.T, reg *framework.Registry) *conf.SchedulerConfiguration {
	t.Helper()
	return chartConf(t, reg, "enqueue, allocate, preempt, backfill")
}

// chartConf is the chart's configuration (config/volcano-scheduler.conf) with actions in
// place of its own.
func chartConf(t *testing.T, reg *framework.Registry, actions string) *conf.SchedulerConfiguration {
	t.Helper()
	return charttest.Conf(t, reg, actions, "")
}

// A high-priority gang of two 13000 MiB vGPUs on a 24 GiB GPU full of low-priority pods:
// no set of victims lets it fit whole, so nothing is evicted, and its PodGroup
// and pods say that preemption was tried and why it could not help, not only the queue's or
// allocate's reason. The pod that found a place (high-0, pipelined in the discarded attempt)
// is not the origin: high-1 is.
func TestVGPUPreemptorThatCannotFitSaysWhy(t *testing.T) {
	// Spelled out: it is what users and test/e2e read.
	const reason = "Insufficient volcano.sh/vgpu-memory even with every allowed victim evicted"
	const want = "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 Unschedulable. " +
		"Origin reason is high-1: 0/1 nodes are unavailable: 1 " + reason + "."
	withoutQueuePlugin := func(actions string) func(*testing.T, *framework.Registry) *conf.SchedulerConfiguration {
		return func(*testing.T, *framework.Registry) *conf.SchedulerConfiguration {
			return &conf.SchedulerConfiguration{Actions: actions, Tiers: []conf.Tier{{Plugins: defaultTier}, {Plugins: []conf.PluginOption{
				{Name: predicates.PluginName},
				{Name: deviceshare.PluginName, Arguments: conf.Arguments{deviceshare.VGPUEnableArg: true, deviceshare.SchedulePolicyArg: deviceshare.PolicyBinpack}},
			}}}}
		}
	}
	cases := []struct {
		name string
		cfg  func(*testing.T, *framework.Registry) *conf.SchedulerConfiguration
	}{
		{"preempt alone", withoutQueuePlugin(preempt.Name)},
		// allocate first finds no room for high-0 and records it ("Insufficient
		// volcano.sh/vgpu-memory"): preempt did find it a place, so that record is not the
		// origin any more.
		{"allocate, then preempt", withoutQueuePlugin(allocate.Name + ", " + preempt.Name)},
		// allocate first has the queue refuse both pods (proportion: no room within the
		// deserved share): preempt's explanation is what high-1's pod says instead.
		{"the chart's configuration with preempt", chartConfWithPreempt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := vgpuRegistry()
			var evicted []string
			// One 24 GiB GPU holds four 6000 MiB pods of "low"; "high" asks 2 x 13000 MiB.
			ci := vgpuCluster(t, 1, 24576, vgpuJob{"low", 1, 1, pods(4, 6000, 0)}, vgpuJob{"high", 10, 2, pods(2, 13000, -1)})
			cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, _ string) error {
				evicted = append(evicted, task.Name)
				return nil
			}}
			ssn := frameworktest.RunActions(t, cache, tc.cfg(t, reg), reg)
			if len(evicted) != 0 {
				t.Errorf("evicted %v, want none", evicted)
			}
			high := ssn.Jobs["ns/high"]
			if msg := unschedulableMessage(t, ssn, "high"); msg != want {
				t.Errorf("the PodGroup's condition says\n%q, want\n%q", msg, want)
			}
			wantPod := map[string]string{
				"high-0": "Pod ns/high-0 can possibly be assigned to n0, once resource is released and minAvailable is satisfied",
				"high-1": "0/1 nodes are unavailable: 1 " + reason + ".",
			}
			for _, task := range high.Tasks {
				if _, msg := high.PodScheduledMessage(task, high.FitError); msg != wantPod[task.Name] {
					t.Errorf("pod %s's PodScheduled message is %q, want %q", task.Name, msg, wantPod[task.Name])
				}
			}
		})
	}
}
