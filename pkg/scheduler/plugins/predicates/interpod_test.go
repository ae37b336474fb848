package predicates

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// fakeInterPod stands in for kube-scheduler's inter-pod filters (pkg/scheduler/interpod has
// the real ones' tests): it refuses a pod every node that holds a task with required
// anti-affinity, and records what reaches it.
type fakeInterPod struct {
	// asked are the checks each session asked for.
	asked []api.InterPodChecks
	// preFilters are "<pod>: <nodes given>" for each PreFilter; filters counts Filters;
	// changed names the node of each NodeChanged; evictions are "<pod> off <node>: <state>"
	// for each Evicted and "<pod> back on <node>: <state>" for each Unevicted, where state is
	// the pod whose counts were passed ("-" for none).
	preFilters []string
	filters    int
	changed    []string
	evictions  []string
	// refuse, when set, is PreFilter's status for every pod.
	refuse *api.Status
}

const repelled = "fake: node(s) hold a pod with required anti-affinity"

func (f *fakeInterPod) InterPod(c api.InterPodChecks) api.InterPodPlugins {
	f.asked = append(f.asked, c)
	if !c.Any() {
		return nil
	}
	return f
}

func (f *fakeInterPod) PreFilter(_ context.Context, pod *corev1.Pod, nodes []*api.NodeInfo) (api.InterPodState, *api.Status) {
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	f.preFilters = append(f.preFilters, pod.Name+": "+strings.Join(names, ","))
	if f.refuse != nil {
		return nil, f.refuse
	}
	return pod, nil
}

func (f *fakeInterPod) NodeChanged(n *api.NodeInfo) { f.changed = append(f.changed, n.Name) }

func (f *fakeInterPod) Evicted(_ context.Context, s api.InterPodState, pod *corev1.Pod, n *api.NodeInfo) *api.Status {
	f.evictions = append(f.evictions, pod.Name+" off "+n.Name+": "+stateOf(s))
	return nil
}

func (f *fakeInterPod) Unevicted(_ context.Context, s api.InterPodState, pod *corev1.Pod, n *api.NodeInfo) *api.Status {
	f.evictions = append(f.evictions, pod.Name+" back on "+n.Name+": "+stateOf(s))
	return nil
}

// stateOf names the pod whose counts the fake's state is ("-" for none).
func stateOf(s api.InterPodState) string {
	if pod, ok := s.(*corev1.Pod); ok {
		return pod.Name
	}
	return "-"
}

func (f *fakeInterPod) Filter(_ context.Context, _ api.InterPodState, node *api.NodeInfo) *api.Status {
	f.filters++
	for _, t := range node.Tasks {
		if api.HasRequiredAntiAffinity(t.Pod) {
			return &api.Status{Code: api.Unschedulable, Reasons: []string{repelled}, Plugin: "fake"}
		}
	}
	return nil
}

// twoNodes is a session of this plugin, with fake as its inter-pod filters, over nodes a and b
// and job ns/pg of the pods.
func twoNodes(t *testing.T, fake *fakeInterPod, args conf.Arguments, pods ...*corev1.Pod) *framework.Session {
	t.Helper()
	nodes := []*api.NodeInfo{frameworktest.NodeInfo(st.Node("a", st.Resources("64", "")).Obj()),
		frameworktest.NodeInfo(st.Node("b", st.Resources("64", "")).Obj())}
	cache := &frameworktest.Cache{Snap: frameworktest.ClusterOf(nodes, frameworktest.JobOf(st.MakePodGroup().Namespace("ns").Name("pg").Obj(), pods...))}
	return frameworktest.OpenSession(t, cache, "allocate", map[string]framework.PluginBuilder{PluginName: NewBuilder(nil, fake)},
		conf.PluginOption{Name: PluginName, Arguments: args})
}

// reasons are the task's reason on each of the session's nodes ("" where it fits), after its
// pre-predicate.
func reasons(t *testing.T, ssn *framework.Session, task *api.TaskInfo) []string {
	t.Helper()
	if err := ssn.PrePredicate(task); err != nil {
		t.Fatalf("PrePredicate of %s: %v", task.Name, err)
	}
	var out []string
	for _, n := range ssn.NodeList {
		reason := ""
		if s := ssn.Predicate(task, n); s.Failed() {
			reason = s.Reasons[0]
		}
		out = append(out, reason)
	}
	return out
}

func guard(name string) *corev1.Pod {
	return st.Pod(name, "1", "").Group("pg").RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, map[string]string{"app": "web"})).Obj()
}

// A pod without constraints of its own does not reach the filters while no pod with required
// anti-affinity is placed; once one is (a tentative placement), the pod reaches them with that
// pod's node only, and is refused there in their words; once the placement is undone it no
// longer reaches them. The filters hear of the placement and of its undo.
func TestPodWithoutConstraintsReachesThePluginsOnlyNearAntiAffinity(t *testing.T) {
	fake := &fakeInterPod{}
	ssn := twoNodes(t, fake, nil, st.Pod("web", "1", "").Group("pg").Label("app", "web").Obj(), guard("guard"))
	web, g := ssn.Jobs["ns/pg"].Tasks["uid-web"], ssn.Jobs["ns/pg"].Tasks["uid-guard"]

	if got := reasons(t, ssn, web); fmt.Sprint(got) != fmt.Sprint([]string{"", ""}) || len(fake.preFilters) != 0 || fake.filters != 0 {
		t.Fatalf("nothing placed: reasons %q, PreFilters %q, %d Filters; want none", got, fake.preFilters, fake.filters)
	}
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(g, ssn.Nodes["a"]); err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(t, ssn, web), []string{repelled, ""}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("beside the guard: reasons %q, want %q", got, want)
	}
	if want := []string{"web: a"}; !slices.Equal(fake.preFilters, want) {
		t.Errorf("PreFilters %q, want %q (the guard's node only)", fake.preFilters, want)
	}
	stmt.Discard()
	if want := []string{"a", "a"}; !slices.Equal(fake.changed, want) {
		t.Errorf("nodes changed %q, want %q (the placement, its undo)", fake.changed, want)
	}
	fake.preFilters, fake.filters = nil, 0
	if got := reasons(t, ssn, web); fmt.Sprint(got) != fmt.Sprint([]string{"", ""}) || len(fake.preFilters) != 0 || fake.filters != 0 {
		t.Errorf("guard undone: reasons %q, PreFilters %q, %d Filters; want none", got, fake.preFilters, fake.filters)
	}
}

// An eviction, and its undo, reach the filters with the counts of the attempt under way (the
// pod whose pre-predicate ran last), which they change at once: the preemptor that the victim
// kept away may take its node. Placements only change the node.
func TestEvictionsReachTheAttemptUnderWay(t *testing.T) {
	fake := &fakeInterPod{}
	a := st.Node("a", st.Resources("64", "")).Obj()
	victim := guard("victim")
	victim.Spec.NodeName, victim.Status.Phase = "a", corev1.PodRunning
	pods := []*corev1.Pod{victim, guard("first"), guard("preemptor")}
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{Nodes: []*corev1.Node{a},
		PodGroups: []*schedulingv1beta1.PodGroup{st.MakePodGroup().Namespace("ns").Name("pg").Obj()}, Pods: pods}.ClusterInfo()}
	ssn := frameworktest.OpenSession(t, cache, "allocate", map[string]framework.PluginBuilder{PluginName: NewBuilder(nil, fake)},
		conf.PluginOption{Name: PluginName})
	job := ssn.Jobs["ns/pg"]
	stmt := ssn.NewStatement()
	if err := stmt.Evict(job.Tasks["uid-victim"], "preempt"); err != nil {
		t.Fatal(err)
	}
	reasons(t, ssn, job.Tasks["uid-first"])
	reasons(t, ssn, job.Tasks["uid-preemptor"])
	stmt.Discard()
	if err := stmt.Allocate(job.Tasks["uid-first"], ssn.Nodes["a"]); err != nil {
		t.Fatal(err)
	}
	want := []string{"victim off a: -", "victim back on a: preemptor"}
	if !slices.Equal(fake.evictions, want) {
		t.Errorf("evictions %q, want %q", fake.evictions, want)
	}
	if want := []string{"a"}; !slices.Equal(fake.changed, want) {
		t.Errorf("nodes changed %q, want %q (the placement)", fake.changed, want)
	}
}

// A pod with constraints of its own reaches the filters with every node, whatever is placed.
func TestPodConstraintsReachThePluginsWithEveryNode(t *testing.T) {
	for _, pod := range []*corev1.Pod{
		guard("anti"),
		st.Pod("near", "1", "").Group("pg").RequiredPodAffinity(st.PodAffinityTerm(corev1.LabelHostname, map[string]string{"app": "db"})).Obj(),
		st.Pod("spread", "1", "").Group("pg").TopologySpread(st.SpreadConstraint(1, corev1.LabelTopologyZone, map[string]string{"app": "web"})).Obj(),
	} {
		fake := &fakeInterPod{}
		ssn := twoNodes(t, fake, nil, pod)
		reasons(t, ssn, ssn.Jobs["ns/pg"].Tasks[api.TaskID(pod.UID)])
		if want := []string{pod.Name + ": a,b"}; !slices.Equal(fake.preFilters, want) || fake.filters != 2 {
			t.Errorf("%s: PreFilters %q, %d Filters; want %q and 2", pod.Name, fake.preFilters, fake.filters, want)
		}
	}
	// Preferred terms and ScheduleAnyway constraints only score: such a pod is plain here.
	soft := st.Pod("soft", "1", "").Group("pg").TopologySpread(corev1.TopologySpreadConstraint{MaxSkew: 1,
		TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway}).Obj()
	soft.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
		{Weight: 1, PodAffinityTerm: st.PodAffinityTerm(corev1.LabelHostname, map[string]string{"app": "web"})}}}}
	fake := &fakeInterPod{}
	ssn := twoNodes(t, fake, nil, soft)
	reasons(t, ssn, ssn.Jobs["ns/pg"].Tasks["uid-soft"])
	if len(fake.preFilters) != 0 {
		t.Errorf("preferred terms only: PreFilters %q, want none", fake.preFilters)
	}
}

// The switches say which filters the session asks for; with both off nothing reaches them and
// the node takes the pod, as before they were decided. With pod affinity off, a placed pod's
// anti-affinity keeps no pod away.
func TestInterPodSwitches(t *testing.T) {
	for _, tc := range []struct {
		args conf.Arguments
		want api.InterPodChecks
		// reached: a plain pod beside a placed guard reaches the filters.
		reached bool
	}{
		{nil, api.InterPodChecks{Affinity: true, Spread: true}, true},
		{conf.Arguments{PodTopologySpreadEnable: false}, api.InterPodChecks{Affinity: true}, true},
		{conf.Arguments{PodAffinityEnable: false}, api.InterPodChecks{Spread: true}, false},
		{conf.Arguments{PodAffinityEnable: false, PodTopologySpreadEnable: "false"}, api.InterPodChecks{}, false},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			fake := &fakeInterPod{}
			ssn := twoNodes(t, fake, tc.args, st.Pod("web", "1", "").Group("pg").Label("app", "web").Obj(), guard("guard"))
			if len(fake.asked) == 0 || fake.asked[len(fake.asked)-1] != tc.want {
				t.Fatalf("checks asked %v, want %+v last", fake.asked, tc.want)
			}
			if err := ssn.NewStatement().Allocate(ssn.Jobs["ns/pg"].Tasks["uid-guard"], ssn.Nodes["a"]); err != nil {
				t.Fatal(err)
			}
			got := reasons(t, ssn, ssn.Jobs["ns/pg"].Tasks["uid-web"])
			if reached := len(fake.preFilters) > 0; reached != tc.reached {
				t.Errorf("reached the filters: %v, want %v (PreFilters %q)", reached, tc.reached, fake.preFilters)
			}
			if !tc.reached && fmt.Sprint(got) != fmt.Sprint([]string{"", ""}) {
				t.Errorf("reasons %q, want both nodes to take it", got)
			}
		})
	}
}

// A PreFilter that refuses the pod refuses it on every node, in the filter's words.
func TestInterPodPreFilterRefusal(t *testing.T) {
	fake := &fakeInterPod{refuse: &api.Status{Code: api.Unschedulable, Reasons: []string{"the scheduler has not yet listed the cluster's namespaces"}}}
	ssn := twoNodes(t, fake, nil, guard("anti"))
	err := ssn.PrePredicate(ssn.Jobs["ns/pg"].Tasks["uid-anti"])
	if err == nil || err.Error() != fake.refuse.Reasons[0] {
		t.Errorf("PrePredicate: %v, want %q", err, fake.refuse.Reasons[0])
	}
}
