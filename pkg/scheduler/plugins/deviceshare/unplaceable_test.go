package deviceshare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// A node search that finds no node answers for the next task that asks the same resources
// and that every predicate answers alike (Session.SamePredicates), until a placement or its
// undo. On generated clusters (GPUs partly taken, some by pods being deleted, a tainted node,
// gangs, single-pod jobs, jobs with more pods than their minimum, roles, node selectors,
// tolerations, pods asking no GPU), allocate and backfill decide the same with the shortcut as
// without it: the same binds with the same devices, the same task statuses and nodes, the
// same pod and PodGroup conditions, messages included. Without it, a probe plugin's predicate
// has no SamePredicatesFn, so that no search answers for another.
func TestUnplaceableSearchesAnswerAlike(t *testing.T) {
	var calls [2]int // the probe's predicate calls, with the shortcut and without
	for seed := range uint64(100) {
		with, withCalls := decideGenerated(t, seed, true)
		without, withoutCalls := decideGenerated(t, seed, false)
		calls[0] += withCalls
		calls[1] += withoutCalls
		if with != without {
			t.Errorf("seed %d: decisions differ\nwith the shortcut:\n%s\nwithout:\n%s", seed, with, without)
		}
	}
	if calls[0] >= calls[1] {
		t.Errorf("the shortcut saved no predicate call: %d with it, %d without", calls[0], calls[1])
	}
	t.Logf("predicate calls: %d with the shortcut, %d without", calls[0], calls[1])
}

// decideGenerated runs allocate and backfill over the cluster of the seed and renders what
// they decided, with the probe's predicate calls.
func decideGenerated(t *testing.T, seed uint64, shortcut bool) (string, int) {
	t.Helper()
	calls := 0
	reg := registry(map[string]framework.PluginBuilder{priority.PluginName: priority.New, gang.PluginName: gang.New,
		conformance.PluginName: conformance.New, predicates.PluginName: predicates.New,
		"probe": func(conf.Arguments) (framework.Plugin, error) { return &probe{calls: &calls, same: shortcut}, nil }})
	reg.RegisterAction(allocate.New())
	reg.RegisterAction(backfill.New())
	cfg := &conf.SchedulerConfiguration{Actions: "allocate, backfill", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}},
		{Plugins: []conf.PluginOption{{Name: predicates.PluginName}, {Name: "probe"},
			{Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: PolicyBinpack}}}},
	}}
	cache := &frameworktest.Cache{Snap: generatedCluster(seed)}
	ssn := frameworktest.RunActions(t, cache, cfg, reg)
	var out []string
	for _, task := range cache.Bound {
		out = append(out, fmt.Sprintf("bound %s on %s: %s", task.Name, task.NodeName, task.BindAnnotations[vgpu.AssignedDevicesAnnotation]))
	}
	for _, job := range ssn.Jobs {
		out = append(out, fmt.Sprintf("job %s: %s; %s", job.Name, job.FitError(), podGroupConditions(job.PodGroup)))
		for _, task := range job.Tasks {
			reason, msg := job.PodScheduledMessage(task, job.FitError)
			out = append(out, fmt.Sprintf("task %s: %s on %q; %s: %s", task.Name, task.Status, task.NodeName, reason, msg))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n"), calls
}

// podGroupConditions renders the conditions the session left, without their times.
func podGroupConditions(pg *schedulingv1beta1.PodGroup) string {
	var out []string
	for _, c := range pg.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, ", ")
}

// probe is a predicate that passes every node and counts its calls; with same it says that
// it answers any two tasks alike.
type probe struct {
	calls *int
	same  bool
}

func (*probe) Name() string { return "probe" }

func (p *probe) OnSessionOpen(ssn *framework.Session) {
	ssn.AddPredicateFn("probe", func(*api.TaskInfo, *api.NodeInfo) *api.Status {
		*p.calls++
		return nil
	})
	if p.same {
		ssn.AddSamePredicatesFn("probe", func(a, b *api.TaskInfo) bool { return true })
	}
}

func (*probe) OnSessionClose(*framework.Session) {}

// generatedCluster is a small cluster drawn from the seed: 2 to 5 nodes of 2 to 4 GPUs (H200,
// A100 on n2), some slots taken by running pods (some of them being deleted), node n0
// tainted, odd nodes taking 3 to 6 pods, and 4 to 12 pending jobs of a few shapes (one of
// them best-effort, for backfill) in one queue, some asking a GPU type.
func generatedCluster(seed uint64) *api.ClusterInfo {
	r := rand.New(rand.NewPCG(seed, 51))
	objs := frameworktest.Objects{Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()}}
	const gpuMemory = 16000
	first := 0
	for n := range 2 + r.IntN(4) {
		name := fmt.Sprintf("n%d", n)
		count := 2 + r.IntN(3)
		model := h200
		if n%3 == 2 {
			model = a100
		}
		node := gpuNode(name, first, gpus(count, 4, gpuMemory, model))
		node.Labels = map[string]string{"zone": fmt.Sprintf("z%d", n%2)}
		if n%2 == 1 {
			pods := resource.MustParse(fmt.Sprint(3 + r.IntN(4)))
			node.Status.Allocatable[corev1.ResourcePods], node.Status.Capacity[corev1.ResourcePods] = pods, pods
		}
		if n == 0 {
			node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
		}
		objs.Nodes = append(objs.Nodes, node)
		for g := range count {
			for k := range r.IntN(3) {
				job := fmt.Sprintf("run-%s-%d-%d", name, g, k)
				objs.PodGroups = append(objs.PodGroups, st.MakePodGroup().Namespace(testNS).Name(job).MinMember(1).
					Queue("default").Phase(schedulingv1beta1.PodGroupRunning).Obj())
				memory := []int{2000, 4000, 8000}[r.IntN(3)]
				p := runningWith(pod(job+"-0", job), name, dev(first+g, fmt.Sprint(memory), "0"))
				if r.IntN(4) == 0 {
					deleted := metav1.NewTime(fixedClock)
					p.DeletionTimestamp = &deleted
				}
				objs.Pods = append(objs.Pods, p)
			}
		}
		first += count
	}
	shapes := []corev1.Container{vgpuCtr("main", 1, gpuMemory, 0), vgpuCtr("main", 1, 6000, 0),
		vgpuCtr("main", 2, 8000, 0), vgpuCtr("main", 1, 12000, 0), ctr("main", "cpu=2"),
		ctr("main", fmt.Sprintf("%s=1", resCount), fmt.Sprintf("%s=6000", resMem), "cpu=40"), {Name: "main"}}
	for j := range 4 + r.IntN(9) {
		job := fmt.Sprintf("job%02d", j)
		replicas := 1 + r.IntN(6)
		minMember := replicas
		if r.IntN(3) == 0 {
			minMember = 1 + r.IntN(replicas)
		}
		objs.PodGroups = append(objs.PodGroups, st.MakePodGroup().Namespace(testNS).Name(job).MinMember(int32(minMember)).
			Queue("default").Phase(schedulingv1beta1.PodGroupInqueue).Created(j).Obj())
		shape := shapes[r.IntN(len(shapes))]
		role := []string{"", "worker", "ps"}[r.IntN(3)]
		selector := r.IntN(4) == 0
		tolerates := r.IntN(3) == 0
		gpuType := []string{"", "", "A100", "H200"}[r.IntN(4)]
		for i := range replicas {
			p := pod(fmt.Sprintf("%s-%d", job, i), job, *shape.DeepCopy())
			if role != "" {
				p.Annotations["volcano.sh/task-spec"] = role
			}
			if selector {
				p.Spec.NodeSelector = map[string]string{"zone": "z1"}
			}
			if gpuType != "" {
				p.Annotations[vgpu.UseGPUTypeAnnotation] = gpuType
			}
			if tolerates {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			}
			objs.Pods = append(objs.Pods, p)
		}
	}
	ci := objs.ClusterInfo()
	for _, n := range ci.NodeList {
		if d := NewDeriverFor(defaultDevices, nil).Derive(n); d != nil {
			n.Devices = map[string]api.Devices{PluginName: d}
		}
	}
	return ci
}
