package framework_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// treeCluster: root > org > team-a, team-b; one running 1-cpu pod in each team, one in
// orphan, whose parent does not exist.
func treeCluster() frameworktest.Objects {
	queue := func(name, parent string) *schedulingv1beta1.Queue {
		q := st.MakeQueue().Name(name).Weight(1).Obj()
		q.Spec.Parent = parent
		return q
	}
	o := frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("8", "8Gi")).Obj()},
		Queues: []*schedulingv1beta1.Queue{queue("root", ""), queue("org", ""), queue("team-a", "org"), queue("team-b", "org"), queue("orphan", "gone")},
	}
	for _, q := range []string{"team-a", "team-b", "orphan"} {
		o.PodGroups = append(o.PodGroups, st.MakePodGroup().Namespace("ns").Name(q).Queue(q).MinMember(1).Phase(schedulingv1beta1.PodGroupRunning).Obj())
		o.Pods = append(o.Pods, st.MakePod().Namespace("ns").Name(q+"-0").Group(q).Node("n1").Phase(corev1.PodRunning).
			Container(st.Resources("1", "")).Obj())
	}
	return o
}

// TestQueueStatusRollsUpTheTree: with a plugin in hierarchy mode, a parent's status.allocated
// is its subtree's and the broken queue is reported; without, every queue has its own.
func TestQueueStatusRollsUpTheTree(t *testing.T) {
	on := true
	builders := map[string]framework.PluginBuilder{"counter": func(conf.Arguments) (framework.Plugin, error) { return &counter{}, nil }}
	for _, tc := range []struct {
		option            conf.PluginOption
		wantRoot, wantOrg float64
		wantProblems      int
	}{
		{conf.PluginOption{Name: "counter"}, 0, 0, 0},
		{conf.PluginOption{Name: "counter", EnabledHierarchy: &on}, 2000, 2000, 1},
	} {
		cache := &frameworktest.Cache{Snap: treeCluster().ClusterInfo()}
		ssn := frameworktest.OpenSession(t, cache, "allocate", builders, tc.option)
		framework.CloseSession(ssn)
		hierarchy := tc.option.HierarchyEnabled()
		want := map[string]float64{"root": tc.wantRoot, "org": tc.wantOrg, "team-a": 1000, "team-b": 1000, "orphan": 1000}
		for q, cpu := range want {
			if got := cache.Allocated[q]; got == nil || got.MilliCPU != cpu {
				t.Errorf("hierarchy %v: status.allocated of %s is %v, want %v millicpu", hierarchy, q, got, cpu)
			}
		}
		if len(cache.QueueProblems) != tc.wantProblems {
			t.Errorf("hierarchy %v: problems %v, want %d", hierarchy, cache.QueueProblems, tc.wantProblems)
		}
		if (ssn.QueueTree != nil) != hierarchy || ssn.HierarchyEnabled("counter") != hierarchy {
			t.Errorf("hierarchy %v: the session's tree or HierarchyEnabled disagrees", hierarchy)
		}
	}
}
