package pdb

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// job is a PodGroup of the test cluster in queue, with running pods on n0 and pending ones,
// each asking cpu; every pod is labelled app=<name> unless unlabelled.
type job struct {
	ns, name, queue  string
	priority         int32
	min              int32
	running, pending int
	cpu              string
	unlabelled       bool
}

// cluster is one 4-CPU node n0, a queue of weight 1 for each queue the jobs name, and the jobs.
func cluster(jobs ...job) *api.ClusterInfo {
	ci := frameworktest.ClusterOf(nil)
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Allocatable(st.Resources("4", "8Gi", "pods", "110")).Obj())
	ci.Nodes[n.Name], ci.NodeList = n, []*api.NodeInfo{n}
	for i, j := range jobs {
		if _, ok := ci.Queues[api.QueueID(j.queue)]; !ok {
			q := st.MakeQueue().Name(j.queue).Weight(1).Obj()
			q.Status.State = schedulingv1beta1.QueueStateOpen
			ci.Queues[api.QueueID(j.queue)] = api.NewQueueInfo(q)
		}
		pg := st.MakePodGroup().Namespace(j.ns).Name(j.name).Queue(j.queue).MinMember(j.min).Created(i).
			Phase(schedulingv1beta1.PodGroupInqueue).Obj()
		if j.running > 0 {
			pg.Status.Phase = schedulingv1beta1.PodGroupRunning
		}
		info := api.NewJobInfo(api.NewJobID(j.ns, j.name))
		info.SetPodGroup(pg, j.queue)
		info.Priority = j.priority
		for k := 0; k < j.running+j.pending; k++ {
			w := st.MakePod().Namespace(j.ns).Name(fmt.Sprintf("%s-%d", j.name, k)).Group(j.name).Container(st.Resources(j.cpu, "1Gi"))
			if !j.unlabelled {
				w.Label("app", j.name)
			}
			if k < j.running {
				w.Node("n0").Phase(corev1.PodRunning)
			}
			task := api.NewTaskInfo(w.Obj())
			info.AddTask(task)
			if k < j.running {
				n.AddTask(task)
			}
		}
		ci.Jobs[info.UID] = info
	}
	return ci
}

// pdbOf is a PodDisruptionBudget of ns over pods labelled app=<app> with allowed
// disruptions left.
func pdbOf(ns, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-pdb"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

// listed is the plugin's watch over a fake API server holding the budgets, started as the
// scheduler starts components and done with its first list.
func listed(t *testing.T, pdbs ...*policyv1.PodDisruptionBudget) Budgets {
	t.Helper()
	objs := make([]runtime.Object, len(pdbs))
	for i, b := range pdbs {
		objs[i] = b
	}
	source := NewSource()
	factory, ctx := frameworktest.StartOn(t, source, objs...)
	source.InNamespace("ns") // starts the watch
	factory.WaitForCacheSync(ctx.Done())
	return source
}

// victimTier is upstream's first tier, which decides the victims; upstream's confs put pdb
// in the second (cmd/vc-scheduler/testdata/upstream-confs/04-pools-and-topology.conf).
var victimTier = []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}

// evict runs the action over ci with victimTier then pdb (reading budgets) and extra in the
// second tier, and returns the pods evicted, sorted, and the session.
func evict(t *testing.T, ci *api.ClusterInfo, action string, budgets Budgets, extra ...conf.PluginOption) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	reg := framework.NewRegistry()
	reg.RegisterAction(preempt.New())
	reg.RegisterAction(reclaim.New())
	for name, build := range map[string]framework.PluginBuilder{priority.PluginName: priority.New, gang.PluginName: gang.New,
		conformance.PluginName: conformance.New, proportion.PluginName: proportion.New, PluginName: NewBuilder(budgets)} {
		reg.RegisterPlugin(name, build)
	}
	second := append([]conf.PluginOption{{Name: PluginName}}, extra...)
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: action,
		Tiers: []conf.Tier{{Plugins: victimTier}, {Plugins: second}}}, reg)
	slices.Sort(evicted)
	return evicted, ssn
}

// lowAndHigh is job low running four 1-CPU pods (minMember 1) on the full node, and the
// high jobs, of higher priority, each a gang of its pending pods.
func lowAndHigh(high ...job) *api.ClusterInfo {
	jobs := []job{{ns: "ns", name: "low", queue: "q", priority: 1, min: 1, running: 4, cpu: "1"}}
	for _, h := range high {
		h.ns, h.queue, h.priority, h.min = "ns", "q", 10, int32(h.pending)
		jobs = append(jobs, h)
	}
	return cluster(jobs...)
}

// TestPreemptSparesProtectedPods: preempt never takes a budget below zero, counting the
// victims it has already chosen in the cycle, even with pdb behind the tier that decides the
// victims; a preemptor that the budget leaves short evicts nothing and says why.
func TestPreemptSparesProtectedPods(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ci      *api.ClusterInfo
		budgets []*policyv1.PodDisruptionBudget
		want    int // pods of low evicted
	}{
		{"no budget: two victims for a 2-CPU pod", lowAndHigh(job{name: "high", pending: 1, cpu: "2"}), nil, 2},
		{"one disruption allowed: a 2-CPU pod evicts nothing", lowAndHigh(job{name: "high", pending: 1, cpu: "2"}),
			[]*policyv1.PodDisruptionBudget{pdbOf("ns", "low", 1)}, 0},
		{"two allowed", lowAndHigh(job{name: "high", pending: 1, cpu: "2"}),
			[]*policyv1.PodDisruptionBudget{pdbOf("ns", "low", 2)}, 2},
		{"one allowed, two 1-CPU preemptors: the cycle's first eviction spends it",
			lowAndHigh(job{name: "high-a", pending: 1, cpu: "1"}, job{name: "high-b", pending: 1, cpu: "1"}),
			[]*policyv1.PodDisruptionBudget{pdbOf("ns", "low", 1)}, 1},
		{"none allowed", lowAndHigh(job{name: "high", pending: 1, cpu: "1"}),
			[]*policyv1.PodDisruptionBudget{pdbOf("ns", "low", 0)}, 0},
		{"a budget of another namespace or selector protects nothing", lowAndHigh(job{name: "high", pending: 1, cpu: "1"}),
			[]*policyv1.PodDisruptionBudget{pdbOf("other", "low", 0), pdbOf("ns", "high", 0)}, 1},
		{"an empty selector covers the namespace", lowAndHigh(job{name: "high", pending: 1, cpu: "1"}),
			[]*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
				b := pdbOf("ns", "all", 0)
				b.Spec.Selector = &metav1.LabelSelector{}
				return b
			}()}, 0},
		{"a pod already counted as disrupted spends nothing", lowAndHigh(job{name: "high", pending: 1, cpu: "1"}),
			[]*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
				b := pdbOf("ns", "low", 0)
				b.Status.DisruptedPods = map[string]metav1.Time{"low-0": {}, "low-1": {}, "low-2": {}, "low-3": {}}
				return b
			}()}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evicted, _ := evict(t, tt.ci, "preempt", listed(t, tt.budgets...))
			if len(evicted) != tt.want {
				t.Errorf("evicted %v, want %d pods", evicted, tt.want)
			}
		})
	}
}

// TestPreemptorLeftShortSaysWhy: the preemptor whose victims the budget holds back keeps the
// evictions search's reason.
func TestPreemptorLeftShortSaysWhy(t *testing.T) {
	_, ssn := evict(t, lowAndHigh(job{name: "high", pending: 1, cpu: "2"}), "preempt", listed(t, pdbOf("ns", "low", 1)))
	for _, j := range ssn.Jobs {
		if j.Name != "high" {
			continue
		}
		for uid, fe := range j.NodesFitErrors {
			if got, want := fe.Error(), "0/1 nodes are unavailable: 1 Insufficient cpu even with every allowed victim evicted."; got != want {
				t.Errorf("%s: %q, want %q", uid, got, want)
			}
			return
		}
	}
	t.Error("no fit error recorded for the preemptor")
}

// notListed is a watch that has not listed its budgets yet: a real one over the fake API
// server may list them in the middle of a session.
type notListed struct{}

func (notListed) InNamespace(string) ([]*policyv1.PodDisruptionBudget, bool) { return nil, false }

// TestUnlistedBudgetsProtectEveryPod: until the budgets are listed, nothing is evicted.
func TestUnlistedBudgetsProtectEveryPod(t *testing.T) {
	evicted, _ := evict(t, lowAndHigh(job{name: "high", pending: 1, cpu: "1"}), "preempt", notListed{})
	if len(evicted) != 0 {
		t.Errorf("evicted %v before the budgets were listed", evicted)
	}
}

// TestUnlabelledPodsAreVictims: a pod without labels matches no budget and may go (upstream
// never lets it go).
func TestUnlabelledPodsAreVictims(t *testing.T) {
	ci := cluster(job{ns: "ns", name: "low", queue: "q", priority: 1, min: 1, running: 4, cpu: "1", unlabelled: true},
		job{ns: "ns", name: "high", queue: "q", priority: 10, min: 1, pending: 1, cpu: "1"})
	evicted, _ := evict(t, ci, "preempt", listed(t, pdbOf("ns", "low", 0)))
	if len(evicted) != 1 {
		t.Errorf("evicted %v, want one pod", evicted)
	}
}

// TestReclaimSparesProtectedPods: reclaim takes a queue's share back only as far as the
// budget of the pods it would evict allows.
func TestReclaimSparesProtectedPods(t *testing.T) {
	for _, tt := range []struct {
		allowed int32
		want    int
	}{{1, 0}, {2, 2}} {
		ci := cluster(job{ns: "ns", name: "a-job", queue: "a", min: 1, running: 4, cpu: "1"},
			job{ns: "ns", name: "b-job", queue: "b", min: 2, pending: 2, cpu: "1"})
		evicted, _ := evict(t, ci, "reclaim", listed(t, pdbOf("ns", "a-job", tt.allowed)), conf.PluginOption{Name: proportion.PluginName})
		if len(evicted) != tt.want {
			t.Errorf("%d allowed: evicted %v, want %d pods", tt.allowed, evicted, tt.want)
		}
	}
}

// TestWithoutAPIServerNothingIsProtected: the plugin of a scheduler without an API server
// has no budgets and no say.
func TestWithoutAPIServerNothingIsProtected(t *testing.T) {
	evicted, _ := evict(t, lowAndHigh(job{name: "high", pending: 1, cpu: "1"}), "preempt", nil)
	if len(evicted) != 1 {
		t.Errorf("evicted %v, want one pod", evicted)
	}
}
