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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// hierarchyConf is a department's queues as a tree: capacity with enableHierarchy, as
// Volcano v1.15's hierarchical-queue guide configures it.
const hierarchyConf = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
`

// Queues as a tree on a kwok node with room for 40 vGPUs: org (capability 2 vGPUs) holds
// team-a and team-b. team-a's gang of 2 fills org; team-b's pod then waits though the node has
// room, while a pod of a queue outside org is bound after it; org's status.allocated is its
// teams'; a job submitted to org itself is refused in upstream's words; a queue whose parent
// does not exist gets a Warning Event and its job waits, nothing else stops.
func TestHierarchicalQueuesCapAndRefuse(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	e.gpuNode("gpus", 4, 10, 24576, 0)
	under := func(parent string, capability corev1.ResourceList) func(*schedulingv1beta1.QueueSpec) {
		return func(spec *schedulingv1beta1.QueueSpec) { spec.Parent, spec.Capability = parent, capability }
	}
	org := e.queueWith("org", under("root", corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("2")}))
	teamA := e.queueWith("team-a", under(org, nil))
	teamB := e.queueWith("team-b", under(org, nil))
	other := e.queueWith("other", under("root", nil))
	orphan := e.queueWith("orphan", under(e.ns+"-gone", nil))
	e.scheduler(hierarchyConf)

	e.vgpuGangOfClass("a", teamA, "", 2, 2, 1000, 0)
	e.waitBound("a-", 2, 60*time.Second)
	e.vgpuGangOfClass("b", teamB, "", 1, 1, 1000, 0)
	e.vgpuGangOfClass("lost", orphan, "", 1, 1, 1000, 0)
	e.vgpuGangOfClass("parent", org, "", 1, 1, 1000, 0)
	// A later job of a queue outside org is bound: cycles ran after b's was created.
	e.vgpuGangOfClass("later", other, "", 1, 1, 1000, 0)
	e.waitBound("later-", 1, 60*time.Second)
	for _, name := range []string{"b", "lost", "parent"} {
		if bound, _, err := e.boundPods(ctx, name+"-"); err != nil || bound != 0 {
			t.Errorf("%s: %d pods bound (%v), want none", name, bound, err)
		}
	}

	refused := fmt.Sprintf("can only submit job to leaf queue, queue `%s` has 2 child queues", org)
	e.podGroup("parent", 30*time.Second, "refused: "+refused, func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && c.Reason == "InvalidQueue" && strings.Contains(c.Message, refused)
	})

	eventually(t, 30*time.Second, "org's status.allocated holds its teams' 2 vGPUs", func(ctx context.Context) (bool, string, error) {
		q, err := e.vc.SchedulingV1beta1().Queues().Get(ctx, org, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got := q.Status.Allocated[vgpu.DefaultCountResource]
		return got.Value() == 2, fmt.Sprintf("allocated %v", q.Status.Allocated), nil
	})

	missing := fmt.Sprintf("queue %s names parent queue %s-gone, which does not exist", orphan, e.ns)
	eventually(t, 60*time.Second, "a ParentQueueNotFound Event on "+orphan, func(ctx context.Context) (bool, string, error) {
		events, err := e.cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + orphan})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, ev := range events.Items {
			if ev.Reason == "ParentQueueNotFound" && strings.Contains(ev.Message, missing) {
				return true, "", nil
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return false, fmt.Sprintf("events %q", seen), nil
	})
}

// Reclaim over a two-level tree on one GPU of 4 vGPU slots: dept-x (guarantee 2 vGPUs) holds
// projects x1 and x2, dept-y (deserved 4) holds y1 (deserved 4) and y2. While dept-y is idle
// x1 bursts to all 4 slots. y1's gang of 2 then reclaims 2 of x1's pods and is bound; y1's
// next pod finds dept-y at the 2 slots dept-x's guarantee leaves it, so no more of x1's pods
// go, and the pod's event says its queue has no room. Without the guarantee y1's deserved 4
// would take all 4 (x1 itself deserves nothing).
func TestHierarchicalGuaranteeHoldsAgainstReclaim(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 4, 24576, 0)}
	vgpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{vgpu.DefaultCountResource: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	// A share covers every resource the pods ask for: a deserved that names no vgpu-memory
	// is none of it, as upstream's.
	share := func(n int64) corev1.ResourceList {
		r := vgpus(n)
		r[vgpu.DefaultMemoryResource] = *resource.NewQuantity(n*1000, resource.DecimalSI)
		return r
	}
	under := func(parent string, deserved corev1.ResourceList, guarantee corev1.ResourceList) func(*schedulingv1beta1.QueueSpec) {
		return func(spec *schedulingv1beta1.QueueSpec) {
			spec.Parent, spec.Deserved, spec.Guarantee = parent, deserved, schedulingv1beta1.Guarantee{Resource: guarantee}
		}
	}
	deptX := e.queueWith("dept-x", under("root", nil, vgpus(2)))
	x1 := e.queueWith("x1", under(deptX, nil, nil))
	e.queueWith("x2", under(deptX, nil, nil))
	deptY := e.queueWith("dept-y", under("root", share(4), nil))
	y1 := e.queueWith("y1", under(deptY, share(4), nil))
	e.queueWith("y2", under(deptY, nil, nil))
	conf := strings.Replace(hierarchyConf, `"enqueue, allocate, backfill"`, `"enqueue, allocate, reclaim, backfill"`, 1)
	e.scheduler(conf)

	e.vgpuGangOfClass("burst", x1, "", 1, 4, 1000, 0)
	e.waitBound("burst-", 4, 60*time.Second)
	e.vgpuGang("claim", y1, 2, 1000, 0)
	e.waitBound("claim-", 2, 60*time.Second)

	e.vgpuGang("more", y1, 1, 1000, 0)
	// y1's real capability is what dept-y's leaves it: 2.
	full := fmt.Sprintf("queue %s has no room for the pod within its real capability: %s", y1, vgpu.DefaultCountResource)
	waitEvent(t, e.cs, 30*time.Second, e.ns, "involvedObject.name=more-0", "more-0's event naming "+y1,
		func(ev corev1.Event) bool {
			return ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, full)
		})
	e.noOverbooking(ctx, nodes)
	// Cycles ran after that one: a later pod of another queue is bound.
	e.node("cpus", "4")
	e.gangWith("later", e.queueWith("other", under("root", nil, nil)), "", 1, 1, "1", nil, nil, func(_ int, pod *corev1.Pod) {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: e.name + "-cpus"}
	})
	e.waitBound("later-", 1, 60*time.Second)

	if bound, _, err := e.boundPods(ctx, "burst-"); err != nil || bound != 2 {
		t.Errorf("x1's pods bound %d (%v), want 2: dept-x's guarantee", bound, err)
	}
	if bound, _, err := e.boundPods(ctx, "more-"); err != nil || bound != 0 {
		t.Errorf("more's pods bound %d (%v), want none: dept-y is at what dept-x's guarantee leaves it", bound, err)
	}
	if evicted, err := e.evictedFor(ctx, "reclaim"); err != nil || len(evicted) != 2 ||
		!strings.HasPrefix(evicted[0], "burst-") || !strings.HasPrefix(evicted[1], "burst-") {
		t.Errorf("evicted for reclaim %v (%v), want two of x1's pods", evicted, err)
	}
}
