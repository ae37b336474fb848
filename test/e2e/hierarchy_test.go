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
