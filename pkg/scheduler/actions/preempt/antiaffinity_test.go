package preempt_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/backfill"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/internal/evictsearch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/preempt"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/reclaim"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/interpod"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/charttest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// The shape of upstream Volcano v1.15.1's e2e spec "should preempt low priority pod with
// anti-affinity constraint" (test/e2e/schedulingaction/preempt.go): on every node (4 cpu,
// 4Gi) one pod of a middle-priority blocker job (one per node by its own anti-affinity) and
// one of a low-priority bystander job (drawn to the blockers, one per node), 1 cpu and 1Gi
// each; then a high-priority gang of nodes-1 pods that each ask what the node has less one
// pod's worth (3 cpu, 3Gi) and have required anti-affinity to the blockers. The spec runs
// upstream's e2e configuration, which is the chart's (config/volcano-scheduler.conf) less
// deviceshare, with antiAffinityActions: deviceshare has no say on pods without vGPUs.
const antiAffinityActions = "allocate, backfill, reclaim, preempt"

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
	// gpus, when set, gives each node GPUs and each pod one vGPU beside its cpu and memory.
	gpus *gpuShape
	// gone are pods left out, as the next cycle's snapshot leaves out the pods evicted.
	gone []string
}

// gpuShape is the GPUs of an antiAffinityShape: perNode GPUs of gpuMiB on each node, and the
// vGPU each pod of a job asks, on the GPU (index on its node) its running pods hold.
type gpuShape struct {
	perNode                       int
	blocker, bystander, preemptor vgpuPod
}

// gpuMiB is each GPU's memory in a gpuShape.
const gpuMiB = 24576

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
// cache resolves it, and, with gpus, each node's GPU ledger derived as the cache derives it.
func (s antiAffinityShape) cluster(t *testing.T) *api.ClusterInfo {
	t.Helper()
	nodes := s.nodes
	if s.gpus != nil {
		nodes = make([]*corev1.Node, len(s.nodes))
		for i, n := range s.nodes {
			nodes[i] = withGPUs(t, &st.NodeWrapper{Node: *n.DeepCopy()}, i, s.gpus.perNode, gpuMiB, n.Status.Allocatable).Obj()
		}
	}
	o := frameworktest.Objects{Nodes: nodes, Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()}}
	n := len(nodes)
	// asking gives asks, and each pod, the vGPU of the job's pods in s.gpus (get picks it).
	asking := func(asks corev1.ResourceList, get func(*gpuShape) vgpuPod, pod func(*st.PodWrapper)) (corev1.ResourceList, func(*st.PodWrapper)) {
		if s.gpus == nil {
			return asks, pod
		}
		p := get(s.gpus)
		return withVGPU(asks, p.memory), func(w *st.PodWrapper) {
			pod(w)
			if node := slices.IndexFunc(nodes, func(n *corev1.Node) bool { return n.Name == w.Spec.NodeName }); node >= 0 {
				holdGPU(t, w, node, p)
			}
		}
	}
	blocker := func(w *st.PodWrapper) {
		w.Label("app", "blocker").RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, blockerLabels))
		if s.blockersRepel {
			w.RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, preemptorLabels))
		}
	}
	blockerAsks, blocker := asking(onePod, func(g *gpuShape) vgpuPod { return g.blocker }, blocker)
	priorities := map[string]int32{"vip-blocker-job": 200, "blocker-job": middlePriority, "bystander-job": lowPriority, "high-priority-job": highPriority}
	if s.vipBlockers > 0 {
		job(&o, "vip-blocker-job", priorities["vip-blocker-job"], 1, nodes[:s.vipBlockers], 0, blockerAsks, blocker)
	}
	if s.vipBlockers < n {
		job(&o, "blocker-job", middlePriority, 1, nodes[s.vipBlockers:], 0, blockerAsks, blocker)
	}
	bystanderAsks, bystander := asking(onePod, func(g *gpuShape) vgpuPod { return g.bystander }, func(w *st.PodWrapper) {
		w.Label("app", "bystander").RequiredPodAffinity(st.PodAffinityTerm(corev1.LabelHostname, blockerLabels)).
			RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, bystanderLabels))
	})
	job(&o, "bystander-job", lowPriority, 1, nodes, 0, bystanderAsks, bystander)
	preemptorAsks, preemptor := asking(preemptorPod, func(g *gpuShape) vgpuPod { return g.preemptor }, func(w *st.PodWrapper) {
		w.Label("app", "preemptor")
		if !s.blockersRepel {
			w.RequiredPodAntiAffinity(st.PodAffinityTerm(corev1.LabelHostname, blockerLabels))
		}
		if s.preemptor != nil {
			s.preemptor(w)
		}
	})
	job(&o, "high-priority-job", highPriority, n-1, nil, n-1, preemptorAsks, preemptor)
	o.Pods = slices.DeleteFunc(o.Pods, func(p *corev1.Pod) bool { return slices.Contains(s.gone, p.Name) })
	ci := o.ClusterInfo()
	for _, job := range ci.Jobs {
		job.Priority = priorities[job.Name]
	}
	deriveLedgers(ci)
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

// runAntiAffinity runs the chart's configuration with antiAffinityActions over the cluster
// with kube-scheduler's inter-pod filters, and returns the pods evicted (sorted), the session
// and the cache (what it bound).
func runAntiAffinity(t *testing.T, ci *api.ClusterInfo) ([]string, *framework.Session, *frameworktest.Cache) {
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
	reg := charttest.Registry(deviceshare.NewStaticShared(), allocate.New(), backfill.New(), reclaim.New(), preempt.New())
	// The predicates with kube-scheduler's inter-pod filters on, over the pods source.
	reg.RegisterPlugin(predicates.PluginName, predicates.NewBuilder(nil, source))
	ssn := frameworktest.RunActions(t, cache, chartConf(t, reg, antiAffinityActions), reg)
	slices.Sort(evicted)
	return evicted, ssn, cache
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
			evicted, ssn, _ := runAntiAffinity(t, antiAffinityShape{nodes: hostNodes(4, nil), blockersRepel: blockersRepel}.cluster(t))
			blockersLifted(t, evicted, ssn)
		})
	}
}

// blockersLifted checks a session over the spec's shape on 4 nodes: it evicted exactly 3
// blockers and pipelined the 3 preemptors, one onto each of their nodes. It returns the
// preemptors' nodes, by pod.
func blockersLifted(t *testing.T, evicted []string, ssn *framework.Session) map[string]string {
	t.Helper()
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
		if s := taskNamed(t, ssn, pod).Status; s != api.Pipelined {
			t.Errorf("%s is %v on %s, want pipelined", pod, s, node)
		}
		if !freed[node] {
			t.Errorf("%s is placed on %s, whose blocker stays", pod, node)
		}
		delete(freed, node)
	}
	return got
}

// The spec's shape on 4 nodes of 2 GPUs each, every pod also asking one vGPU: GPU 0 holds the
// node's blocker (half of it), GPU 1 its bystander. deviceshare's choice of victims
// (SelectVictims) sees only GPUs: for a preemptor of a whole GPU it picks the bystander,
// alone on GPU 1 and of the lower priority; for one of half a GPU, no victim at all, GPU 1's
// other half being free. Neither lifts the blocker's anti-affinity, so the search goes on
// with the other victims in victim order, then gives back those not needed: exactly the 3
// blockers go, never a bystander, and the 3 preemptors are pipelined onto their nodes. The
// next cycle, the blockers gone, binds each preemptor where deviceshare's binpack puts it:
// of a whole GPU, on GPU 0 (the blocker's, which it needed); of half a GPU, on GPU 1 beside
// the bystander (the blocker held no GPU room it needed, only its anti-affinity). Before,
// the search went on past the plugin's picks only where the node had room and the queue had
// not: nothing was evicted.
func TestPreemptLiftsAntiAffinityWithVGPUs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		preemptor int32
		gpu       int
	}{
		{"a whole GPU: the blocker's", gpuMiB, 0},
		{"half a GPU: beside the bystander", gpuMiB / 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shape := antiAffinityShape{nodes: hostNodes(4, nil), gpus: &gpuShape{perNode: 2,
				blocker: vgpuPod{memory: gpuMiB / 2, gpu: 0}, bystander: vgpuPod{memory: gpuMiB / 2, gpu: 1}, preemptor: vgpuPod{memory: tc.preemptor, gpu: -1}}}
			if tc.preemptor == gpuMiB {
				shape.gpus.bystander.memory = gpuMiB
			}
			evicted, ssn, _ := runAntiAffinity(t, shape.cluster(t))
			preemptors := blockersLifted(t, evicted, ssn)

			shape.gone = evicted
			evicted, _, cache := runAntiAffinity(t, shape.cluster(t))
			if len(evicted) != 0 {
				t.Errorf("the next cycle evicted %v, want nothing", evicted)
			}
			// Which preemptor goes to which of those nodes is the next cycle's to choose.
			freed := map[string]bool{}
			for _, node := range preemptors {
				freed[node] = true
			}
			bound := map[string]string{}
			for _, task := range cache.Bound {
				if task.Job != api.NewJobID("ns", "high-priority-job") {
					continue
				}
				bound[task.Name] = task.NodeName
				if !freed[task.NodeName] {
					t.Errorf("%s is bound to %s, want one of the nodes the preemptors were pipelined to %v", task.Name, task.NodeName, preemptors)
				}
				delete(freed, task.NodeName)
				node := slices.IndexFunc(shape.nodes, func(n *corev1.Node) bool { return n.Name == task.NodeName })
				if got, want := task.BindAnnotations[vgpu.AssignedDevicesAnnotation], gpuUUID(node, tc.gpu); !strings.Contains(got, want) {
					t.Errorf("%s is assigned %q, want GPU %d of %s (%s)", task.Name, got, tc.gpu, task.NodeName, want)
				}
			}
			if len(bound) != 3 {
				t.Errorf("the next cycle bound preemptors %v, want all 3", bound)
			}
		})
	}
}

// A blocker of higher priority than the preemptor is no victim, though evicting the bystander
// beside it would make room: with one such blocker (n0) the 3 preemptors evict the 3 others;
// with only such blockers nothing is evicted, and the preemptors' pods say why.
func TestPreemptSparesHigherPriorityBlocker(t *testing.T) {
	ci := antiAffinityShape{nodes: hostNodes(4, nil), vipBlockers: 1}.cluster(t)
	evicted, ssn, _ := runAntiAffinity(t, ci)
	if want := []string{"blocker-job-0", "blocker-job-1", "blocker-job-2"}; !slices.Equal(evicted, want) {
		t.Errorf("one blocker above the preemptor: evicted %v, want %v", evicted, want)
	}
	for pod, node := range placed(ssn, "high-priority-job") {
		if node == "n0" {
			t.Errorf("%s is placed on n0, beside the blocker above it", pod)
		}
	}

	ci = antiAffinityShape{nodes: hostNodes(4, nil), vipBlockers: 4}.cluster(t)
	evicted, ssn, _ = runAntiAffinity(t, ci)
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
	evicted, ssn, _ := runAntiAffinity(t, shape.cluster(t))
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
