package reclaim_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

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

// twoQueues is one 4-CPU node and queues a and b of weight 1, as queue sets them; a runs
// four 1-CPU pods (minMember 1), b has pending pods of 1 CPU with minMember bMin.
func twoQueues(a func(*schedulingv1beta1.Queue), bPending, bMin int) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	qa, qb := st.MakeQueue().Name("a").Weight(1).Obj(), st.MakeQueue().Name("b").Weight(1).Obj()
	for _, q := range []*schedulingv1beta1.Queue{qa, qb} {
		q.Status.State = schedulingv1beta1.QueueStateOpen
	}
	if a != nil {
		a(qa)
	}
	ci.Queues["a"], ci.Queues["b"] = api.NewQueueInfo(qa), api.NewQueueInfo(qb)
	n := api.NewNodeInfo(st.MakeNode().Name("n0").Allocatable(st.Resources("4", "8Gi", "pods", "110")).Obj())
	ci.Nodes[n.Name], ci.NodeList = n, []*api.NodeInfo{n}
	add := func(queue string, running, pending, min int) {
		pg := st.MakePodGroup().Namespace("ns").Name(queue + "-job").Queue(queue).MinMember(int32(min)).Phase(schedulingv1beta1.PodGroupInqueue).Obj()
		job := api.NewJobInfo(api.NewJobID("ns", pg.Name))
		job.SetPodGroup(pg, "a")
		for i := 0; i < running+pending; i++ {
			w := st.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%d", queue, i)).Group(pg.Name).Container(st.Resources("1", "1Gi"))
			if i < running {
				w.Node("n0").Phase(corev1.PodRunning)
			}
			task := api.NewTaskInfo(w.Obj())
			job.AddTask(task)
			if i < running {
				n.AddTask(task)
			}
		}
		ci.Jobs[job.UID] = job
	}
	add("a", 4, 0, 1)
	add("b", 0, bPending, bMin)
	return ci
}

func reclaimOnce(t *testing.T, ci *api.ClusterInfo) []string {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, reason string) error {
		evicted = append(evicted, task.Name+": "+reason)
		return nil
	}}
	reg := framework.NewRegistry()
	for name, build := range map[string]framework.PluginBuilder{priority.PluginName: priority.New, gang.PluginName: gang.New,
		conformance.PluginName: conformance.New, proportion.PluginName: proportion.New} {
		reg.RegisterPlugin(name, build)
	}
	cfg := &conf.SchedulerConfiguration{Actions: reclaim.Name, Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: priority.PluginName}, {Name: gang.PluginName}, {Name: conformance.PluginName}}},
		{Plugins: []conf.PluginOption{{Name: proportion.PluginName}}},
	}}
	ssn := framework.OpenSession(cache, cfg, reg)
	reclaim.New().Execute(ssn)
	slices.Sort(evicted)
	return evicted
}

func TestReclaim(t *testing.T) {
	notReclaimable := func(q *schedulingv1beta1.Queue) { f := false; q.Spec.Reclaimable = &f }
	guarantee3 := func(q *schedulingv1beta1.Queue) {
		q.Spec.Guarantee.Resource = corev1.ResourceList{corev1.ResourceCPU: st.Resources("3", "")[corev1.ResourceCPU]}
	}
	cases := []struct {
		name       string
		a          func(*schedulingv1beta1.Queue)
		bPending   int
		bMin       int
		wantEvicts int
	}{
		{"b takes back its deserved half", nil, 2, 2, 2},
		{"a gang above its deserved half takes nothing", nil, 3, 3, 0},
		{"a job reclaims until its minimum has a place (upstream's starving rule)", nil, 3, 1, 1},
		{"a queue that is not reclaimable gives nothing", notReclaimable, 2, 1, 0},
		{"a queue keeps its guarantee; a gang that cannot then fit whole takes nothing", guarantee3, 2, 2, 0},
		{"a queue keeps its guarantee; what is above it goes", guarantee3, 2, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := reclaimOnce(t, twoQueues(tc.a, tc.bPending, tc.bMin))
			if len(got) != tc.wantEvicts {
				t.Fatalf("evicted %q, want %d of queue a's pods", got, tc.wantEvicts)
			}
			for _, e := range got {
				if e[:2] != "a-" || e[len(e)-len(": reclaim"):] != ": reclaim" {
					t.Errorf("evicted %q: want a's pods, for reclaim", e)
				}
			}
		})
	}
}
