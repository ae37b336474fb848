package predicates

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// podOpt and nodeOpt shape the test objects.
type (
	podOpt  func(*st.PodWrapper)
	nodeOpt func(*st.NodeWrapper)
)

func newPod(name string, opts ...podOpt) *corev1.Pod {
	w := st.MakePod().Namespace("ns").UID("uid-" + name).Name(name).Group("pg").Container(st.Resources("1", ""))
	for _, o := range opts {
		o(w)
	}
	return w.Obj()
}

func withNodeSelector(kv ...string) podOpt {
	return func(w *st.PodWrapper) {
		sel := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			sel[kv[i]] = kv[i+1]
		}
		w.NodeSelector(sel)
	}
}

func withRequiredAffinity(terms ...corev1.NodeSelectorTerm) podOpt {
	return func(w *st.PodWrapper) { w.RequiredNodeAffinity(terms...) }
}

func withTolerations(t ...corev1.Toleration) podOpt {
	return func(w *st.PodWrapper) { w.Tolerations(t...) }
}

// withHostPort adds a container port; ip may be "" (every address), proto "" (TCP).
func withHostPort(port int32, proto corev1.Protocol, ip string) podOpt {
	return func(w *st.PodWrapper) {
		c := &w.Spec.Containers[0]
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: port, Protocol: proto, HostIP: ip})
	}
}

func newNode(name string, opts ...nodeOpt) *corev1.Node {
	w := st.MakeNode().Name(name).Label("kubernetes.io/hostname", name).Allocatable(st.Resources("64", "", "pods", "110"))
	for _, o := range opts {
		o(w)
	}
	return w.Obj()
}

func withLabels(kv ...string) nodeOpt {
	return func(w *st.NodeWrapper) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Label(kv[i], kv[i+1])
		}
	}
}

func withTaints(t ...corev1.Taint) nodeOpt { return func(w *st.NodeWrapper) { w.Taints(t...) } }

func cordoned() nodeOpt { return func(w *st.NodeWrapper) { w.Unschedulable() } }

func withPodCapacity(pods string) nodeOpt {
	return func(w *st.NodeWrapper) { w.Status.Allocatable[corev1.ResourcePods] = resource.MustParse(pods) }
}

// nodeInfo builds the node with the given pods already running on it.
func nodeInfo(n *corev1.Node, running ...*corev1.Pod) *api.NodeInfo {
	ni := api.NewNodeInfo(n)
	for _, p := range running {
		p.Spec.NodeName = n.Name
		p.Status.Phase = corev1.PodRunning
		ni.AddTask(api.NewTaskInfo(p))
	}
	return ni
}

func inExpr(key string, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}
}

func mustNew(t testing.TB, args conf.Arguments) *predicatesPlugin {
	t.Helper()
	p, err := New(args)
	if err != nil {
		t.Fatalf("New(%v): %v", args, err)
	}
	return p.(*predicatesPlugin)
}

var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}

func TestPredicate(t *testing.T) {
	cases := []struct {
		name string
		args conf.Arguments
		pod  *corev1.Pod
		node *api.NodeInfo
		// wantReason is "" when the node passes.
		wantReason string
		wantCode   api.StatusCode
	}{
		{name: "plain pod, plain node", pod: newPod("p"), node: nodeInfo(newNode("n"))},

		// pod count
		{name: "pod count reached", pod: newPod("p"),
			node:       nodeInfo(newNode("n", withPodCapacity("2")), newPod("a"), newPod("b")),
			wantReason: "node(s) pod number exceeded", wantCode: api.Unschedulable},
		{name: "pod count below allocatable", pod: newPod("p"),
			node: nodeInfo(newNode("n", withPodCapacity("2")), newPod("a"))},
		{name: "node allows no pods", pod: newPod("p"), node: nodeInfo(newNode("n", withPodCapacity("0"))),
			wantReason: "node(s) pod number exceeded", wantCode: api.Unschedulable},
		{name: "pod count switched off", args: conf.Arguments{PodNumberEnable: false}, pod: newPod("p"),
			node: nodeInfo(newNode("n", withPodCapacity("1")), newPod("a"))},

		// spec.unschedulable
		{name: "cordoned node", pod: newPod("p"), node: nodeInfo(newNode("n", cordoned())),
			wantReason: "node(s) were unschedulable", wantCode: api.UnschedulableAndUnresolvable},
		{name: "cordoned node, pod tolerates unschedulable",
			pod: newPod("p", withTolerations(corev1.Toleration{Key: corev1.TaintNodeUnschedulable,
				Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})),
			node: nodeInfo(newNode("n", cordoned()))},
		{name: "cordoned node, pod tolerates everything",
			pod:  newPod("p", withTolerations(corev1.Toleration{Operator: corev1.TolerationOpExists})),
			node: nodeInfo(newNode("n", cordoned()))},
		{name: "cordoned node, toleration for another effect does not help",
			pod: newPod("p", withTolerations(corev1.Toleration{Key: corev1.TaintNodeUnschedulable,
				Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})),
			node:       nodeInfo(newNode("n", cordoned())),
			wantReason: "node(s) were unschedulable", wantCode: api.UnschedulableAndUnresolvable},
		{name: "unschedulable switched off", args: conf.Arguments{NodeUnschedulableEnable: false},
			pod: newPod("p"), node: nodeInfo(newNode("n", cordoned()))},

		// node selector and required node affinity
		{name: "node selector matches", pod: newPod("p", withNodeSelector("zone", "a")),
			node: nodeInfo(newNode("n", withLabels("zone", "a")))},
		{name: "node selector does not match", pod: newPod("p", withNodeSelector("zone", "a")),
			node:       nodeInfo(newNode("n", withLabels("zone", "b"))),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "required affinity matches one of its terms",
			pod:  newPod("p", withRequiredAffinity(inExpr("zone", "x"), inExpr("gpu", "h200", "a100"))),
			node: nodeInfo(newNode("n", withLabels("gpu", "a100")))},
		{name: "required affinity does not match", pod: newPod("p", withRequiredAffinity(inExpr("gpu", "h200"))),
			node:       nodeInfo(newNode("n", withLabels("gpu", "a100"))),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "selector matches but affinity does not",
			pod:        newPod("p", withNodeSelector("zone", "a"), withRequiredAffinity(inExpr("gpu", "h200"))),
			node:       nodeInfo(newNode("n", withLabels("zone", "a", "gpu", "a100"))),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "affinity on the node name (matchFields)",
			pod: newPod("p", withRequiredAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}})),
			node:       nodeInfo(newNode("n")),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "node affinity switched off", args: conf.Arguments{NodeAffinityEnable: false},
			pod: newPod("p", withNodeSelector("zone", "a")), node: nodeInfo(newNode("n"))},

		// taints
		{name: "untolerated NoSchedule taint", pod: newPod("p"), node: nodeInfo(newNode("n", withTaints(gpuTaint))),
			wantReason: "node(s) had untolerated taint {nvidia.com/gpu: true}", wantCode: api.UnschedulableAndUnresolvable},
		{name: "untolerated NoExecute taint", pod: newPod("p"),
			node:       nodeInfo(newNode("n", withTaints(corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}))),
			wantReason: "node(s) had untolerated taint {maintenance: }", wantCode: api.UnschedulableAndUnresolvable},
		{name: "PreferNoSchedule taint does not filter", pod: newPod("p"),
			node: nodeInfo(newNode("n", withTaints(corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule})))},
		{name: "tolerated taint, Equal",
			pod: newPod("p", withTolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual,
				Value: "true", Effect: corev1.TaintEffectNoSchedule})),
			node: nodeInfo(newNode("n", withTaints(gpuTaint)))},
		{name: "toleration with the wrong value",
			pod: newPod("p", withTolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual,
				Value: "false", Effect: corev1.TaintEffectNoSchedule})),
			node:       nodeInfo(newNode("n", withTaints(gpuTaint))),
			wantReason: "node(s) had untolerated taint {nvidia.com/gpu: true}", wantCode: api.UnschedulableAndUnresolvable},
		{name: "first untolerated of several taints is named",
			pod: newPod("p", withTolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists})),
			node: nodeInfo(newNode("n", withTaints(gpuTaint,
				corev1.Taint{Key: "team", Value: "ml", Effect: corev1.TaintEffectNoSchedule}))),
			wantReason: "node(s) had untolerated taint {team: ml}", wantCode: api.UnschedulableAndUnresolvable},
		{name: "taints switched off", args: conf.Arguments{TaintTolerationEnable: "false"},
			pod: newPod("p"), node: nodeInfo(newNode("n", withTaints(gpuTaint)))},

		// host ports
		{name: "host port free", pod: newPod("p", withHostPort(8080, "", "")),
			node: nodeInfo(newNode("n"), newPod("a", withHostPort(9090, "", "")))},
		{name: "host port taken", pod: newPod("p", withHostPort(8080, "", "")),
			node:       nodeInfo(newNode("n"), newPod("a", withHostPort(8080, corev1.ProtocolTCP, ""))),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "same port, other protocol", pod: newPod("p", withHostPort(8080, corev1.ProtocolUDP, "")),
			node: nodeInfo(newNode("n"), newPod("a", withHostPort(8080, "", "")))},
		{name: "same port, other address", pod: newPod("p", withHostPort(8080, "", "10.0.0.1")),
			node: nodeInfo(newNode("n"), newPod("a", withHostPort(8080, "", "10.0.0.2")))},
		{name: "same port, same address", pod: newPod("p", withHostPort(8080, "", "10.0.0.1")),
			node:       nodeInfo(newNode("n"), newPod("a", withHostPort(8080, "", "10.0.0.1"))),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "every address wanted, one address taken", pod: newPod("p", withHostPort(8080, "", "0.0.0.0")),
			node:       nodeInfo(newNode("n"), newPod("a", withHostPort(8080, "", "10.0.0.2"))),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "one address wanted, every address taken", pod: newPod("p", withHostPort(8080, "", "10.0.0.1")),
			node:       nodeInfo(newNode("n"), newPod("a", withHostPort(8080, "", ""))),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "port held by a sidecar", pod: newPod("p", withHostPort(8080, "", "")),
			node: nodeInfo(newNode("n"), newPod("a", func(w *st.PodWrapper) {
				always := corev1.ContainerRestartPolicyAlways
				w.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
					Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 8080}}}}
			})),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "host ports switched off", args: conf.Arguments{NodePortsEnable: false},
			pod:  newPod("p", withHostPort(8080, "", "")),
			node: nodeInfo(newNode("n"), newPod("a", withHostPort(8080, "", "")))},

		// order: the first failing check is reported
		{name: "cordoned and tainted: unschedulable reported", pod: newPod("p"),
			node:       nodeInfo(newNode("n", cordoned(), withTaints(gpuTaint))),
			wantReason: "node(s) were unschedulable", wantCode: api.UnschedulableAndUnresolvable},
		{name: "node known only from its pods", pod: newPod("p"), node: api.NewNodeInfo(nil),
			wantReason: "node(s) had unknown conditions", wantCode: api.UnschedulableAndUnresolvable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.args)
			p.nodes = []*api.NodeInfo{tc.node}
			task := api.NewTaskInfo(tc.pod)
			if err := p.prePredicate(task); err != nil {
				t.Fatalf("prePredicate: %v", err)
			}
			got := p.predicate(task, tc.node)
			if tc.wantReason == "" {
				if got.Failed() {
					t.Fatalf("node refused: %+v", got)
				}
				return
			}
			if !got.Failed() {
				t.Fatalf("node passed, want %q", tc.wantReason)
			}
			if len(got.Reasons) != 1 || got.Reasons[0] != tc.wantReason || got.Code != tc.wantCode || got.Plugin != PluginName {
				t.Errorf("got %+v, want code %v reason %q from %s", got, tc.wantCode, tc.wantReason, PluginName)
			}
		})
	}
}

func TestPrePredicateRefusesUnparsableAffinity(t *testing.T) {
	bad := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: "Near", Values: []string{"a"}}}}
	cases := []struct {
		name    string
		args    conf.Arguments
		pod     *corev1.Pod
		wantErr string
	}{
		{name: "valid affinity", pod: newPod("p", withRequiredAffinity(inExpr("zone", "a")))},
		{name: "unknown operator", pod: newPod("p", withRequiredAffinity(bad)),
			wantErr: `pod ns/p: invalid required node affinity: `},
		{name: "unknown operator next to a valid term", pod: newPod("p", withRequiredAffinity(inExpr("zone", "a"), bad)),
			wantErr: `pod ns/p: invalid required node affinity: `},
		{name: "node affinity switched off", args: conf.Arguments{NodeAffinityEnable: false},
			pod: newPod("p", withRequiredAffinity(bad))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, tc.args)
			err := p.prePredicate(api.NewTaskInfo(tc.pod))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want prefix %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewRejectsMalformedArguments(t *testing.T) {
	cases := []struct {
		args    conf.Arguments
		wantKey string
	}{
		{conf.Arguments{NodeAffinityEnable: "sometimes"}, NodeAffinityEnable},
		{conf.Arguments{PodNumberEnable: 3}, PodNumberEnable},
		{conf.Arguments{NodePortsEnable: []interface{}{true}}, NodePortsEnable},
		{conf.Arguments{"predicate.PodAffinityEnable": "maybe"}, "predicate.PodAffinityEnable"},
	}
	for _, tc := range cases {
		t.Run(tc.wantKey, func(t *testing.T) {
			_, err := New(tc.args)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.wantKey)) {
				t.Errorf("New(%v) = %v, want an error naming %q", tc.args, err, tc.wantKey)
			}
		})
	}
	if _, err := New(conf.Arguments{"predicate.PodAffinityEnable": true, TaintTolerationEnable: "false"}); err != nil {
		t.Errorf("well-formed arguments refused: %v", err)
	}
}

// openSession opens a session with this plugin alone over the nodes and one job holding pods.
func openSession(t *testing.T, args conf.Arguments, nodes []*api.NodeInfo, pods ...*corev1.Pod) *framework.Session {
	t.Helper()
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	for _, n := range nodes {
		ci.Nodes[n.Name] = n
		ci.NodeList = append(ci.NodeList, n)
	}
	job := api.NewJobInfo("ns/pg")
	job.SetPodGroup(&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg"}}, "default")
	for _, p := range pods {
		job.AddTask(api.NewTaskInfo(p))
	}
	ci.Jobs[job.UID] = job
	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, New)
	cfg := &conf.SchedulerConfiguration{Actions: "allocate",
		Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName, Arguments: args}}}}}
	return framework.OpenSession(&frameworktest.Cache{Snap: ci}, cfg, reg)
}

// TestHostPortsFollowPlacements: a tentative placement takes its ports on the node for the
// rest of the session, and its undo frees them, whether the port index was built before the
// placement or after it.
func TestHostPortsFollowPlacements(t *testing.T) {
	for _, indexFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("index built before placement: %v", indexFirst), func(t *testing.T) {
			ssn := openSession(t, nil, []*api.NodeInfo{nodeInfo(newNode("n"))},
				newPod("web-0", withHostPort(80, "", "")), newPod("web-1", withHostPort(80, "", "")))
			job, node := ssn.Jobs["ns/pg"], ssn.NodeList[0]
			first, second := job.Tasks["uid-web-0"], job.Tasks["uid-web-1"]
			if indexFirst {
				if s := ssn.Predicate(second, node); s.Failed() {
					t.Fatalf("empty node refused: %+v", s)
				}
			}
			stmt := ssn.NewStatement()
			if err := stmt.Allocate(first, node); err != nil {
				t.Fatal(err)
			}
			if s := ssn.Predicate(second, node); !s.Failed() || s.Reasons[0] != ReasonHostPorts {
				t.Errorf("port taken by a tentative placement: got %+v", s)
			}
			stmt.Discard()
			if s := ssn.Predicate(second, node); s.Failed() {
				t.Errorf("port still taken after Discard: %+v", s)
			}
		})
	}
}

// TestSessionRegistersPrePredicate: the session's PrePredicate reaches this plugin.
func TestSessionRegistersPrePredicate(t *testing.T) {
	bad := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near"}}}
	ssn := openSession(t, nil, []*api.NodeInfo{nodeInfo(newNode("n"))}, newPod("p", withRequiredAffinity(bad)))
	if err := ssn.PrePredicate(ssn.Jobs["ns/pg"].Tasks["uid-p"]); err == nil {
		t.Error("unparsable affinity passed the session's PrePredicate")
	}
}

// TestFactsFollowTheTask: facts memoised for one task are not used for the next.
func TestFactsFollowTheTask(t *testing.T) {
	p := mustNew(t, nil)
	node := nodeInfo(newNode("n", withLabels("zone", "a")))
	match, miss := api.NewTaskInfo(newPod("a", withNodeSelector("zone", "a"))), api.NewTaskInfo(newPod("b", withNodeSelector("zone", "b")))
	for i := 0; i < 3; i++ {
		if s := p.predicate(match, node); s.Failed() {
			t.Fatalf("round %d: matching task refused: %+v", i, s)
		}
		if s := p.predicate(miss, node); !s.Failed() {
			t.Fatalf("round %d: mismatching task passed", i)
		}
	}
}

// TestPredicateConcurrent: predicates for several tasks running in parallel over the same
// nodes (as a parallel feasible-node search does) each get their own task's verdicts.
func TestPredicateConcurrent(t *testing.T) {
	nodes := []*api.NodeInfo{
		nodeInfo(newNode("zone-a", withLabels("zone", "a"))),
		nodeInfo(newNode("tainted", withLabels("zone", "a"), withTaints(gpuTaint))),
		nodeInfo(newNode("port-taken", withLabels("zone", "a")), newPod("web", withHostPort(80, "", ""))),
	}
	p := mustNew(t, nil)
	p.nodes = nodes
	tasks := []struct {
		task *api.TaskInfo
		want []string // reason per node, "" to pass
	}{
		{api.NewTaskInfo(newPod("a", withNodeSelector("zone", "a"))), []string{"", UntoleratedTaintReason(&gpuTaint), ""}},
		{api.NewTaskInfo(newPod("b", withNodeSelector("zone", "b"))), []string{ReasonNodeAffinity, ReasonNodeAffinity, ReasonNodeAffinity}},
		{api.NewTaskInfo(newPod("c", withHostPort(80, "", ""))), []string{"", UntoleratedTaintReason(&gpuTaint), ReasonHostPorts}},
	}
	errs := make(chan string, 8)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				tc := tasks[(g+i)%len(tasks)]
				for n, node := range nodes {
					got := ""
					if s := p.predicate(tc.task, node); s.Failed() {
						got = s.Reasons[0]
					}
					if got != tc.want[n] {
						errs <- fmt.Sprintf("task %s on %s: got %q, want %q", tc.task.Name, node.Name, got, tc.want[n])
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// benchmarkNodes are 1,000 labelled nodes, half of them tainted for GPUs, each running a
// few pods.
func benchmarkNodes() []*api.NodeInfo {
	nodes := make([]*api.NodeInfo, 1000)
	for i := range nodes {
		opts := []nodeOpt{withLabels("zone", fmt.Sprintf("z%d", i%4), "gpu", "h200")}
		if i%2 == 0 {
			opts = append(opts, withTaints(gpuTaint))
		}
		nodes[i] = nodeInfo(newNode(fmt.Sprintf("node-%04d", i), opts...),
			newPod(fmt.Sprintf("a-%d", i)), newPod(fmt.Sprintf("b-%d", i), withHostPort(9100, "", "")))
	}
	return nodes
}

// BenchmarkPredicate is the per-node path: one task against each of 1,000 nodes.
func BenchmarkPredicate(b *testing.B) {
	gpuToleration := withTolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists})
	for _, bc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"plain", newPod("p")},
		{"selector+toleration", newPod("p", withNodeSelector("gpu", "h200"), gpuToleration)},
		{"required-affinity", newPod("p", withRequiredAffinity(inExpr("zone", "z1", "z2")), gpuToleration)},
		{"host-port", newPod("p", withHostPort(8080, "", ""), gpuToleration)},
		{"refused-by-taint", newPod("p", withNodeSelector("gpu", "h200"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			nodes := benchmarkNodes()
			p := mustNew(b, nil)
			p.nodes = nodes
			task := api.NewTaskInfo(bc.pod)
			if err := p.prePredicate(task); err != nil {
				b.Fatal(err)
			}
			for _, n := range nodes { // warm the memoised verdicts and the port index
				p.predicate(task, n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p.predicate(task, nodes[i%len(nodes)])
			}
		})
	}
}
