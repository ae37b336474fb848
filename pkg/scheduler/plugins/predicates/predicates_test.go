package predicates

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

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
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name string
		args conf.Arguments
		pod  *corev1.Pod
		node *api.NodeInfo
		// wantReason is "" when the node passes.
		wantReason string
		wantCode   api.StatusCode
	}{
		{name: "plain pod, plain node", pod: st.Pod("p", "1", "").Group("pg").Obj(), node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj())},

		// pod count
		{name: "pod count reached", pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "", "pods", "2")).Obj(),
				st.Pod("a", "1", "").Group("pg").Obj(), st.Pod("b", "1", "").Group("pg").Obj()),
			wantReason: "node(s) pod number exceeded", wantCode: api.Unschedulable},
		{name: "pod count below allocatable", pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "", "pods", "2")).Obj(), st.Pod("a", "1", "").Group("pg").Obj())},
		{name: "node allows no pods", pod: st.Pod("p", "1", "").Group("pg").Obj(), node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "", "pods", "0")).Obj()),
			wantReason: "node(s) pod number exceeded", wantCode: api.Unschedulable},
		{name: "pod count switched off", args: conf.Arguments{PodNumberEnable: false}, pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "", "pods", "1")).Obj(), st.Pod("a", "1", "").Group("pg").Obj())},

		// spec.unschedulable
		{name: "cordoned node", pod: st.Pod("p", "1", "").Group("pg").Obj(), node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Unschedulable().Obj()),
			wantReason: "node(s) were unschedulable", wantCode: api.UnschedulableAndUnresolvable},
		{name: "cordoned node, pod tolerates unschedulable",
			pod: st.Pod("p", "1", "").Group("pg").Tolerations(corev1.Toleration{Key: corev1.TaintNodeUnschedulable,
				Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Unschedulable().Obj())},
		{name: "cordoned node, pod tolerates everything",
			pod:  st.Pod("p", "1", "").Group("pg").Tolerations(corev1.Toleration{Operator: corev1.TolerationOpExists}).Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Unschedulable().Obj())},
		{name: "cordoned node, toleration for another effect does not help",
			pod: st.Pod("p", "1", "").Group("pg").Tolerations(corev1.Toleration{Key: corev1.TaintNodeUnschedulable,
				Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}).Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Unschedulable().Obj()),
			wantReason: "node(s) were unschedulable", wantCode: api.UnschedulableAndUnresolvable},
		{name: "unschedulable switched off", args: conf.Arguments{NodeUnschedulableEnable: false},
			pod: st.Pod("p", "1", "").Group("pg").Obj(), node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Unschedulable().Obj())},

		// node selector and required node affinity
		{name: "node selector matches", pod: st.Pod("p", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "a"}).Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Label("zone", "a").Obj())},
		{name: "node selector does not match", pod: st.Pod("p", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "a"}).Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Label("zone", "b").Obj()),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "required affinity matches one of its terms",
			pod:  st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(inExpr("zone", "x"), inExpr("gpu", "h200", "a100")).Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Label("gpu", "a100").Obj())},
		{name: "required affinity does not match", pod: st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(inExpr("gpu", "h200")).Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Label("gpu", "a100").Obj()),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "selector matches but affinity does not",
			pod:        st.Pod("p", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "a"}).RequiredNodeAffinity(inExpr("gpu", "h200")).Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Label("zone", "a").Label("gpu", "a100").Obj()),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "affinity on the node name (matchFields)",
			pod: st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}}).Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj()),
			wantReason: "node(s) didn't match Pod's node affinity/selector", wantCode: api.UnschedulableAndUnresolvable},
		{name: "node affinity switched off", args: conf.Arguments{NodeAffinityEnable: false},
			pod: st.Pod("p", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "a"}).Obj(), node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj())},

		// taints
		{name: "untolerated NoSchedule taint", pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(gpuTaint).Obj()),
			wantReason: "node(s) had untolerated taint {nvidia.com/gpu: true}", wantCode: api.UnschedulableAndUnresolvable},
		{name: "untolerated NoExecute taint", pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}).Obj()),
			wantReason: "node(s) had untolerated taint {maintenance: }", wantCode: api.UnschedulableAndUnresolvable},
		{name: "PreferNoSchedule taint does not filter", pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}).Obj())},
		{name: "tolerated taint, Equal",
			pod: st.Pod("p", "1", "").Group("pg").Tolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual,
				Value: "true", Effect: corev1.TaintEffectNoSchedule}).Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(gpuTaint).Obj())},
		{name: "toleration with the wrong value",
			pod: st.Pod("p", "1", "").Group("pg").Tolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual,
				Value: "false", Effect: corev1.TaintEffectNoSchedule}).Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(gpuTaint).Obj()),
			wantReason: "node(s) had untolerated taint {nvidia.com/gpu: true}", wantCode: api.UnschedulableAndUnresolvable},
		{name: "first untolerated of several taints is named",
			pod: st.Pod("p", "1", "").Group("pg").Tolerations(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}).Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(gpuTaint,
				corev1.Taint{Key: "team", Value: "ml", Effect: corev1.TaintEffectNoSchedule}).Obj()),
			wantReason: "node(s) had untolerated taint {team: ml}", wantCode: api.UnschedulableAndUnresolvable},
		{name: "taints switched off", args: conf.Arguments{TaintTolerationEnable: "false"},
			pod: st.Pod("p", "1", "").Group("pg").Obj(), node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Taints(gpuTaint).Obj())},

		// host ports
		{name: "host port free", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(9090, "", "").Obj())},
		{name: "host port taken", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, corev1.ProtocolTCP, "").Obj()),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "same port, other protocol", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, corev1.ProtocolUDP, "").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, "", "").Obj())},
		{name: "same port, other address", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "10.0.0.1").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, "", "10.0.0.2").Obj())},
		{name: "same port, same address", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "10.0.0.1").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, "", "10.0.0.1").Obj()),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "every address wanted, one address taken", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "0.0.0.0").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, "", "10.0.0.2").Obj()),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "one address wanted, every address taken", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "10.0.0.1").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, "", "").Obj()),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "port held by a sidecar", pod: st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").
				InitContainers(corev1.Container{Name: "proxy", RestartPolicy: &always,
					Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 8080}}}).Obj()),
			wantReason: "node(s) didn't have free ports for the requested pod ports", wantCode: api.Unschedulable},
		{name: "host ports switched off", args: conf.Arguments{NodePortsEnable: false},
			pod:  st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "").Obj(),
			node: frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj(), st.Pod("a", "1", "").Group("pg").HostPort(8080, "", "").Obj())},

		// order: the first failing check is reported
		{name: "cordoned and tainted: unschedulable reported", pod: st.Pod("p", "1", "").Group("pg").Obj(),
			node:       frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Unschedulable().Taints(gpuTaint).Obj()),
			wantReason: "node(s) were unschedulable", wantCode: api.UnschedulableAndUnresolvable},
		{name: "node known only from its pods", pod: st.Pod("p", "1", "").Group("pg").Obj(), node: api.NewNodeInfo(nil),
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
		{name: "valid affinity", pod: st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(inExpr("zone", "a")).Obj()},
		{name: "unknown operator", pod: st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(bad).Obj(),
			wantErr: `pod ns/p: invalid required node affinity: `},
		{name: "unknown operator next to a valid term", pod: st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(inExpr("zone", "a"), bad).Obj(),
			wantErr: `pod ns/p: invalid required node affinity: `},
		{name: "node affinity switched off", args: conf.Arguments{NodeAffinityEnable: false},
			pod: st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(bad).Obj()},
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

// builders builds this plugin alone, for sessions.
var builders = map[string]framework.PluginBuilder{PluginName: New}

// onOneNode is a cache whose snapshot holds node n (64 cpu) and job ns/pg of the pods.
func onOneNode(pods ...*corev1.Pod) *frameworktest.Cache {
	return &frameworktest.Cache{Snap: frameworktest.ClusterOf([]*api.NodeInfo{frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Obj())},
		frameworktest.JobOf(st.MakePodGroup().Namespace("ns").Name("pg").Obj(), pods...))}
}

// TestHostPortsFollowPlacements: a tentative placement takes its ports on the node for the
// rest of the session, and its undo frees them, whether the port index was built before the
// placement or after it.
func TestHostPortsFollowPlacements(t *testing.T) {
	for _, indexFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("index built before placement: %v", indexFirst), func(t *testing.T) {
			cache := onOneNode(st.Pod("web-0", "1", "").Group("pg").HostPort(80, "", "").Obj(), st.Pod("web-1", "1", "").Group("pg").HostPort(80, "", "").Obj())
			ssn := frameworktest.OpenSession(t, cache, "allocate", builders, conf.PluginOption{Name: PluginName})
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
	cache := onOneNode(st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(bad).Obj())
	ssn := frameworktest.OpenSession(t, cache, "allocate", builders, conf.PluginOption{Name: PluginName})
	if err := ssn.PrePredicate(ssn.Jobs["ns/pg"].Tasks["uid-p"]); err == nil {
		t.Error("unparsable affinity passed the session's PrePredicate")
	}
}

// TestFactsFollowTheTask: facts memoised for one task are not used for the next.
func TestFactsFollowTheTask(t *testing.T) {
	p := mustNew(t, nil)
	node := frameworktest.NodeInfo(st.Node("n", st.Resources("64", "")).Label("zone", "a").Obj())
	match := api.NewTaskInfo(st.Pod("a", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "a"}).Obj())
	miss := api.NewTaskInfo(st.Pod("b", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "b"}).Obj())
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
		frameworktest.NodeInfo(st.Node("zone-a", st.Resources("64", "")).Label("zone", "a").Obj()),
		frameworktest.NodeInfo(st.Node("tainted", st.Resources("64", "")).Label("zone", "a").Taints(gpuTaint).Obj()),
		frameworktest.NodeInfo(st.Node("port-taken", st.Resources("64", "")).Label("zone", "a").Obj(), st.Pod("web", "1", "").Group("pg").HostPort(80, "", "").Obj()),
	}
	p := mustNew(t, nil)
	p.nodes = nodes
	tasks := []struct {
		task *api.TaskInfo
		want []string // reason per node, "" to pass
	}{
		{api.NewTaskInfo(st.Pod("a", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "a"}).Obj()), []string{"", UntoleratedTaintReason(&gpuTaint), ""}},
		{api.NewTaskInfo(st.Pod("b", "1", "").Group("pg").NodeSelector(map[string]string{"zone": "b"}).Obj()), []string{ReasonNodeAffinity, ReasonNodeAffinity, ReasonNodeAffinity}},
		{api.NewTaskInfo(st.Pod("c", "1", "").Group("pg").HostPort(80, "", "").Obj()), []string{"", UntoleratedTaintReason(&gpuTaint), ReasonHostPorts}},
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
		node := st.Node(fmt.Sprintf("node-%04d", i), st.Resources("64", "")).Label("zone", fmt.Sprintf("z%d", i%4)).Label("gpu", "h200")
		if i%2 == 0 {
			node.Taints(gpuTaint)
		}
		nodes[i] = frameworktest.NodeInfo(node.Obj(),
			st.Pod(fmt.Sprintf("a-%d", i), "1", "").Group("pg").Obj(), st.Pod(fmt.Sprintf("b-%d", i), "1", "").Group("pg").HostPort(9100, "", "").Obj())
	}
	return nodes
}

// BenchmarkPredicate is the per-node path: one task against each of 1,000 nodes.
func BenchmarkPredicate(b *testing.B) {
	gpuToleration := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}
	for _, bc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"plain", st.Pod("p", "1", "").Group("pg").Obj()},
		{"selector+toleration", st.Pod("p", "1", "").Group("pg").NodeSelector(map[string]string{"gpu": "h200"}).Tolerations(gpuToleration).Obj()},
		{"required-affinity", st.Pod("p", "1", "").Group("pg").RequiredNodeAffinity(inExpr("zone", "z1", "z2")).Tolerations(gpuToleration).Obj()},
		{"host-port", st.Pod("p", "1", "").Group("pg").HostPort(8080, "", "").Tolerations(gpuToleration).Obj()},
		{"refused-by-taint", st.Pod("p", "1", "").Group("pg").NodeSelector(map[string]string{"gpu": "h200"}).Obj()},
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

// timeoutSource is a VolumeSource that keeps the bind timeout it is asked for and builds
// nothing.
type timeoutSource struct{ asked []time.Duration }

func (s *timeoutSource) Volumes(_ api.VolumeChecks, bindTimeout time.Duration) (api.VolumePlugins, error) {
	s.asked = append(s.asked, bindTimeout)
	return nil, nil
}

// volumebinding.bindTimeoutSeconds, upstream's key, is how long VolumeBinding waits for the PV
// controller: 600 seconds unless set, a whole number of seconds from 0 (no wait); anything
// else is refused naming the key.
func TestBindTimeoutSeconds(t *testing.T) {
	for _, tc := range []struct {
		value   interface{}
		want    time.Duration
		wantErr string
	}{
		{value: nil, want: 600 * time.Second},
		{value: 30, want: 30 * time.Second},
		{value: "120", want: 120 * time.Second},
		{value: 0, want: 0},
		{value: -1, wantErr: `argument "volumebinding.bindTimeoutSeconds": -1 seconds: want 0 (no wait for the PV controller) to 9223372036`},
		{value: 9223372037, wantErr: `argument "volumebinding.bindTimeoutSeconds": 9223372037 seconds: want 0 (no wait for the PV controller) to 9223372036`},
		{value: "10m", wantErr: `argument "volumebinding.bindTimeoutSeconds": cannot use 10m (string) as int`},
		{value: 1.5, wantErr: `argument "volumebinding.bindTimeoutSeconds": cannot use 1.5 (float64) as int`},
	} {
		t.Run(fmt.Sprint(tc.value), func(t *testing.T) {
			args := conf.Arguments{}
			if tc.value != nil {
				args[BindTimeoutSeconds] = tc.value
			}
			source := &timeoutSource{}
			_, err := NewBuilder(source, nil)(args)
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case len(source.asked) != 1 || source.asked[0] != tc.want:
				t.Errorf("VolumeBinding asked to wait %v, want %v", source.asked, tc.want)
			}
		})
	}
}
