//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Queues reclaim in the shapes real clusters have: every pod asks cpu and memory beside its
// vGPU, every PodGroup carries the minResources Volcano's job controller gives it, and
// departments declare only a capability.

// workerRequest is what each worker pod asks: 1 cpu, 1Gi and one vGPU of memMiB.
func workerRequest(memMiB int64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:         resource.MustParse("1"),
		corev1.ResourceMemory:      resource.MustParse("1Gi"),
		vgpu.DefaultCountResource:  resource.MustParse("1"),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(memMiB, resource.DecimalSI),
	}
}

// timesList is list multiplied by n.
func timesList(list corev1.ResourceList, n int64) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		out[name] = *resource.NewMilliQuantity(q.MilliValue()*n, q.Format)
	}
	return out
}

// vcJob creates a job as Volcano's job controller would: a PodGroup of minMember min whose
// minResources are min pods' requests, and pods pods each asking workerRequest(memMiB).
func (e *schedulerEnv) vcJob(name, queue string, min, pods int, memMiB int64) {
	e.t.Helper()
	req := workerRequest(memMiB)
	e.gangWith(name, queue, "", min, pods, "", timesList(req, int64(min)), nil, func(_ int, pod *corev1.Pod) { workerResources(pod, req) })
}

// capacityReclaimConf is hierarchyConf with reclaim, capacity's enableHierarchy as tree says.
func capacityReclaimConf(tree bool) string {
	conf := strings.Replace(hierarchyConf, `"enqueue, allocate, backfill"`, `"enqueue, allocate, reclaim, backfill"`, 1)
	if !tree {
		conf = strings.Replace(conf, "    enableHierarchy: true\n", "", 1)
	}
	return conf
}

// teamShare is a deserved share of n worker pods of memMiB, in every resource they ask.
func teamShare(n, memMiB int64) corev1.ResourceList { return timesList(workerRequest(memMiB), n) }

// queueUnder edits a queue's spec: its parent, capability and deserved.
func queueUnder(parent string, capability, deserved corev1.ResourceList) func(*schedulingv1beta1.QueueSpec) {
	return func(spec *schedulingv1beta1.QueueSpec) {
		spec.Parent, spec.Capability, spec.Deserved = parent, capability, deserved
	}
}

// reclaimedFrom waits until the pods evicted for reclaim are exactly want of the prefix's,
// and no other, and checks that none of the prefix's pods is left beyond keep.
func (e *schedulerEnv) reclaimedFrom(ctx context.Context, prefix string, want, keep int) {
	e.t.Helper()
	eventually(e.t, 30*time.Second, fmt.Sprintf("%d of %s* evicted for reclaim", want, prefix), func(ctx context.Context) (bool, string, error) {
		evicted, err := e.evictedFor(ctx, "reclaim")
		if err != nil {
			return false, "", err
		}
		ok := len(evicted) == want
		for _, name := range evicted {
			ok = ok && strings.HasPrefix(name, prefix)
		}
		return ok, fmt.Sprintf("evicted %q", evicted), nil
	})
	e.waitBound(prefix, keep, 30*time.Second)
}

// A capped department whose teams borrow and take back, on kwok vGPU nodes with room to
// spare: dept declares only a capability of 4 vGPUs; t1 and t2 each deserve 2 workers. While
// t2 is idle t1's job bursts to 4 pods (minAvailable 1), filling dept; t2's gang of 2 is then
// admitted although dept is at its cap (t2 is owed the room), and reclaim takes back exactly
// 2 of t1's pods within 30 s, which keeps its own 2; no GPU is ever over capacity.
func TestCappedDepartmentTeamTakesBackItsShare(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpus": e.gpuNode("gpus", 2, 4, 24576, 0)}
	dept := e.queueWith("dept", queueUnder("root", corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("4")}, nil))
	t1 := e.queueWith("t1", queueUnder(dept, nil, teamShare(2, 4000)))
	t2 := e.queueWith("t2", queueUnder(dept, nil, teamShare(2, 4000)))
	e.scheduler(capacityReclaimConf(true))
	e.neverOverbooked(nodes)

	e.vcJob("burst", t1, 1, 4, 4000)
	e.waitBound("burst-", 4, 60*time.Second)
	e.noOverbooking(ctx, nodes)

	start := time.Now()
	e.vcJob("train", t2, 2, 2, 4000)
	e.reclaimedFrom(ctx, "burst-", 2, 2)
	e.waitBound("train-", 2, 30*time.Second)
	t.Logf("t2's gang bound %.1f s after it was created", time.Since(start).Seconds())
	e.podGroup("train", 30*time.Second, "Running", func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Status.Phase == schedulingv1beta1.PodGroupRunning
	})
	e.noOverbooking(ctx, nodes)
}

// A full cluster (one GPU of 4 slots, all team-a's) where team-b, of another department, has
// a one-pod job with minResources: it is admitted (the root holds no job back at admission)
// and reclaims one of team-a's pods; team-a, above its share of 2, keeps 3.
func TestFullClusterEnqueuesAndReclaims(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 24576, 0)}
	deptA := e.queueWith("dept-a", queueUnder("root", nil, nil))
	deptB := e.queueWith("dept-b", queueUnder("root", nil, nil))
	teamA := e.queueWith("team-a", queueUnder(deptA, nil, teamShare(2, 4000)))
	teamB := e.queueWith("team-b", queueUnder(deptB, nil, teamShare(2, 4000)))
	e.scheduler(capacityReclaimConf(true))
	e.neverOverbooked(nodes)

	e.vcJob("burst", teamA, 1, 4, 4000)
	e.waitBound("burst-", 4, 60*time.Second)
	e.vcJob("single", teamB, 1, 1, 4000)
	e.podGroup("single", 30*time.Second, "admitted", func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Status.Phase == schedulingv1beta1.PodGroupInqueue || pg.Status.Phase == schedulingv1beta1.PodGroupRunning
	})
	e.reclaimedFrom(ctx, "burst-", 1, 3)
	e.waitBound("single-", 1, 30*time.Second)
	e.noOverbooking(ctx, nodes)
}

// Flat queues whose deserved shares name only vGPUs (one GPU of 4 slots): a bursts to all 4;
// b's gang of 2 workers, which also ask cpu and memory, reclaims exactly 2; b's next pod
// would take b past its share, so it waits and a keeps its 2.
func TestGPUOnlyDeservedReclaims(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 24576, 0)}
	gpuShare := corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("2"), vgpu.DefaultMemoryResource: resource.MustParse("8000")}
	a := e.queueWith("a", queueUnder("", nil, gpuShare))
	b := e.queueWith("b", queueUnder("", nil, gpuShare))
	e.scheduler(capacityReclaimConf(false))
	e.neverOverbooked(nodes)

	e.vcJob("burst", a, 1, 4, 4000)
	e.waitBound("burst-", 4, 60*time.Second)
	e.vcJob("claim", b, 2, 2, 4000)
	e.reclaimedFrom(ctx, "burst-", 2, 2)
	e.waitBound("claim-", 2, 30*time.Second)

	e.vcJob("more", b, 1, 1, 4000)
	e.noOverbooking(ctx, nodes)
	// Cycles ran after more's was created: a later pod of another queue is bound.
	e.node("cpus", "4")
	e.gangWith("later", e.queueWith("other", queueUnder("", nil, nil)), "", 1, 1, "1", nil, nil, func(_ int, pod *corev1.Pod) {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: e.name + "-cpus"}
	})
	e.waitBound("later-", 1, 60*time.Second)
	if evicted, err := e.evictedFor(ctx, "reclaim"); err != nil || len(evicted) != 2 {
		t.Errorf("evicted for reclaim %q (%v), want a's 2 only: b holds its share", evicted, err)
	}
	if bound, _, err := e.boundPods(ctx, "more-"); err != nil || bound != 0 {
		t.Errorf("more's pod bound (%d, %v) past b's share", bound, err)
	}
}
