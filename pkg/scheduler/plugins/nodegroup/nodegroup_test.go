package nodegroup

import (
	"fmt"
	"strings"
	"testing"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// affinity is a Queue's spec.affinity with the four lists.
func affinity(required, preferred, antiRequired, antiPreferred []string) *schedulingv1beta1.Affinity {
	return &schedulingv1beta1.Affinity{
		NodeGroupAffinity: &schedulingv1beta1.NodeGroupAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  required,
			PreferredDuringSchedulingIgnoredDuringExecution: preferred,
		},
		NodeGroupAntiAffinity: &schedulingv1beta1.NodeGroupAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  antiRequired,
			PreferredDuringSchedulingIgnoredDuringExecution: antiPreferred,
		},
	}
}

// groupCluster has a 4-CPU node per group of groups (node "n-<group>"), an unlabelled node
// "n-none", the queues, and in each queue a pending one-pod job "<queue>-job" asking 1 CPU.
func groupCluster(groups []string, queues ...*schedulingv1beta1.Queue) *api.ClusterInfo {
	objs := frameworktest.Objects{Queues: queues}
	for _, g := range append(groups, "") {
		w := st.MakeNode().Name("n-" + g).Allocatable(st.Resources("4", "8Gi", "pods", "110"))
		if g == "" {
			w.Name("n-none")
		} else {
			w.Label(LabelKey, g)
		}
		objs.Nodes = append(objs.Nodes, w.Obj())
	}
	for _, q := range queues {
		name := q.Name + "-job"
		objs.PodGroups = append(objs.PodGroups, st.MakePodGroup().Namespace("ns").Name(name).Queue(q.Name).MinMember(1).
			Phase(schedulingv1beta1.PodGroupInqueue).Obj())
		objs.Pods = append(objs.Pods, st.Pod(name+"-0", "1", "1Gi").Namespace("ns").Group(name).Obj())
	}
	return objs.ClusterInfo()
}

func queue(name string, a *schedulingv1beta1.Affinity) *schedulingv1beta1.Queue {
	q := st.MakeQueue().Name(name).Weight(1).Obj()
	q.Spec.Affinity = a
	return q
}

// open opens a session of allocate with nodegroup (args) in one tier.
func open(t *testing.T, ci *api.ClusterInfo, args conf.Arguments) *framework.Session {
	t.Helper()
	return frameworktest.OpenSession(t, &frameworktest.Cache{Snap: ci}, "allocate", map[string]framework.PluginBuilder{PluginName: New},
		conf.PluginOption{Name: PluginName, Arguments: args})
}

// taskOf is the one task of the queue's job.
func taskOf(t *testing.T, ssn *framework.Session, queue string) *api.TaskInfo {
	t.Helper()
	for _, job := range ssn.Jobs {
		if job.Queue == api.QueueID(queue) {
			for _, task := range job.Tasks {
				return task
			}
		}
	}
	t.Fatalf("no task in queue %s", queue)
	return nil
}

// verdicts is, for each node in name order, "ok" or the predicate's reason, and the score.
func verdicts(ssn *framework.Session, task *api.TaskInfo) []string {
	var out []string
	for _, n := range ssn.NodeList {
		v := "ok"
		if s := ssn.Predicate(task, n); s != nil {
			v = fmt.Sprintf("%v %s", s.Code == api.UnschedulableAndUnresolvable, strings.Join(s.Reasons, "; "))
		}
		out = append(out, fmt.Sprintf("%s: %s (score %g)", n.Name, v, ssn.NodeOrder(task, n)))
	}
	return out
}

// TestQueueRules: each list of a Queue's spec.affinity admits, refuses and scores the node
// groups as upstream's plugin (its user guide's cases), and every refusal is unresolvable and
// names the queue and the group, after upstream's own words.
func TestQueueRules(t *testing.T) {
	groups := []string{"a", "b", "c", "d"}
	for _, tt := range []struct {
		name  string
		queue *schedulingv1beta1.Queue
		args  conf.Arguments
		want  []string
	}{{
		name:  "required and preferred affinity, anti-affinity",
		queue: queue("q", affinity([]string{"a", "b"}, []string{"a"}, []string{"c", "d"}, []string{"c"})),
		want: []string{
			"n-a: ok (score 150)",
			"n-b: ok (score 100)",
			// The preferred anti-affinity admits c; the required one refuses it.
			`n-c: true node does not satisfy the node group affinity: queue q's required node group anti-affinity lists node group "c" (score -1)`,
			`n-d: true node does not satisfy the node group affinity: queue q's required node group anti-affinity lists node group "d" (score 0)`,
			"n-none: true node group label not found: queue q names node groups, and the node has no volcano.sh/nodegroup-name label (score 0)",
		},
	}, {
		name:  "a group listed in affinity and required anti-affinity is refused",
		queue: queue("q", affinity([]string{"a", "b"}, []string{"a"}, []string{"a"}, []string{"b"})),
		want: []string{
			`n-a: true node does not satisfy the node group affinity: queue q's required node group anti-affinity lists node group "a" (score 150)`,
			"n-b: ok (score -1)",
			`n-c: true node does not satisfy the node group affinity: queue q's node group affinity does not list node group "c" (score 0)`,
			`n-d: true node does not satisfy the node group affinity: queue q's node group affinity does not list node group "d" (score 0)`,
			"n-none: true node group label not found: queue q names node groups, and the node has no volcano.sh/nodegroup-name label (score 0)",
		},
	}, {
		name:  "preferred order",
		queue: queue("q", affinity(nil, []string{"c", "b", "a", "b"}, nil, nil)),
		args:  conf.Arguments{PreferredOrderArgument: true},
		want: []string{
			"n-a: ok (score 16.666666666666668)",
			"n-b: ok (score 33.333333333333336)",
			"n-c: ok (score 50)",
			`n-d: true node does not satisfy the node group affinity: queue q's node group affinity does not list node group "d" (score 0)`,
			"n-none: true node group label not found: queue q names node groups, and the node has no volcano.sh/nodegroup-name label (score 0)",
		},
	}, {
		name:  "a queue without affinity, strict (the default): no node at all",
		queue: queue("free", nil),
		want: []string{
			`n-a: true node group affinity not specified: queue free names no node group, so its pods may not use node group "a" (score 0)`,
			`n-b: true node group affinity not specified: queue free names no node group, so its pods may not use node group "b" (score 0)`,
			`n-c: true node group affinity not specified: queue free names no node group, so its pods may not use node group "c" (score 0)`,
			`n-d: true node group affinity not specified: queue free names no node group, so its pods may not use node group "d" (score 0)`,
			"n-none: true node group label not found: queue free names no node group, and the nodegroup plugin's strict mode (the default) keeps its pods off nodes without a volcano.sh/nodegroup-name label (score 0)",
		},
	}, {
		name:  "a queue with empty lists, not strict: unlabelled nodes only",
		queue: queue("free", affinity(nil, nil, nil, nil)),
		args:  conf.Arguments{StrictArgument: "false"},
		want: []string{
			`n-a: true node group affinity not specified: queue free names no node group, so its pods may not use node group "a" (score 0)`,
			`n-b: true node group affinity not specified: queue free names no node group, so its pods may not use node group "b" (score 0)`,
			`n-c: true node group affinity not specified: queue free names no node group, so its pods may not use node group "c" (score 0)`,
			`n-d: true node group affinity not specified: queue free names no node group, so its pods may not use node group "d" (score 0)`,
			"n-none: ok (score 0)",
		},
	}, {
		name:  "not strict does not open unlabelled nodes to a queue that names groups",
		queue: queue("q", affinity([]string{"a"}, nil, nil, nil)),
		args:  conf.Arguments{StrictArgument: false},
		want: []string{
			"n-a: ok (score 100)",
			`n-b: true node does not satisfy the node group affinity: queue q's node group affinity does not list node group "b" (score 0)`,
			`n-c: true node does not satisfy the node group affinity: queue q's node group affinity does not list node group "c" (score 0)`,
			`n-d: true node does not satisfy the node group affinity: queue q's node group affinity does not list node group "d" (score 0)`,
			"n-none: true node group label not found: queue q names node groups, and the node has no volcano.sh/nodegroup-name label (score 0)",
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ssn := open(t, groupCluster(groups, tt.queue), tt.args)
			got := verdicts(ssn, taskOf(t, ssn, tt.queue.Name))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestAllocatePlacesEachQueueOnItsGroups: allocate binds each queue's pod to a node of its
// group, prefers a preferred group among the admitted ones, and a pod whose queue admits no
// node stays Pending with the nodes' reasons as its fit error.
func TestAllocatePlacesEachQueueOnItsGroups(t *testing.T) {
	ci := groupCluster([]string{"a", "b", "c"},
		queue("qa", affinity([]string{"a"}, nil, nil, nil)),
		queue("qbc", affinity([]string{"b", "c"}, []string{"c"}, nil, nil)),
		queue("qanti", affinity(nil, nil, []string{"a", "b", "c"}, nil)),
		queue("free", nil))
	cache := &frameworktest.Cache{Snap: ci}
	reg := framework.NewRegistry()
	reg.RegisterAction(allocate.New())
	reg.RegisterPlugin(PluginName, New)
	ssn := frameworktest.RunActions(t, cache, &conf.SchedulerConfiguration{Actions: "allocate",
		Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName, Arguments: conf.Arguments{StrictArgument: false}}}}}}, reg)
	binds := cache.Binds()
	want := map[string]string{"ns/qa-job-0": "n-a", "ns/qbc-job-0": "n-c", "ns/free-job-0": "n-none"}
	if fmt.Sprint(binds) != fmt.Sprint(want) {
		t.Errorf("binds %v, want %v", binds, want)
	}
	task := taskOf(t, ssn, "qanti")
	fe := ssn.JobFor(task).NodesFitErrors[task.UID]
	if fe == nil {
		t.Fatal("no fit error for the pod of queue qanti")
	}
	const wantFit = "0/4 nodes are unavailable: " +
		`1 node does not satisfy the node group affinity: queue qanti's required node group anti-affinity lists node group "a", ` +
		`1 node does not satisfy the node group affinity: queue qanti's required node group anti-affinity lists node group "b", ` +
		`1 node does not satisfy the node group affinity: queue qanti's required node group anti-affinity lists node group "c", ` +
		"1 node group label not found: queue qanti names node groups, and the node has no volcano.sh/nodegroup-name label."
	if got := fe.Error(); got != wantFit {
		t.Errorf("fit error\n%s\nwant\n%s", got, wantFit)
	}
}

// TestHierarchyInheritsTheNearestAffinity: with enableHierarchy, a queue without spec.affinity
// takes its nearest ancestor's; one with its own keeps it; without enableHierarchy nothing is
// inherited.
func TestHierarchyInheritsTheNearestAffinity(t *testing.T) {
	root := queue("root", affinity([]string{"a"}, nil, nil, nil))
	mid := queue("mid", nil)
	leaf := queue("leaf", nil)
	leaf.Spec.Parent = "mid"
	own := queue("own", affinity([]string{"b"}, nil, nil, nil))
	own.Spec.Parent = "mid"
	for _, hierarchy := range []bool{true, false} {
		ci := groupCluster([]string{"a", "b"}, root, mid, leaf, own)
		opt := conf.PluginOption{Name: PluginName}
		if hierarchy {
			on := true
			opt.EnabledHierarchy = &on
		}
		ssn := frameworktest.OpenSession(t, &frameworktest.Cache{Snap: ci}, "allocate", map[string]framework.PluginBuilder{PluginName: New}, opt)
		for q, want := range map[string]string{"leaf": "n-a", "own": "n-b"} {
			if !hierarchy && q == "leaf" {
				want = ""
			}
			var admitted []string
			for _, n := range ssn.NodeList {
				if ssn.Predicate(taskOf(t, ssn, q), n) == nil {
					admitted = append(admitted, n.Name)
				}
			}
			if strings.Join(admitted, ",") != want {
				t.Errorf("hierarchy %t: queue %s admitted on %v, want %q", hierarchy, q, admitted, want)
			}
		}
	}
}

// TestBadArguments: a strict or enablePreferredOrder that is not a bool is refused, naming it.
func TestBadArguments(t *testing.T) {
	for _, key := range []string{StrictArgument, PreferredOrderArgument} {
		_, err := New(conf.Arguments{key: "sometimes"})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: sometimes: err %v, want one naming the argument", key, err)
		}
	}
}
