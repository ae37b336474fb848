package reclaim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/gangreclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/capacity"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// queueJob is the one job of a queue: running pods on the node, pending ones, minMember.
type queueJob struct {
	queue                 string
	running, pending, min int
}

// queues is one 4-CPU node and, for each job, its queue of weight 1 as setup sets it; every
// pod asks 1 CPU and 1Gi.
func queues(setup func(map[string]*schedulingv1beta1.Queue), jobs ...queueJob) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	specs := map[string]*schedulingv1beta1.Queue{}
	for _, j := range jobs {
		q := st.MakeQueue().Name(j.queue).Weight(1).Obj()
		q.Status.State = schedulingv1beta1.QueueStateOpen
		specs[j.queue] = q
	}
	setup(specs)
	for name, q := range specs {
		ci.Queues[api.QueueID(name)] = api.NewQueueInfo(q)
	}
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Allocatable(st.Resources("4", "8Gi", "pods", "110")).Obj())
	ci.Nodes[n.Name], ci.NodeList = n, []*api.NodeInfo{n}
	for _, j := range jobs {
		pg := st.MakePodGroup().Namespace("ns").Name(j.queue + "-job").Queue(j.queue).MinMember(int32(j.min)).Phase(schedulingv1beta1.PodGroupInqueue).Obj()
		job := api.NewJobInfo(api.NewJobID("ns", pg.Name))
		job.SetPodGroup(pg, j.queue)
		for i := 0; i < j.running+j.pending; i++ {
			w := st.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%d", j.queue, i)).Group(pg.Name).Container(st.Resources("1", "1Gi"))
			if i < j.running {
				w.Node("n0").Phase(corev1.PodRunning)
			}
			task := api.NewTaskInfo(w.Obj())
			job.AddTask(task)
			if i < j.running {
				n.AddTask(task)
			}
		}
		ci.Jobs[job.UID] = job
	}
	return ci
}

// twoQueues: queue a runs four pods (minMember 1), queue b has bPending with minMember bMin.
func twoQueues(setup func(a, b *schedulingv1beta1.Queue), bPending, bMin int) *api.ClusterInfo {
	return queues(func(q map[string]*schedulingv1beta1.Queue) { setup(q["a"], q["b"]) },
		queueJob{"a", 4, 0, 1}, queueJob{"b", 0, bPending, bMin})
}

// victimTier is priority, gang and conformance, which have a say on reclaim victims.
var victimTier = []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}

// queuePluginAfter is upstream's layout: the queue plugin in the second tier, where only its
// Preemptive counts (the first tier decides the victims).
func queuePluginAfter(queuePlugin string) []conf.Tier {
	return []conf.Tier{{Plugins: victimTier}, {Plugins: []conf.PluginOption{{Name: queuePlugin}}}}
}

// queuePluginWith puts the queue plugin in the first tier, so that its Reclaimable has a say
// on the victims too.
func queuePluginWith(queuePlugin string) []conf.Tier {
	return []conf.Tier{{Plugins: append(slices.Clone(victimTier), conf.PluginOption{Name: queuePlugin})}}
}

// reclaimOnce loads a configuration of the action (reclaim or gangreclaim) and tiers, runs
// it over ci and returns what it evicted ("pod: reason", sorted).
func reclaimOnce(t *testing.T, ci *api.ClusterInfo, action string, tiers []conf.Tier) []string {
	t.Helper()
	evicted, _ := reclaimSession(t, ci, action, tiers)
	return evicted
}

// reclaimSession is reclaimOnce that also returns the session, closed as a cycle ends.
func reclaimSession(t *testing.T, ci *api.ClusterInfo, action string, tiers []conf.Tier) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, reason string) error {
		evicted = append(evicted, task.Name+": "+reason)
		return nil
	}}
	reg := framework.NewRegistry()
	reg.RegisterAction(reclaim.New())
	reg.RegisterAction(gangreclaim.New())
	for name, build := range map[string]framework.PluginBuilder{priority.PluginName: priority.New, gang.PluginName: gang.New,
		conformance.PluginName: conformance.New, proportion.PluginName: proportion.New, capacity.PluginName: capacity.New} {
		reg.RegisterPlugin(name, build)
	}
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: action, Tiers: tiers}, reg)
	framework.CloseSession(ssn)
	slices.Sort(evicted)
	return evicted, ssn
}

// declare sets a queue's spec.deserved, the share capacity gives it.
func declare(cpu, memory string) func(*schedulingv1beta1.Queue) {
	return func(q *schedulingv1beta1.Queue) { q.Spec.Deserved = st.Resources(cpu, memory) }
}

// checkEvicted: got is want pods of queue a, each for action.
func checkEvicted(t *testing.T, got []string, want int, action string) {
	t.Helper()
	if len(got) != want {
		t.Fatalf("evicted %q, want %d of queue a's pods", got, want)
	}
	for _, e := range got {
		if !strings.HasPrefix(e, "a-") || !strings.HasSuffix(e, ": "+action) {
			t.Errorf("evicted %q: want a's pods, for %s", e, action)
		}
	}
}

// The same cases with proportion (the queues' weights halve the node) and with capacity (each
// queue declares half of it as deserved): the queue plugins differ in how a queue comes by
// its deserved share, not in what reclaim does with it.
func TestReclaim(t *testing.T) {
	notReclaimable := func(q *schedulingv1beta1.Queue) { f := false; q.Spec.Reclaimable = &f }
	guarantee3 := func(q *schedulingv1beta1.Queue) {
		q.Spec.Guarantee.Resource = corev1.ResourceList{corev1.ResourceCPU: st.Resources("3", "")[corev1.ResourceCPU]}
	}
	const notReady = "tasks in gang unschedulable: pod group is not ready, "
	cases := []struct {
		name       string
		a          func(*schedulingv1beta1.Queue)
		bPending   int
		bMin       int
		wantEvicts int
		// wantMessage is b's Unschedulable condition. Where the queue plugin's Preemptive
		// stops b's reclaim, it gives no origin reason: the queue, not a node, said no.
		wantMessage string
	}{
		{"b takes back its deserved half", nil, 2, 2, 2, "2/2 " + notReady + "2 Pipelined, 2 minAvailable"},
		{"a gang above its deserved half takes nothing", nil, 3, 3, 0,
			"3/3 " + notReady + "3 Pending, 3 minAvailable; Pending: 3 Unschedulable"},
		{"a job reclaims until its minimum has a place (upstream's starving rule)", nil, 3, 1, 1,
			"1/3 " + notReady + "1 Pipelined, 1 minAvailable, 2 Pending; Pending: 2 Unschedulable"},
		{"a queue that is not reclaimable gives nothing", notReclaimable, 2, 1, 0,
			"1/2 " + notReady + "1 minAvailable, 2 Pending; Pending: 2 Unschedulable" +
				". Origin reason is b-0: 0/1 nodes are unavailable: 1 " + evictsearch.ReasonNothingToEvict + "."},
		{"a queue keeps its guarantee; a gang that cannot then fit whole takes nothing", guarantee3, 2, 2, 0,
			"2/2 " + notReady + "2 Pending, 2 minAvailable; Pending: 2 Unschedulable"},
		{"a queue keeps its guarantee; what is above it goes", guarantee3, 2, 1, 1,
			"1/2 " + notReady + "1 Pending, 1 Pipelined, 1 minAvailable; Pending: 1 Unschedulable"},
	}
	half := declare("2", "4Gi")
	for _, queuePlugin := range []string{proportion.PluginName, capacity.PluginName} {
		for _, tc := range cases {
			t.Run(queuePlugin+"/"+tc.name, func(t *testing.T) {
				setup := func(a, b *schedulingv1beta1.Queue) {
					if queuePlugin == capacity.PluginName {
						half(a)
						half(b)
					}
					if tc.a != nil {
						tc.a(a)
					}
				}
				got, ssn := reclaimSession(t, twoQueues(setup, tc.bPending, tc.bMin), reclaim.Name, queuePluginAfter(queuePlugin))
				checkEvicted(t, got, tc.wantEvicts, reclaim.Name)
				var msg string
				for _, c := range ssn.Jobs["ns/b-job"].Status.Conditions {
					if c.Type == schedulingv1beta1.PodGroupUnschedulableType {
						msg = c.Message
					}
				}
				if msg != tc.wantMessage {
					t.Errorf("b's condition says\n%q, want\n%q", msg, tc.wantMessage)
				}
			})
		}
	}
}

// capacity takes the deserved share from spec.deserved, not from weights: a queue declared to
// deserve three quarters reclaims them for a gang that the weights' half would refuse.
func TestCapacityReclaimsDeclaredShare(t *testing.T) {
	setup := func(a, b *schedulingv1beta1.Queue) {
		declare("1", "2Gi")(a)
		declare("3", "6Gi")(b)
	}
	checkEvicted(t, reclaimOnce(t, twoQueues(setup, 3, 3), reclaim.Name, queuePluginAfter(capacity.PluginName)), 3, reclaim.Name)
}

// gangreclaim shares reclaim's queue rules: b takes its deserved half back from a's surplus,
// and a gang that its deserved half cannot hold whole evicts nothing.
func TestGangReclaimSharesTheQueueRules(t *testing.T) {
	nothing := func(a, b *schedulingv1beta1.Queue) {}
	checkEvicted(t, reclaimOnce(t, twoQueues(nothing, 2, 2), gangreclaim.Name, queuePluginAfter(proportion.PluginName)), 2, gangreclaim.Name)
	checkEvicted(t, reclaimOnce(t, twoQueues(nothing, 3, 3), gangreclaim.Name, queuePluginAfter(proportion.PluginName)), 0, gangreclaim.Name)
}

// Where the queue plugin has a say on the victims, a queue that holds no more than its
// deserved share gives nothing, though its pod would otherwise go first (job order falls back
// to the name, and the last job goes first): b takes its share back from a alone. proportion
// gives a and b 1 CPU and c, of weight 2, 2 CPUs; capacity reads the same from spec.deserved.
func TestReclaimOnlyAboveDeserved(t *testing.T) {
	for _, queuePlugin := range []string{proportion.PluginName, capacity.PluginName} {
		t.Run(queuePlugin, func(t *testing.T) {
			setup := func(q map[string]*schedulingv1beta1.Queue) {
				q["c"].Spec.Weight = 2
				if queuePlugin == capacity.PluginName {
					declare("1", "2Gi")(q["a"])
					declare("1", "2Gi")(q["b"])
					declare("2", "4Gi")(q["c"])
				}
			}
			ci := queues(setup, queueJob{"a", 2, 0, 1}, queueJob{"b", 0, 1, 1}, queueJob{"c", 2, 0, 1})
			checkEvicted(t, reclaimOnce(t, ci, reclaim.Name, queuePluginWith(queuePlugin)), 1, reclaim.Name)
		})
	}
}
