package main

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/interpod"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/binpack"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/nodeorder"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// interPodSource is kube-scheduler's inter-pod filters as the binary builds them, over an
// empty fake API server whose namespaces (none) are listed.
func interPodSource(tb testing.TB) *interpod.Source {
	source := interpod.NewSource()
	factory, ctx := frameworktest.StartOn(tb, source)
	source.InterPod(api.InterPodChecks{Affinity: true})
	factory.WaitForCacheSync(ctx.Done())
	return source
}

// gangCycle runs one cycle of the default configuration with binpack (which would put a whole
// gang on one node) over nodes (64 cpu each) and the pods, each PodGroup they name a gang of
// all its pods, in the default queue, in the order the pods first name them; it returns the
// job of PodGroup train.
func gangCycle(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod) (*frameworktest.Cache, *api.JobInfo) {
	t.Helper()
	cfg := conf.DefaultConfiguration()
	cfg.Tiers[1].Plugins = append(cfg.Tiers[1].Plugins, conf.PluginOption{Name: binpack.PluginName, Arguments: conf.Arguments{binpack.Weight: 10}})
	return cycle(t, cfg, nodes, pods)
}

// cycle is gangCycle's cycle under cfg. Pods bound to a node are running there, each its own
// job.
func cycle(t *testing.T, cfg *conf.SchedulerConfiguration, nodes []*corev1.Node, pods []*corev1.Pod) (*frameworktest.Cache, *api.JobInfo) {
	t.Helper()
	var groups []*schedulingv1beta1.PodGroup
	members := map[string]int32{}
	for _, p := range pods {
		g := p.Annotations[schedulingv1beta1.KubeGroupNameAnnotationKey]
		if members[g]++; members[g] == 1 {
			groups = append(groups, st.MakePodGroup().Namespace("ns").Name(g).Created(len(groups)).Obj())
		}
	}
	for _, pg := range groups {
		pg.Spec.MinMember = members[pg.Name]
	}
	cache := &frameworktest.Cache{Snap: frameworktest.Objects{Nodes: nodes,
		Queues:    []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()},
		PodGroups: groups, Pods: pods}.ClusterInfo()}
	registry := newRegistryWith(allocate.DefaultOptions(), sources{devices: deviceshare.NewStaticShared(), interPod: interPodSource(t)})
	ssn := frameworktest.RunActions(t, cache, cfg, registry)
	return cache, ssn.Jobs["ns/train"]
}

func cpuNodes(n int, labels func(i int) map[string]string) []*corev1.Node {
	var nodes []*corev1.Node
	for i := range n {
		w := st.Node(fmt.Sprintf("n%d", i), st.Resources("64", "")).Label(corev1.LabelHostname, fmt.Sprintf("n%d", i))
		for k, v := range labels(i) {
			w.Label(k, v)
		}
		nodes = append(nodes, w.Obj())
	}
	return nodes
}

// An 8-pod gang with required "one per node" anti-affinity, each pod's placement counting for
// the next within the cycle: on 8 nodes it lands on all 8, on 7 nowhere (a gang that does not
// fit whole is undone), its pods' reason in kube-scheduler's words, and its undone placements
// keep no later pod of the cycle away.
func TestGangWithOnePerNodeAntiAffinity(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 8 {
		pods = append(pods, st.Pod(fmt.Sprintf("worker-%d", i), "1", "").Group("train").Label("job", "train").
			Annotation("volcano.sh/task-spec", "worker").
			RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, map[string]string{"job": "train"})).Obj())
	}
	noLabels := func(int) map[string]string { return nil }

	cache, _ := gangCycle(t, cpuNodes(8, noLabels), pods)
	nodes := map[string]bool{}
	for _, node := range cache.Binds() {
		nodes[node] = true
	}
	if len(cache.Bound) != 8 || len(nodes) != 8 {
		t.Errorf("8 nodes: bound %v, want the 8 workers on 8 nodes", cache.Binds())
	}

	for i := range pods {
		pods[i] = pods[i].DeepCopy()
	}
	late := st.Pod("late", "1", "").Group("late").Label("job", "train").
		RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, map[string]string{"job": "train"})).Obj()
	cache, job := gangCycle(t, cpuNodes(7, noLabels), append(pods, late))
	if binds := cache.Binds(); len(binds) != 1 || binds["ns/late"] == "" {
		t.Errorf("7 nodes: bound %v, want only the later pod", binds)
	}
	const want = "0/7 nodes are unavailable: 7 node(s) didn't match pod anti-affinity rules."
	if msg := job.FitError(); !strings.HasSuffix(msg, want) {
		t.Errorf("7 nodes: the gang's reason %q, want it to end %q", msg, want)
	}
}

// A gang of 6 spread over two zones with maxSkew 1, its pods of one task role: each
// placement counts for the next, so it lands 3 and 3, though a node a pod's skew refused takes
// a later one (the predicate error cache does not keep such refusals).
func TestGangSpreadOverZones(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 6 {
		pods = append(pods, st.Pod(fmt.Sprintf("worker-%d", i), "1", "").Group("train").Label("job", "train").
			Annotation("volcano.sh/task-spec", "worker").
			TopologySpread(st.SpreadConstraint(1, corev1.LabelTopologyZone, map[string]string{"job": "train"})).Obj())
	}
	nodes := cpuNodes(4, func(i int) map[string]string {
		return map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("z%d", i/2)}
	})
	cache, _ := gangCycle(t, nodes, pods)
	perZone := map[string]int{}
	for _, node := range cache.Binds() {
		for _, n := range nodes {
			if n.Name == node {
				perZone[n.Labels[corev1.LabelTopologyZone]]++
			}
		}
	}
	if len(cache.Bound) != 6 || perZone["z0"] != 3 || perZone["z1"] != 3 {
		t.Errorf("bound %v (per zone %v), want 3 pods in each zone", cache.Binds(), perZone)
	}
}

// scoreConf is the default configuration with nodeorder's arguments args.
func scoreConf(args conf.Arguments) *conf.SchedulerConfiguration {
	cfg := conf.DefaultConfiguration()
	for i := range cfg.Tiers[1].Plugins {
		if p := &cfg.Tiers[1].Plugins[i]; p.Name == nodeorder.PluginName {
			p.Arguments = args
		}
	}
	return cfg
}

// zoned are 4 nodes, n0 and n1 in zone z0, n2 and n3 in z1.
func zoned() []*corev1.Node {
	return cpuNodes(4, func(i int) map[string]string {
		return map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("z%d", i/2)}
	})
}

// running is a pod running on node, in a PodGroup of its own.
func running(name, cpu, node string, labels map[string]string) *corev1.Pod {
	w := st.Pod(name, cpu, "").Group(name).Node(node).Phase(corev1.PodRunning)
	for k, v := range labels {
		w.Label(k, v)
	}
	return w.Obj()
}

// zoneOf is the zone of the node the pod was bound to.
func zoneOf(t *testing.T, cache *frameworktest.Cache, pod string) string {
	t.Helper()
	node := cache.Binds()["ns/"+pod]
	if node == "" {
		t.Fatalf("%s not bound: %v", pod, cache.Binds())
	}
	return map[string]string{"n0": "z0", "n1": "z0", "n2": "z1", "n3": "z1"}[node]
}

// A worker that prefers its parameter server's zone goes there, though z1's nodes are fuller
// (which leastrequested would avoid); podaffinity.weight 0 turns that off.
func TestPreferredAffinityPicksTheParameterServersZone(t *testing.T) {
	for _, tc := range []struct {
		args conf.Arguments
		want string
	}{{nil, "z1"}, {conf.Arguments{nodeorder.PodAffinityWeight: 0}, "z0"}} {
		pods := []*corev1.Pod{
			running("ps-0", "16", "n2", map[string]string{"role": "ps"}),
			running("other", "16", "n3", nil),
			st.Pod("train", "1", "").Group("train").PreferredPodAffinity(100, st.PodAffinityTerm(corev1.LabelTopologyZone, map[string]string{"role": "ps"})).Obj(),
		}
		cache, _ := cycle(t, scoreConf(tc.args), zoned(), pods)
		if got := zoneOf(t, cache, "train"); got != tc.want {
			t.Errorf("%v: the worker went to %s, want %s", tc.args, got, tc.want)
		}
	}
}

// A ScheduleAnyway spread puts the pod in the zone with fewer of its kind, though that zone's
// nodes are fuller; podtopologyspread.weight 0 turns that off.
func TestScheduleAnywaySpreadPicksTheEmptierZone(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		args conf.Arguments
		want string
	}{{nil, "z1"}, {conf.Arguments{nodeorder.PodTopologySpreadWeight: 0}, "z0"}} {
		pods := []*corev1.Pod{
			running("web-0", "1", "n0", web), running("web-1", "1", "n0", web),
			running("fill-2", "8", "n2", nil), running("fill-3", "8", "n3", nil),
			st.Pod("train", "1", "").Group("train").Label("app", "web").TopologySpread(st.SoftSpreadConstraint(1, corev1.LabelTopologyZone, web)).Obj(),
		}
		cache, _ := cycle(t, scoreConf(tc.args), zoned(), pods)
		if got := zoneOf(t, cache, "train"); got != tc.want {
			t.Errorf("%v: the pod went to %s, want %s", tc.args, got, tc.want)
		}
	}
}

// A gang whose pods prefer each other's zone lands in one zone: each placement counts for the
// next pod's score. leastrequested alone spreads it over the 4 nodes.
func TestGangPreferringItsOwnZone(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, st.Pod(fmt.Sprintf("worker-%d", i), "8", "").Group("train").Label("job", "train").
			PreferredPodAffinity(100, st.PodAffinityTerm(corev1.LabelTopologyZone, map[string]string{"job": "train"})).Obj())
	}
	for _, tc := range []struct {
		args  conf.Arguments
		zones int
	}{{nil, 1}, {conf.Arguments{nodeorder.PodAffinityWeight: 0}, 2}} {
		cache, _ := cycle(t, scoreConf(tc.args), zoned(), pods)
		zones := map[string]int{}
		for i := range pods {
			zones[zoneOf(t, cache, fmt.Sprintf("worker-%d", i))]++
		}
		if len(zones) != tc.zones {
			t.Errorf("%v: per zone %v, want %d zones", tc.args, zones, tc.zones)
		}
	}
}
