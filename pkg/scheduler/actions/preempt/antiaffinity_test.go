package preempt_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/interpod"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/binpack"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/conformance"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/drf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/nodeorder"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/overcommit"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/priority"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// The shape of upstream Volcano v1.15.1's e2e spec "should preempt low priority pod with
// anti-affinity constraint" (test/e2e/schedulingaction/preempt.go): on every node (4 cpu,
// 4Gi) one pod of a middle-priority blocker job (one per node by its own anti-affinity) and
// one of a low-priority bystander job (drawn to the blockers, one per node), 1 cpu and 1Gi
// each; then a high-priority gang of nodes-1 pods that each ask what the node has less one
// pod's worth (3 cpu, 3Gi) and have required anti-affinity to the blockers. The spec runs
// upstream's e2e configuration without enqueue.
const antiAffinityConf = `
actions: "allocate, backfill, reclaim, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
`

// Priorities of the spec's PriorityClasses.
const (
	lowPriority    = 10
	middlePriority = 50
	highPriority   = 100
)

var (
	blockerLabels   = map[string]string{"app": "blocker"}
	bystanderLabels = map[string]string{"app": "bystander"}
	preemptorLabels = map[string]string{"app": "preemptor"}
	// onePod is what each blocker and bystander pod asks; preemptorPod what each pod of the
	// high-priority job asks.
	onePod       = st.Resources("1", "1Gi")
	preemptorPod = st.Resources("3", "3Gi")
)

// antiAffinityShape builds the spec's objects over nodes (labelled with their hostname).
type antiAffinityShape struct {
	nodes []*corev1.Node
	// vipBlockers: the first vipBlockers nodes' blockers are of a job of priority 200, above
	// the preemptor's, not of the middle-priority blocker job.
	vipBlockers int
	// blockersRepel: the blockers' anti-affinity selects the preemptors too, and the
	// preemptors have none of their own.
	blockersRepel bool
	// preemptor, when set, changes each pod of the high-priority job.
	preemptor func(*st.PodWrapper)
}

// job adds a PodGroup of the given priority and minMember with minResources as Volcano's job
// controller sets them (minMember pods' requests), and its pods: one running on each node of
// on, then pending ones. Every pod has the volcano.sh/preemptable: "true" label of the spec's
// jobs.
func job(o *frameworktest.Objects, name string, prio int32, minMember int, on []*corev1.Node, pending int,
	asks corev1.ResourceList, pod func(*st.PodWrapper)) {
	phase := schedulingv1beta1.PodGroupPending
	if len(on) > 0 {
		phase = schedulingv1beta1.PodGroupRunning
	}
	min := corev1.ResourceList{}
	for r, q := range asks {
		q.Mul(int64(minMember))
		min[r] = q
	}
	o.PodGroups = append(o.PodGroups, st.MakePodGroup().Namespace("ns").Name(name).Queue("default").
		MinMember(int32(minMember)).MinResources(min).Phase(phase).Obj())
	for i := range len(on) + pending {
		w := st.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%d", name, i)).Group(name).Priority(prio).
			Label(schedulingv1beta1.PodPreemptable, "true").
			Containers(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: asks, Limits: asks}})
		if i < len(on) {
			w.Node(on[i].Name).Phase(corev1.PodRunning)
		} else {
			w.Phase(corev1.PodPending)
		}
		pod(w)
		o.Pods = append(o.Pods, w.Obj())
	}
}

// cluster is the snapshot of the spec's objects, each job with its PodGroup's priority as the
// cache resolves it.
func (s antiAffinityShape) cluster() *api.ClusterInfo {
	o := frameworktest.Objects{Nodes: s.nodes, Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()}}
	n := len(s.nodes)
	blocker := func(w *st.PodWrapper) {
		w.Label("app", "blocker").RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, blockerLabels))
		if s.blockersRepel {
			w.RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, preemptorLabels))
		}
	}
	priorities := map[string]int32{"vip-blocker-job": 200, "blocker-job": middlePriority, "bystander-job": lowPriority, "high-priority-job": highPriority}
	if s.vipBlockers > 0 {
		job(&o, "vip-blocker-job", priorities["vip-blocker-job"], 1, s.nodes[:s.vipBlockers], 0, onePod, blocker)
	}
	if s.vipBlockers < n {
		job(&o, "blocker-job", middlePriority, 1, s.nodes[s.vipBlockers:], 0, onePod, blocker)
	}
	job(&o, "bystander-job", lowPriority, 1, s.nodes, 0, onePod, func(w *st.PodWrapper) {
		w.Label("app", "bystander").RequiredPodAffinity(st.PodAffinityTerm(corev1.LabelHostname, blockerLabels)).
			RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, bystanderLabels))
	})
	job(&o, "high-priority-job", highPriority, n-1, nil, n-1, preemptorPod, func(w *st.PodWrapper) {
		w.Label("app", "preemptor")
		if !s.blockersRepel {
			w.RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, blockerLabels))
		}
		if s.preemptor != nil {
			s.preemptor(w)
		}
	})
	ci := o.ClusterInfo()
	for _, job := range ci.Jobs {
		job.Priority = priorities[job.Name]
	}
	return ci
}

// hostNodes are n nodes of 4 cpu and 4Gi, labelled with their hostname and by label(i).
func hostNodes(n int, label func(i int, w *st.NodeWrapper)) []*corev1.Node {
	var nodes []*corev1.Node
	for i := range n {
		name := fmt.Sprintf("n%d", i)
		w := st.Node(name, st.Resources("4", "4Gi", "pods", "110")).Label(corev1.LabelHostname, name)
		if label != nil {
			label(i, w)
		}
		nodes = append(nodes, w.Obj())
	}
	return nodes
}

// runAntiAffinity runs antiAffinityConf over the cluster with kube-scheduler's inter-pod
// filters, and returns the pods evicted (sorted) and the session.
func runAntiAffinity(t *testing.T, ci *api.ClusterInfo) ([]string, *framework.Session) {
	t.Helper()
	var evicted []string
	cache := &frameworktest.Cache{Snap: ci, OnEvict: func(task *api.TaskInfo, _ string) error {
		evicted = append(evicted, task.Name)
		return nil
	}}
	source := interpod.NewSource()
	factory, ctx := frameworktest.StartOn(t, source)
	source.InterPod(api.InterPodChecks{Affinity: true})
	factory.WaitForCacheSync(ctx.Done())
	reg := framework.NewRegistry()
	for _, a := range []framework.Action{allocate.New(), backfill.New(), reclaim.New(), preempt.New()} {
		reg.RegisterAction(a)
	}
	for name, build := range map[string]framework.PluginBuilder{
		priority.PluginName: priority.New, gang.PluginName: gang.New, conformance.PluginName: conformance.New,
		overcommit.PluginName: overcommit.New, drf.PluginName: drf.New, predicates.PluginName: predicates.NewBuilder(nil, source),
		proportion.PluginName: proportion.New, nodeorder.PluginName: nodeorder.New, binpack.PluginName: binpack.New,
	} {
		reg.RegisterPlugin(name, build)
	}
	cfg, skipped, err := conf.Parse([]byte(antiAffinityConf), reg)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("configuration: skipped %v, err %v", skipped, err)
	}
	ssn := frameworktest.RunActions(t, cache, cfg, reg)
	slices.Sort(evicted)
	return evicted, ssn
}

// placed maps each pod of the job that the session placed to its node.
func placed(ssn *framework.Session, job string) map[string]string {
	out := map[string]string{}
	for _, t := range ssn.Jobs[api.NewJobID("ns", job)].Tasks {
		if t.NodeName != "" {
			out[t.Name] = t.NodeName
		}
	}
	return out
}

// The spec's shape on 4 nodes: allocate finds no node for the preemptors (each node's blocker
// repels them, and has 2 cpu left), and preempt evicts exactly 3 blockers, one from each node
// the 3 preemptors are pipelined to: the bystanders, of lower priority than the blockers and
// evicted first for room, are given back once a blocker's eviction frees its room. Before,
// no eviction lifted the anti-affinity, and nothing was evicted. The same when it is the
// blockers' anti-affinity that selects the preemptors.
func TestPreemptLiftsAntiAffinity(t *testing.T) {
	for _, blockersRepel := range []bool{false, true} {
		t.Run(fmt.Sprintf("blockers repel: %v", blockersRepel), func(t *testing.T) {
			ci := antiAffinityShape{nodes: hostNodes(4, nil), blockersRepel: blockersRepel}.cluster()
			evicted, ssn := runAntiAffinity(t, ci)
			want := []string{"blocker-job-0", "blocker-job-1", "blocker-job-2", "blocker-job-3"}
			if len(evicted) != 3 || slices.ContainsFunc(evicted, func(p string) bool { return !slices.Contains(want, p) }) {
				t.Fatalf("evicted %v, want 3 of %v", evicted, want)
			}
			freed := map[string]bool{}
			for _, name := range evicted {
				freed[taskNamed(t, ssn, name).NodeName] = true
			}
			got := placed(ssn, "high-priority-job")
			if len(got) != 3 {
				t.Fatalf("preemptors placed %v, want all 3", got)
			}
			for pod, node := range got {
				if !freed[node] {
					t.Errorf("%s is placed on %s, whose blocker stays", pod, node)
				}
				delete(freed, node)
			}
		})
	}
}

// A blocker of higher priority than the preemptor is no victim, though evicting the bystander
// beside it would make room: with one such blocker (n0) the 3 preemptors evict the 3 others;
// with only such blockers nothing is evicted, and the preemptors' pods say why.
func TestPreemptSparesHigherPriorityBlocker(t *testing.T) {
	ci := antiAffinityShape{nodes: hostNodes(4, nil), vipBlockers: 1}.cluster()
	evicted, ssn := runAntiAffinity(t, ci)
	if want := []string{"blocker-job-0", "blocker-job-1", "blocker-job-2"}; !slices.Equal(evicted, want) {
		t.Errorf("one blocker above the preemptor: evicted %v, want %v", evicted, want)
	}
	for pod, node := range placed(ssn, "high-priority-job") {
		if node == "n0" {
			t.Errorf("%s is placed on n0, beside the blocker above it", pod)
		}
	}

	ci = antiAffinityShape{nodes: hostNodes(4, nil), vipBlockers: 4}.cluster()
	evicted, ssn = runAntiAffinity(t, ci)
	if len(evicted) != 0 {
		t.Errorf("every blocker above the preemptor: evicted %v, want nothing", evicted)
	}
	const why = "0/4 nodes are unavailable: 4 node(s) didn't match pod anti-affinity rules" + evictsearch.AfterEvictions + "."
	job := ssn.Jobs[api.NewJobID("ns", "high-priority-job")]
	for _, task := range job.Tasks {
		if fe := job.NodesFitErrors[task.UID]; fe == nil || fe.Error() != why {
			t.Errorf("%s's fit error is %v, want %q", task.Name, fe, why)
		}
	}
}

// A node that the preemptor's node selector refuses is never where it evicts, though its
// blocker and bystander would go as readily as the others': the 3 preemptors go to the 3
// nodes they select, each evicting that node's blocker.
func TestPreemptSkipsNodesTheSelectorRefuses(t *testing.T) {
	nodes := hostNodes(4, func(i int, w *st.NodeWrapper) {
		pool := "main"
		if i == 0 {
			pool = "other"
		}
		w.Label("pool", pool)
	})
	shape := antiAffinityShape{nodes: nodes, preemptor: func(w *st.PodWrapper) { w.NodeSelector(map[string]string{"pool": "main"}) }}
	evicted, ssn := runAntiAffinity(t, shape.cluster())
	if want := []string{"blocker-job-1", "blocker-job-2", "blocker-job-3"}; !slices.Equal(evicted, want) {
		t.Errorf("evicted %v, want %v", evicted, want)
	}
	for pod, node := range placed(ssn, "high-priority-job") {
		if node == "n0" {
			t.Errorf("%s is placed on n0, which its node selector refuses", pod)
		}
	}
}

// taskNamed is the session's task of the pod.
func taskNamed(t *testing.T, ssn *framework.Session, name string) *api.TaskInfo {
	t.Helper()
	for _, job := range ssn.Jobs {
		for _, task := range job.Tasks {
			if task.Name == name {
				return task
			}
		}
	}
	t.Fatalf("no pod %s in the session", name)
	return nil
}
