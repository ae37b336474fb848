package allocate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// singles is n single-pod jobs (min 1) in one queue, created in order.
func singles(n int, request corev1.ResourceList) ([]*schedulingv1beta1.PodGroup, []*corev1.Pod) {
	var groups []*schedulingv1beta1.PodGroup
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("job%d", i)
		groups = append(groups, buildPodGroup(name, "q1", 1, inqueue, i))
		pods = append(pods, buildPod(name+"-p", name, request))
	}
	return groups, pods
}

func nodes(n int, allocatable corev1.ResourceList) []*corev1.Node {
	var list []*corev1.Node
	for i := 0; i < n; i++ {
		list = append(list, st.Node(fmt.Sprintf("n%d", i), allocatable).Obj())
	}
	return list
}

// Without scoring, the search takes the first feasible node and the next search starts after
// it, so that pods spread over the nodes rather than filling the first one.
func TestSearchRotatesWithoutScoring(t *testing.T) {
	groups, pods := singles(4, st.Resources("1", "1Gi"))
	tc := allocateCase{
		queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: groups,
		pods:      pods,
		nodes:     nodes(3, st.Resources("8", "8Gi", "pods", "10")),
		wantBinds: map[string]string{"c1/job0-p": "n0", "c1/job1-p": "n1", "c1/job2-p": "n2", "c1/job3-p": "n0"},
	}
	ssn, cache := runAllocate(t, tc)
	checkCase(t, tc, ssn, cache)
}

// The next session's search starts where the last one stopped.
func TestSearchOffsetOutlivesTheSession(t *testing.T) {
	act := New()
	queues := []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)}
	allocatable := st.Resources("8", "8Gi", "pods", "10")
	want := []string{"n0", "n1", "n2", "n0"}
	for cycle, node := range want {
		groups, pods := singles(1, st.Resources("1", "1Gi"))
		cache := &frameworktest.Cache{Snap: frameworktest.Objects{Nodes: nodes(3, allocatable), Queues: queues, PodGroups: groups, Pods: pods}.ClusterInfo()}
		act.Execute(frameworktest.OpenTiers(cache, conf.SchedulerConfiguration{Actions: "allocate"}, standardTiers(nil)...))
		if got := cache.Binds()["c1/job0-p"]; got != node {
			t.Errorf("cycle %d: bound to %q, want %q", cycle, got, node)
		}
	}
}

// scoreBy registers a node order that reads each node's score from the map.
func scoreBy(scores map[string]float64) func(ssn *framework.Session) {
	return func(ssn *framework.Session) {
		ssn.AddNodeOrderFn("hooks", func(_ *api.TaskInfo, n *api.NodeInfo) (float64, error) { return scores[n.Name], nil })
	}
}

func TestScoring(t *testing.T) {
	free := st.Resources("4", "8Gi", "pods", "10")
	cases := []struct {
		name      string
		scores    map[string]float64
		opts      *Options
		nodes     []*corev1.Node
		releasing string // a node whose cpu is held by a pod being deleted
		want      string
	}{
		{name: "highest total wins", scores: map[string]float64{"n0": 10, "n1": 30, "n2": 20}, nodes: nodes(3, free), want: "n1"},
		{name: "a tie goes to the first name", scores: map[string]float64{"n0": 10, "n1": 50, "n2": 50}, nodes: nodes(3, free), want: "n1"},
		{
			name:   "room now beats a higher score with room only once released",
			scores: map[string]float64{"n0": 10, "n1": 90, "n2": 20}, nodes: nodes(3, free), releasing: "n1", want: "n2",
		},
		{
			// 6 nodes, 50%, at least 2: the search stops after 3 feasible nodes and never sees
			// n5's better score.
			name:   "the search stops after enough feasible nodes",
			scores: map[string]float64{"n0": 1, "n1": 2, "n2": 3, "n3": 4, "n4": 5, "n5": 100},
			opts:   &Options{MinimumFeasibleNodes: 2, PercentageNodesToFind: 50},
			nodes:  nodes(6, free), want: "n2",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			groups := []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 1)}
			pods := []*corev1.Pod{buildPod("p1", "pg1", st.Resources("1", "1Gi"))}
			if c.releasing != "" {
				groups = append(groups, buildPodGroup("old", "q1", 1, running, 0))
				pods = append(pods, buildPod("leaving", "old", st.Resources("4", "1Gi"), runningOn(c.releasing, true)))
			}
			tc := allocateCase{
				queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
				podGroups: groups,
				pods:      pods,
				nodes:     c.nodes,
				hooks:     scoreBy(c.scores),
				opts:      c.opts,
				wantBinds: map[string]string{"c1/p1": c.want},
			}
			ssn, cache := runAllocate(t, tc)
			checkCase(t, tc, ssn, cache)
		})
	}
}

// A batch scorer is given the feasible nodes together (the room-now ones only) and adds to
// the per-node scores: here it rescales over them, as kube-scheduler's normalized scores do.
func TestBatchScoring(t *testing.T) {
	var seen []string
	tc := allocateCase{
		queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
		pods:      []*corev1.Pod{buildPod("p1", "pg1", st.Resources("1", "1Gi"))},
		nodes:     nodes(3, st.Resources("4", "8Gi", "pods", "10")),
		hooks: func(ssn *framework.Session) {
			scoreBy(map[string]float64{"n0": 30, "n1": 10, "n2": 0})(ssn)
			ssn.AddBatchNodeOrderFn("hooks", func(_ *api.TaskInfo, nodes []*api.NodeInfo, scores []float64) {
				for i, n := range nodes {
					seen = append(seen, n.Name)
					scores[i] += map[string]float64{"n0": 0, "n1": 25, "n2": 50}[n.Name]
				}
			})
		},
		wantBinds: map[string]string{"c1/p1": "n2"},
	}
	ssn, cache := runAllocate(t, tc)
	checkCase(t, tc, ssn, cache)
	if slices.Sort(seen); !slices.Equal(seen, []string{"n0", "n1", "n2"}) {
		t.Errorf("the batch scorer saw %v, want the 3 nodes once", seen)
	}
}

// A single feasible node is taken without asking the scorers.
func TestSingleFeasibleNodeIsNotScored(t *testing.T) {
	calls := 0
	tc := allocateCase{
		queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
		pods:      []*corev1.Pod{buildPod("p1", "pg1", st.Resources("2", "1Gi"))},
		nodes: []*corev1.Node{
			st.Node("big", st.Resources("4", "8Gi", "pods", "10")).Obj(), st.Node("small", st.Resources("1", "8Gi", "pods", "10")).Obj(),
		},
		hooks: func(ssn *framework.Session) {
			ssn.AddNodeOrderFn("hooks", func(*api.TaskInfo, *api.NodeInfo) (float64, error) { calls++; return 0, nil })
		},
		wantBinds: map[string]string{"c1/p1": "big"},
	}
	ssn, cache := runAllocate(t, tc)
	checkCase(t, tc, ssn, cache)
	if calls != 0 {
		t.Errorf("NodeOrder asked %d times, want 0", calls)
	}
}

// A tie goes to the first name even when the search wrapped around the node list and met
// the later name first.
func TestScoringTieIgnoresSearchOrder(t *testing.T) {
	// 3 nodes with room for one pod each; each search collects 2 feasible nodes. job0 looks
	// at n0, n1 and takes n0. job1 starts at n2, skips the full n0, and ties n2 with n1.
	groups, pods := singles(2, st.Resources("1", "1Gi"))
	tc := allocateCase{
		queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: groups,
		pods:      pods,
		nodes:     nodes(3, st.Resources("1", "8Gi", "pods", "10")),
		hooks:     scoreBy(nil),
		opts:      &Options{MinimumFeasibleNodes: 2, PercentageNodesToFind: 50},
		wantBinds: map[string]string{"c1/job0-p": "n0", "c1/job1-p": "n1"},
	}
	ssn, cache := runAllocate(t, tc)
	checkCase(t, tc, ssn, cache)
}

// A pod nominated to a node (by a preemption) goes there when it still fits, whatever the
// search would have picked.
func TestNominatedNodeFirst(t *testing.T) {
	cases := []struct {
		name, nominated, want string
	}{
		{"nominated node that fits", "n2", "n2"},
		{"nominated node that is gone", "n9", "n0"},
		{"nominated node that is too small", "small", "n0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := allocateCase{
				queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
				podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("pg1", "q1", 1, inqueue, 0)},
				pods: []*corev1.Pod{buildPod("p1", "pg1", st.Resources("2", "1Gi"), func(w *st.PodWrapper) {
					w.Status.NominatedNodeName = c.nominated
				})},
				nodes: append(nodes(3, st.Resources("4", "8Gi", "pods", "10")),
					st.Node("small", st.Resources("1", "8Gi", "pods", "10")).Obj()),
				wantBinds: map[string]string{"c1/p1": c.want},
			}
			ssn, cache := runAllocate(t, tc)
			checkCase(t, tc, ssn, cache)
		})
	}
}

// The search remembers each node's room for a request between searches; a placement on the
// node, and its undo, must make it look again.
func TestSearchSeesPlacementsAndTheirUndo(t *testing.T) {
	request := st.Resources("1", "1Gi")
	cases := []struct {
		name      string
		podGroups []*schedulingv1beta1.PodGroup
		pods      []*corev1.Pod
		wantBinds map[string]string
	}{
		{
			// job1 asks what job0 asked; n0, the better node, is full once job0 is on it.
			name:      "a placement uses up the node",
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("job0", "q1", 1, inqueue, 0), buildPodGroup("job1", "q1", 1, inqueue, 1)},
			pods:      []*corev1.Pod{buildPod("job0-p", "job0", request), buildPod("job1-p", "job1", request)},
			wantBinds: map[string]string{"c1/job0-p": "n0", "c1/job1-p": "n1"},
		},
		{
			// The gang fills both nodes, misses its third pod and is undone: the single job
			// after it finds the nodes free again.
			name:      "an undone placement frees the node",
			podGroups: []*schedulingv1beta1.PodGroup{buildPodGroup("gang", "q1", 3, inqueue, 0), buildPodGroup("single", "q1", 1, inqueue, 1)},
			pods: []*corev1.Pod{buildPod("gang-w-0", "gang", request), buildPod("gang-w-1", "gang", request),
				buildPod("gang-w-2", "gang", request), buildPod("single-p", "single", request)},
			wantBinds: map[string]string{"c1/single-p": "n0"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := allocateCase{
				queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
				podGroups: c.podGroups,
				pods:      c.pods,
				nodes:     nodes(2, st.Resources("1", "8Gi", "pods", "10")),
				hooks:     scoreBy(map[string]float64{"n0": 100, "n1": 1}),
				wantBinds: c.wantBinds,
			}
			ssn, cache := runAllocate(t, tc)
			checkCase(t, tc, ssn, cache)
		})
	}
}

// Every task decision counts in schedule_attempts_total: four pods, three nodes of room for
// three of them.
func TestScheduleAttemptsCounted(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	groups, pods := singles(4, st.Resources("1", "1Gi"))
	tc := allocateCase{
		queues:    []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)},
		podGroups: groups,
		pods:      pods,
		nodes:     nodes(3, st.Resources("1", "8Gi", "pods", "10")),
		metrics:   m,
		wantBinds: map[string]string{"c1/job0-p": "n0", "c1/job1-p": "n1", "c1/job2-p": "n2"},
	}
	ssn, cache := runAllocate(t, tc)
	checkCase(t, tc, ssn, cache)
	want := `
# HELP volcano_schedule_attempts_total Number of attempts to schedule pods, by the result
# TYPE volcano_schedule_attempts_total counter
volcano_schedule_attempts_total{result="error"} 0
volcano_schedule_attempts_total{result="scheduled"} 3
volcano_schedule_attempts_total{result="unschedulable"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_schedule_attempts_total"); err != nil {
		t.Error(err)
	}
}
