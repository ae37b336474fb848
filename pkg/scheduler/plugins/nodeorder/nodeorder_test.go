package nodeorder

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

func prefer(weight int32, key, value string) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}
}

func tolerating(key string) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
}

func preferNoSchedule(key string) corev1.Taint {
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectPreferNoSchedule}
}

// onlyWeights sets the given weights and every other weight to 0.
func onlyWeights(kv ...interface{}) conf.Arguments {
	args := conf.Arguments{LeastRequestedWeight: 0, MostRequestedWeight: 0, BalancedResourceWeight: 0,
		NodeAffinityWeight: 0, TaintTolerationWeight: 0, PodAffinityWeight: 0, PodTopologySpreadWeight: 0, ImageLocalityWeight: 0}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return args
}

// builders builds this plugin alone, for sessions.
var builders = map[string]framework.PluginBuilder{PluginName: New}

// onNodes is a cache whose snapshot holds the nodes and job ns/pg of the pod.
func onNodes(pod *corev1.Pod, nodes ...*api.NodeInfo) *frameworktest.Cache {
	return &frameworktest.Cache{Snap: frameworktest.ClusterOf(nodes, frameworktest.JobOf(st.MakePodGroup().Namespace("ns").Name("pg").Obj(), pod))}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestResourceScores: hand-computed scores on a 4-cpu, 8 GiB node.
//
// Node using 1 cpu / 2 GiB, task asking 2 cpu / 2 GiB: cpu 3/4 and memory 4/8 in use, so
// leastrequested (25+50)/2 = 37.5, mostrequested (75+50)/2 = 62.5, balancedresource
// (1 - |0.75-0.5|/2)×100 = 87.5. Task asking 4 cpu instead: cpu 5/4 overflows, so
// leastrequested (0+50)/2 = 25, mostrequested (100+50)/2 = 75, balancedresource with the
// cpu fraction capped at 1: (1 - 0.25)×100 = 75.
func TestResourceScores(t *testing.T) {
	fits := st.Pod("p", "2", "2Gi").Group("pg").Obj()
	overflows := st.Pod("p", "4", "2Gi").Group("pg").Obj()
	cases := []struct {
		name string
		args conf.Arguments
		pod  *corev1.Pod
		want float64
	}{
		{"leastrequested", onlyWeights(LeastRequestedWeight, 1), fits, 37.5},
		{"mostrequested", onlyWeights(MostRequestedWeight, 1), fits, 62.5},
		{"balancedresource", onlyWeights(BalancedResourceWeight, 1), fits, 87.5},
		{"leastrequested x2 + mostrequested", onlyWeights(LeastRequestedWeight, 2, MostRequestedWeight, 1), fits, 137.5},
		{"balancedresource weight written 3.0", onlyWeights(BalancedResourceWeight, 3.0), fits, 262.5},
		{"overflow: leastrequested", onlyWeights(LeastRequestedWeight, 1), overflows, 25},
		{"overflow: mostrequested", onlyWeights(MostRequestedWeight, 1), overflows, 75},
		{"overflow: balancedresource", onlyWeights(BalancedResourceWeight, 1), overflows, 75},
		// Defaults: leastrequested 1, balancedresource 1, nodeaffinity 2 (no preferred
		// terms: 0), tainttoleration 3 (no PreferNoSchedule taint anywhere: 100).
		{"default weights", nil, fits, 37.5 + 87.5 + 0 + 300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := frameworktest.NodeInfo(st.Node("n", st.Resources("4", "8Gi")).Obj(), st.Pod("running-on-n", "1", "2Gi").Obj())
			ssn := frameworktest.OpenSession(t, onNodes(tc.pod, node), "allocate", builders,
				conf.PluginOption{Name: PluginName, Arguments: tc.args})
			task := ssn.Jobs["ns/pg"].Tasks["uid-p"]
			if got := ssn.NodeOrder(task, node); !near(got, tc.want) {
				t.Errorf("score %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNodeAffinityScore: preferred terms of weight 30 (zone=a) and 10 (disk=ssd) give the
// matched share of 40, × 100 × the weight 2.
func TestNodeAffinityScore(t *testing.T) {
	pod := st.Pod("p", "1", "1Gi").Group("pg").PreferredNodeAffinity(prefer(30, "zone", "a"), prefer(10, "disk", "ssd")).Obj()
	cases := []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"zone": "a", "disk": "ssd"}, 200},
		{map[string]string{"zone": "a"}, 150},
		{map[string]string{"disk": "ssd"}, 50},
		{map[string]string{"zone": "b"}, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.labels), func(t *testing.T) {
			node := frameworktest.NodeInfo(st.Node("n", st.Resources("4", "8Gi")).Labels(tc.labels).Obj(), st.Pod("running-on-n", "0", "0").Obj())
			ssn := frameworktest.OpenSession(t, onNodes(pod, node), "allocate", builders,
				conf.PluginOption{Name: PluginName, Arguments: onlyWeights(NodeAffinityWeight, 2)})
			task := ssn.Jobs["ns/pg"].Tasks["uid-p"]
			if got := ssn.NodeOrder(task, node); !near(got, tc.want) {
				t.Errorf("score %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("unparsable preferred terms score 0", func(t *testing.T) {
		bad := corev1.PreferredSchedulingTerm{Weight: 5, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near"}}}}
		node := frameworktest.NodeInfo(st.Node("n", st.Resources("4", "8Gi")).Labels(map[string]string{"zone": "a"}).Obj(), st.Pod("running-on-n", "0", "0").Obj())
		pod := st.Pod("p", "1", "1Gi").Group("pg").PreferredNodeAffinity(prefer(30, "zone", "a"), bad).Obj()
		ssn := frameworktest.OpenSession(t, onNodes(pod, node), "allocate", builders,
			conf.PluginOption{Name: PluginName, Arguments: onlyWeights(NodeAffinityWeight, 2)})
		task := ssn.Jobs["ns/pg"].Tasks["uid-p"]
		if got := ssn.NodeOrder(task, node); got != 0 {
			t.Errorf("score %v, want 0", got)
		}
	})
}

// TestTaintTolerationScore: the worst node carries two PreferNoSchedule taints, so each
// untolerated one costs half the score; NoSchedule taints are the predicate's business.
func TestTaintTolerationScore(t *testing.T) {
	nodes := func() []*api.NodeInfo {
		return []*api.NodeInfo{
			frameworktest.NodeInfo(st.Node("two", st.Resources("4", "8Gi")).Taints(preferNoSchedule("spot"), preferNoSchedule("old")).Obj(),
				st.Pod("running-on-two", "0", "0").Obj()),
			frameworktest.NodeInfo(st.Node("one", st.Resources("4", "8Gi")).
				Taints(preferNoSchedule("spot"), corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}).Obj(), st.Pod("running-on-one", "0", "0").Obj()),
			frameworktest.NodeInfo(st.Node("none", st.Resources("4", "8Gi")).Obj(), st.Pod("running-on-none", "0", "0").Obj()),
		}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]float64
	}{
		{"no tolerations", st.Pod("p", "1", "1Gi").Group("pg").Obj(), map[string]float64{"two": 0, "one": 150, "none": 300}},
		{"tolerates spot", st.Pod("p", "1", "1Gi").Group("pg").Tolerations(tolerating("spot")).Obj(), map[string]float64{"two": 150, "one": 300, "none": 300}},
		{"NoSchedule-only toleration does not count", st.Pod("p", "1", "1Gi").Group("pg").
			Tolerations(corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).Obj(),
			map[string]float64{"two": 0, "one": 150, "none": 300}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := nodes()
			ssn := frameworktest.OpenSession(t, onNodes(tc.pod, ns...), "allocate", builders,
				conf.PluginOption{Name: PluginName, Arguments: onlyWeights(TaintTolerationWeight, 3)})
			task := ssn.Jobs["ns/pg"].Tasks["uid-p"]
			for _, n := range ns {
				if got := ssn.NodeOrder(task, n); !near(got, tc.want[n.Name]) {
					t.Errorf("node %s: score %v, want %v", n.Name, got, tc.want[n.Name])
				}
			}
		})
	}
}

func TestNewRejectsMalformedWeights(t *testing.T) {
	cases := []struct {
		args    conf.Arguments
		wantKey string
	}{
		{conf.Arguments{LeastRequestedWeight: "heavy"}, LeastRequestedWeight},
		{conf.Arguments{NodeAffinityWeight: 1.5}, NodeAffinityWeight},
		{conf.Arguments{TaintTolerationWeight: -1}, TaintTolerationWeight},
		{conf.Arguments{"podaffinity.weight": true}, "podaffinity.weight"},
	}
	for _, tc := range cases {
		t.Run(tc.wantKey, func(t *testing.T) {
			_, err := New(tc.args)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.wantKey)) {
				t.Errorf("New(%v) = %v, want an error naming %q", tc.args, err, tc.wantKey)
			}
		})
	}
	if _, err := New(conf.Arguments{PodAffinityWeight: 2, ImageLocalityWeight: "1", MostRequestedWeight: 2.0}); err != nil {
		t.Errorf("well-formed weights refused: %v", err)
	}
}

func TestNoScoreWhenEveryWeightIsZero(t *testing.T) {
	pod := st.Pod("p", "1", "1Gi").Group("pg").Obj()
	node := frameworktest.NodeInfo(st.Node("n", st.Resources("4", "8Gi")).Obj(), st.Pod("running-on-n", "0", "0").Obj())
	ssn := frameworktest.OpenSession(t, onNodes(pod, node), "allocate", builders,
		conf.PluginOption{Name: PluginName, Arguments: onlyWeights()})
	if ssn.HasNodeOrder() {
		t.Error("a score function is registered although every weight is 0")
	}
}

// fakeInterPod records the weights the plugin asks its inter-pod scores for, and scores
// nodes by their position.
type fakeInterPod struct{ asked []api.InterPodWeights }

func (f *fakeInterPod) InterPodScores(w api.InterPodWeights) api.InterPodScores {
	f.asked = append(f.asked, w)
	if !w.Any() {
		return nil
	}
	return positions{}
}

type positions struct{}

func (positions) Score(_ context.Context, _ *corev1.Pod, _, candidates []*api.NodeInfo, scores []float64) *api.Status {
	for i := range candidates {
		scores[i] += float64(i)
	}
	return nil
}

func (positions) NodeChanged(*api.NodeInfo) {}

// podaffinity.weight and podtopologyspread.weight (2 each by default, as upstream) are the
// inter-pod scores' weights; their scores are added as a batch, and with every weight 0
// nothing scores.
func TestInterPodWeights(t *testing.T) {
	pod := st.Pod("p", "1", "1Gi").Group("pg").Obj()
	nodes := []*api.NodeInfo{frameworktest.NodeInfo(st.Node("a", st.Resources("4", "8Gi")).Obj()),
		frameworktest.NodeInfo(st.Node("b", st.Resources("4", "8Gi")).Obj())}
	for _, tc := range []struct {
		args      conf.Arguments
		want      api.InterPodWeights
		wantScore bool
	}{
		{nil, api.InterPodWeights{Affinity: 2, Spread: 2}, true},
		{conf.Arguments{PodAffinityWeight: 0, PodTopologySpreadWeight: 5}, api.InterPodWeights{Spread: 5}, true},
		{onlyWeights(), api.InterPodWeights{}, false},
	} {
		source := &fakeInterPod{}
		b := map[string]framework.PluginBuilder{PluginName: NewBuilder(source)}
		ssn := frameworktest.OpenSession(t, onNodes(pod, nodes...), "allocate", b, conf.PluginOption{Name: PluginName, Arguments: tc.args})
		if len(source.asked) == 0 || source.asked[len(source.asked)-1] != tc.want {
			t.Errorf("%v: asked %v, want %+v", tc.args, source.asked, tc.want)
		}
		if ssn.HasNodeOrder() != tc.wantScore {
			t.Fatalf("%v: HasNodeOrder %v, want %v", tc.args, ssn.HasNodeOrder(), tc.wantScore)
		}
		if !tc.wantScore {
			continue
		}
		scores := make([]float64, 2)
		ssn.NodeScores(ssn.Jobs["ns/pg"].Tasks["uid-p"], nodes, scores)
		if d := scores[1] - scores[0]; d != 1 {
			t.Errorf("%v: scores %v, want the batch's 1 between them", tc.args, scores)
		}
	}
}

// BenchmarkScore is the per-node path with the default weights, for a pod with preferred
// node affinity and a toleration, over 1,000 nodes of which half carry a PreferNoSchedule
// taint.
func BenchmarkScore(b *testing.B) {
	nodes := make([]*api.NodeInfo, 1000)
	for i := range nodes {
		var taints []corev1.Taint
		if i%2 == 0 {
			taints = append(taints, preferNoSchedule("spot"))
		}
		name := fmt.Sprintf("node-%04d", i)
		nodes[i] = frameworktest.NodeInfo(st.Node(name, st.Resources("4", "8Gi")).Label("zone", fmt.Sprintf("z%d", i%4)).Taints(taints...).Obj(),
			st.Pod("running-on-"+name, "1", "2Gi").Obj())
	}
	pod := st.Pod("p", "1", "1Gi").Group("pg").PreferredNodeAffinity(prefer(10, "zone", "z1"), prefer(5, "zone", "z2")).Tolerations(tolerating("other")).Obj()
	p, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	ssn := frameworktest.OpenSession(b, onNodes(pod, nodes...), "allocate", builders, conf.PluginOption{Name: PluginName})
	task := ssn.Jobs["ns/pg"].Tasks["uid-p"]
	p.OnSessionOpen(ssn)
	score := p.(*nodeOrderPlugin).score
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := score(task, nodes[i%len(nodes)]); err != nil {
			b.Fatal(err)
		}
	}
}

// imageNode is a node listing the images, each of the size in MiB.
func imageNode(name string, mib int64, images ...string) *api.NodeInfo {
	n := st.Node(name, st.Resources("4", "8Gi")).Obj()
	for _, image := range images {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{image}, SizeBytes: mib << 20})
	}
	return frameworktest.NodeInfo(n)
}

// The node that holds the pod's image scores imagelocality.weight (1 by default) times
// kube-scheduler's ImageLocality; weight 0 turns it off; a node without it scores nothing.
func TestImageLocality(t *testing.T) {
	pod := st.Pod("p", "1", "1Gi").Group("pg").Obj()
	pod.Spec.Containers[0].Image = "registry/train:v1"
	nodes := []*api.NodeInfo{imageNode("with", 500, "registry/train:v1"), imageNode("without", 500, "registry/other:v1"),
		imageNode("bare", 0)}
	for _, tc := range []struct {
		weight any
		want   float64
	}{{nil, 1}, {3, 3}, {0, 0}} {
		args := onlyWeights()
		if tc.weight == nil {
			delete(args, ImageLocalityWeight)
		} else {
			args[ImageLocalityWeight] = tc.weight
		}
		ssn := frameworktest.OpenSession(t, onNodes(pod, nodes...), "allocate", builders, conf.PluginOption{Name: PluginName, Arguments: args})
		task := ssn.Jobs["ns/pg"].Tasks["uid-p"]
		// 500 MiB on 1 of 3 nodes: (500/3 − 23) / (1000 − 23) of 100, rounded down.
		if got, want := ssn.NodeOrder(task, nodes[0]), tc.want*14; got != want {
			t.Errorf("weight %v: the node with the image scores %v, want %v", tc.weight, got, want)
		}
		for _, n := range nodes[1:] {
			if got := ssn.NodeOrder(task, n); got != 0 {
				t.Errorf("weight %v: node %s scores %v, want 0", tc.weight, n.Name, got)
			}
		}
	}
}
