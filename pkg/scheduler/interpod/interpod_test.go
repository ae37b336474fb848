package interpod

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const zone = corev1.LabelTopologyZone

var allChecks = api.InterPodChecks{Affinity: true, Spread: true}

// Kube-scheduler's words.
const (
	antiAffinity         = "node(s) didn't match pod anti-affinity rules"
	existingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
	affinityRules        = "node(s) didn't match pod affinity rules"
	spreadRules          = "node(s) didn't match pod topology spread constraints"
	missingLabel         = spreadRules + " (missing required label)"
)

// node is a node labelled with its hostname and the label pairs given.
func node(name string, labels ...string) *st.NodeWrapper {
	n := st.Node(name, st.Resources("64", "")).Label(corev1.LabelHostname, name)
	for i := 0; i+1 < len(labels); i += 2 {
		n.Label(labels[i], labels[i+1])
	}
	return n
}

// session is the nodes as a session has them, without pods.
func session(nodes ...*st.NodeWrapper) []*api.NodeInfo {
	infos := make([]*api.NodeInfo, len(nodes))
	for i, n := range nodes {
		infos[i] = api.NewNodeInfo(n.Obj())
	}
	return infos
}

// pluginsOn returns one session's plugins that checks switch on, over a fake API server
// holding objs, once the namespaces are listed.
func pluginsOn(t *testing.T, checks api.InterPodChecks, objs ...runtime.Object) *Plugins {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := started(ctx, factory).InterPod(checks)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v not synced", typ)
		}
	}
	return p.(*Plugins)
}

// verdicts are each node's reason for the pod ("" where it fits), after its PreFilter.
func verdicts(t *testing.T, p *Plugins, pod *corev1.Pod, nodes []*api.NodeInfo) []string {
	t.Helper()
	ctx := context.Background()
	s, status := p.PreFilter(ctx, pod, nodes)
	if status != nil {
		t.Fatalf("PreFilter of %s: %+v", pod.Name, status)
	}
	out := make([]string, len(nodes))
	if s == nil {
		return out
	}
	for i, n := range nodes {
		if status := p.Filter(ctx, s, n); status != nil {
			out[i] = status.Reasons[0]
		}
	}
	return out
}

// place puts the pod on the first node that takes it, as a session places a task (telling
// the plugins), and returns that node (nil: none takes it, each node's reason in why).
func place(t *testing.T, p *Plugins, pod *corev1.Pod, nodes []*api.NodeInfo) (placed *api.NodeInfo, why []string) {
	t.Helper()
	why = verdicts(t, p, pod, nodes)
	for i, reason := range why {
		if reason == "" {
			nodes[i].AddTask(api.NewTaskInfo(pod))
			p.NodeChanged(nodes[i])
			return nodes[i], nil
		}
	}
	return nil, why
}

// worker is pod i of an 8-pod training gang that wants one pod per node.
func worker(i int) *corev1.Pod {
	return st.Pod(fmt.Sprintf("worker-%d", i), "1", "").Group("train").Label("job", "train").
		RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, map[string]string{"job": "train"})).Obj()
}

// An 8-pod gang with "one per node" anti-affinity lands on 8 nodes, each pod's placement
// counting for the next; on 7 nodes its last pod fits nowhere, in kube-scheduler's words, and
// once the gang's placements are undone they count for nothing.
func TestOnePerNodeAntiAffinity(t *testing.T) {
	for _, n := range []int{8, 7} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			p := pluginsOn(t, allChecks)
			var wrappers []*st.NodeWrapper
			for i := range n {
				wrappers = append(wrappers, node(fmt.Sprintf("n%d", i)))
			}
			nodes := session(wrappers...)
			used := map[*api.NodeInfo]bool{}
			for i := range 8 {
				placed, why := place(t, p, worker(i), nodes)
				switch {
				case placed == nil && (n == 8 || i < 7):
					t.Fatalf("worker %d fits nowhere: %q", i, why)
				case placed == nil:
					for j, reason := range why {
						if reason != antiAffinity {
							t.Errorf("worker 7 on %s: %q, want %q", nodes[j].Name, reason, antiAffinity)
						}
					}
				case used[placed]:
					t.Fatalf("worker %d placed on %s beside another", i, placed.Name)
				}
				used[placed] = true
			}
			for _, node := range nodes {
				for _, task := range node.Tasks {
					node.RemoveTask(task)
				}
				p.NodeChanged(node)
			}
			for j, reason := range verdicts(t, p, worker(7), nodes) {
				if reason != "" {
					t.Errorf("after the gang is undone, %s: %q, want it to fit", nodes[j].Name, reason)
				}
			}
		})
	}
}

// A pod already placed whose anti-affinity selects the newcomer's labels keeps the newcomer,
// which has no constraint of its own, out of its zone; namespaceSelector reads the namespaces'
// labels. A pod its terms do not select is not looked at.
func TestExistingAntiAffinityRepels(t *testing.T) {
	guard := st.Pod("guard", "1", "").Label("app", "guard").
		RequiredPodAntiAffinity(st.PodAffinityTerm(zone, map[string]string{"app": "web"})).Obj()
	shared := st.PodAffinityTerm(zone, map[string]string{"app": "web"})
	shared.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}}
	sharedGuard := st.Pod("shared-guard", "1", "").RequiredPodAntiAffinity(shared).Obj()
	namespaces := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml", Labels: map[string]string{"team": "ml"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
	}
	for _, tc := range []struct {
		name     string
		existing *corev1.Pod
		pod      *corev1.Pod
		want     []string
	}{
		{"selected", guard, st.Pod("web", "1", "").Label("app", "web").Obj(), []string{existingAntiAffinity, existingAntiAffinity, ""}},
		{"not selected", guard, st.Pod("db", "1", "").Label("app", "db").Obj(), []string{"", "", ""}},
		{"namespace selected", sharedGuard, st.Pod("web", "1", "").Namespace("ml").Label("app", "web").Obj(), []string{existingAntiAffinity, existingAntiAffinity, ""}},
		{"namespace not selected", sharedGuard, st.Pod("web", "1", "").Namespace("web").Label("app", "web").Obj(), []string{"", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pluginsOn(t, allChecks, namespaces...)
			nodes := session(node("a", zone, "z1"), node("b", zone, "z1"), node("c", zone, "z2"))
			nodes[0].AddTask(api.NewTaskInfo(tc.existing))
			if got := verdicts(t, p, tc.pod, nodes); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("verdicts %q, want %q", got, tc.want)
			}
			if s, _ := p.PreFilter(context.Background(), tc.pod, nodes); (s == nil) != (tc.want[0] == "") {
				t.Errorf("PreFilter state %v: want one only where the pod is repelled", s)
			}
		})
	}
}

// An eviction lifts what the victim's presence refused, in both directions (the pod's
// anti-affinity selects the victim; the victim's selects the pod): at once in the counts of
// the attempt under way (RemovePod), and in every count made after it; its undo (AddPod)
// refuses the node again, in both. Only the victim's zone is freed.
func TestEvictionLiftsAntiAffinity(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name        string
		victim, pod *corev1.Pod
		reason      string
	}{
		{"the pod's", st.Pod("victim", "1", "").Label("app", "web").Obj(),
			st.Pod("pod", "1", "").RequiredPodAntiAffinity(st.PodAffinityTerm(zone, web)).Obj(), antiAffinity},
		{"the victim's", st.Pod("victim", "1", "").RequiredPodAntiAffinity(st.PodAffinityTerm(zone, web)).Obj(),
			st.Pod("pod", "1", "").Label("app", "web").Obj(), existingAntiAffinity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := pluginsOn(t, allChecks)
			nodes := session(node("a", zone, "z1"), node("b", zone, "z2"))
			nodes[0].AddTask(api.NewTaskInfo(tc.victim))
			// A second such pod in z2, which no eviction touches.
			other := tc.victim.DeepCopy()
			other.Name, other.UID = "other", "uid-other"
			nodes[1].AddTask(api.NewTaskInfo(other))
			s, status := p.PreFilter(ctx, tc.pod, nodes)
			if status != nil || s == nil {
				t.Fatalf("PreFilter: %v, %+v", s, status)
			}
			filter := func() []string {
				out := make([]string, len(nodes))
				for i, n := range nodes {
					if status := p.Filter(ctx, s, n); status != nil {
						out[i] = status.Reasons[0]
					}
				}
				return out
			}
			refused := []string{tc.reason, tc.reason}
			if got := filter(); fmt.Sprint(got) != fmt.Sprint(refused) {
				t.Fatalf("before the eviction: %q, want %q", got, refused)
			}
			if status := p.Evicted(ctx, s, tc.victim, nodes[0]); status != nil {
				t.Fatal(status)
			}
			freed := []string{"", tc.reason}
			if got := filter(); fmt.Sprint(got) != fmt.Sprint(freed) {
				t.Errorf("evicted, the attempt under way: %q, want %q", got, freed)
			}
			if got := verdicts(t, p, tc.pod, nodes); fmt.Sprint(got) != fmt.Sprint(freed) {
				t.Errorf("evicted, a later count: %q, want %q", got, freed)
			}
			if status := p.Unevicted(ctx, s, tc.victim, nodes[0]); status != nil {
				t.Fatal(status)
			}
			if got := filter(); fmt.Sprint(got) != fmt.Sprint(refused) {
				t.Errorf("eviction undone, the attempt under way: %q, want %q", got, refused)
			}
			if got := verdicts(t, p, tc.pod, nodes); fmt.Sprint(got) != fmt.Sprint(refused) {
				t.Errorf("eviction undone, a later count: %q, want %q", got, refused)
			}
		})
	}
}

// A pod whose required affinity selects a pod in one zone fits only there; the first of a
// group that selects itself fits anywhere.
func TestRequiredAffinity(t *testing.T) {
	p := pluginsOn(t, allChecks)
	nodes := session(node("a", zone, "z1"), node("b", zone, "z2"), node("c"))
	nodes[0].AddTask(api.NewTaskInfo(st.Pod("db", "1", "").Label("app", "db").Obj()))
	nearDB := st.Pod("cache", "1", "").RequiredPodAffinity(st.PodAffinityTerm(zone, map[string]string{"app": "db"})).Obj()
	if got, want := verdicts(t, p, nearDB, nodes), []string{"", affinityRules, affinityRules}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("near the db: %q, want %q", got, want)
	}
	first := st.Pod("ps-0", "1", "").Label("app", "ps").RequiredPodAffinity(st.PodAffinityTerm(zone, map[string]string{"app": "ps"})).Obj()
	if got, want := verdicts(t, p, first, nodes), []string{"", "", affinityRules}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first of its group: %q, want %q (the node without a zone refused)", got, want)
	}
}

// web is pod i of a deployment spread over zones with skew 1.
func web(i int, c corev1.TopologySpreadConstraint) *corev1.Pod {
	return st.Pod(fmt.Sprintf("web-%d", i), "1", "").Label("app", "web").TopologySpread(c).Obj()
}

// Pods spread over two zones with maxSkew 1 keep the zones within one pod of each other as
// they are added: the fuller zone refuses the next pod, in kube-scheduler's words, and a node
// without the zone label refuses every one.
func TestZoneSpreadSkewOne(t *testing.T) {
	p := pluginsOn(t, allChecks)
	nodes := session(node("a1", zone, "z1"), node("a2", zone, "z1"), node("b1", zone, "z2"), node("b2", zone, "z2"), node("bare"))
	c := st.SpreadConstraint(1, zone, map[string]string{"app": "web"})
	perZone := map[string]int{}
	for i := range 7 {
		why := verdicts(t, p, web(i, c), nodes)
		if why[4] != missingLabel {
			t.Errorf("pod %d on the node without a zone: %q, want %q", i, why[4], missingLabel)
		}
		if i%2 == 1 {
			// z1 is a pod ahead: its nodes refuse.
			if why[0] != spreadRules || why[1] != spreadRules {
				t.Errorf("pod %d in the fuller zone: %q, want %q", i, why[:2], spreadRules)
			}
		}
		placed, _ := place(t, p, web(i, c), nodes)
		if placed == nil {
			t.Fatalf("pod %d fits nowhere: %q", i, why)
		}
		perZone[placed.Node.Labels[zone]]++
		if d := perZone["z1"] - perZone["z2"]; d < 0 || d > 1 {
			t.Fatalf("after pod %d: %v, skew over 1", i, perZone)
		}
	}
}

// minDomains over the domains there are makes the global minimum 0: with 3 wanted and 2
// zones, each zone takes maxSkew pods. nodeTaintsPolicy Honor leaves a tainted node's zone
// out of the count unless the pod tolerates it; nodeAffinityPolicy Ignore counts the zones
// the pod's node selector rules out.
func TestSpreadPolicies(t *testing.T) {
	taint := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}
	selector := map[string]string{"app": "web"}
	minDomains := st.SpreadConstraint(1, zone, selector)
	minDomains.MinDomains = ptr.To[int32](3)
	honorTaints := st.SpreadConstraint(1, zone, selector)
	honorTaints.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
	ignoreAffinity := st.SpreadConstraint(1, zone, selector)
	ignoreAffinity.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
	for _, tc := range []struct {
		name  string
		nodes []*st.NodeWrapper
		// placed is the pods already placed, by node index.
		placed []int
		pod    *corev1.Pod
		want   []string
	}{
		{"minDomains unmet", []*st.NodeWrapper{node("a", zone, "z1"), node("b", zone, "z2")}, []int{0},
			web(9, minDomains), []string{spreadRules, ""}},
		{"minDomains unmet, each zone full", []*st.NodeWrapper{node("a", zone, "z1"), node("b", zone, "z2")}, []int{0, 1},
			web(9, minDomains), []string{spreadRules, spreadRules}},
		{"without minDomains", []*st.NodeWrapper{node("a", zone, "z1"), node("b", zone, "z2")}, []int{0, 1},
			web(9, st.SpreadConstraint(1, zone, selector)), []string{"", ""}},
		{"tainted zone not counted", []*st.NodeWrapper{node("a", zone, "z1"), node("b", zone, "z2").Taints(taint)}, []int{0},
			web(9, honorTaints), []string{"", ""}},
		{"tainted zone counted", []*st.NodeWrapper{node("a", zone, "z1"), node("b", zone, "z2").Taints(taint)}, []int{0},
			web(9, st.SpreadConstraint(1, zone, selector)), []string{spreadRules, ""}},
		{"zone outside the node selector not counted", []*st.NodeWrapper{node("a", zone, "z1", "pool", "gpu"), node("b", zone, "z2")}, []int{0},
			st.Pod("web-9", "1", "").Label("app", "web").NodeSelector(map[string]string{"pool": "gpu"}).TopologySpread(st.SpreadConstraint(1, zone, selector)).Obj(),
			[]string{"", ""}},
		{"zone outside the node selector counted", []*st.NodeWrapper{node("a", zone, "z1", "pool", "gpu"), node("b", zone, "z2")}, []int{0},
			st.Pod("web-9", "1", "").Label("app", "web").NodeSelector(map[string]string{"pool": "gpu"}).TopologySpread(ignoreAffinity).Obj(),
			[]string{spreadRules, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pluginsOn(t, allChecks)
			nodes := session(tc.nodes...)
			for i, n := range tc.placed {
				nodes[n].AddTask(api.NewTaskInfo(web(i, st.SpreadConstraint(1, zone, selector))))
			}
			if got := verdicts(t, p, tc.pod, nodes); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("verdicts %q, want %q", got, tc.want)
			}
		})
	}
}

// Each switch turns on its own plugin only: with spread alone, anti-affinity is not decided,
// and with affinity alone, spread is not.
func TestEachSwitchItsPlugin(t *testing.T) {
	nodes := func() []*api.NodeInfo {
		nodes := session(node("a", zone, "z1"), node("b", zone, "z2"))
		nodes[0].AddTask(api.NewTaskInfo(worker(0)))
		nodes[0].AddTask(api.NewTaskInfo(web(0, st.SpreadConstraint(1, zone, map[string]string{"app": "web"}))))
		return nodes
	}
	pod := st.Pod("both", "1", "").Label("job", "train").Label("app", "web").
		TopologySpread(st.SpreadConstraint(1, zone, map[string]string{"app": "web"})).Obj()
	for _, tc := range []struct {
		checks api.InterPodChecks
		onA    string
	}{
		{allChecks, spreadRules},
		{api.InterPodChecks{Spread: true}, spreadRules},
		{api.InterPodChecks{Affinity: true}, existingAntiAffinity},
	} {
		if got := verdicts(t, pluginsOn(t, tc.checks), pod, nodes())[0]; got != tc.onA {
			t.Errorf("%+v: node a %q, want %q", tc.checks, got, tc.onA)
		}
	}
	// Without spread the pod's constraint is not read: only the worker's anti-affinity is.
	if got := verdicts(t, pluginsOn(t, api.InterPodChecks{Spread: true}), worker(1), nodes()); got[0] != "" {
		t.Errorf("spread alone, a second worker on node a: %q, want it to fit", got[0])
	}
}

// With both switches off nothing is built and nothing listed; with spread alone the
// namespaces are not listed either.
func TestNoAffinityListsNoNamespace(t *testing.T) {
	for _, checks := range []api.InterPodChecks{{}, {Spread: true}} {
		client := fake.NewClientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		ctx, cancel := context.WithCancel(context.Background())
		p := started(ctx, factory).InterPod(checks)
		if (p == nil) != !checks.Any() {
			t.Errorf("%+v: plugins %v", checks, p)
		}
		factory.WaitForCacheSync(ctx.Done())
		if a := client.Actions(); len(a) != 0 {
			t.Errorf("%+v: API calls %v, want none", checks, a)
		}
		cancel()
	}
}

// Until the namespaces are listed (here they never are), a pod that reaches the plugins waits,
// saying so.
func TestWaitsForTheNamespaces(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := started(ctx, informers.NewSharedInformerFactory(client, 0)).InterPod(allChecks)
	if _, s := p.PreFilter(ctx, worker(0), session(node("a"))); s == nil || s.Reasons[0] != ErrNotSynced {
		t.Errorf("status %+v, want %q", s, ErrNotSynced)
	}
}

// started is a source started on factory, as the scheduler starts its components.
func started(ctx context.Context, factory informers.SharedInformerFactory) *Source {
	s := NewSource()
	s.Start(ctx, &frameworktest.ComponentCache{Factory: factory})
	return s
}
