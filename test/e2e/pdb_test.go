//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// The pdb plugin with preempt: two of the four low-priority 6000 MiB pods on a 24 GiB GPU are
// covered by a PodDisruptionBudget allowing no disruption (minAvailable 2) (kube-controller-manager's
// disruption controller computes it); a high-priority pod asking 12000 MiB evicts the other
// two, never those.
func TestPreemptSparesPodsTheirBudgetProtects(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{e.name + "-gpu": e.gpuNode("gpu", 1, 10, 24576, 0)}
	low, high := e.priorityClass("low", 10), e.priorityClass("high", 1000)
	// minAvailable, not maxUnavailable: the disruption controller computes it for pods
	// without an owning controller too.
	both := intstr.FromInt32(2)
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "keep"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &both,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "keep"}}}}
	if _, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Create(ctx, budget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	chart := chartConfWithPreempt(t)
	conf := strings.Replace(chart, "  - name: conformance\n", "  - name: conformance\n  - name: pdb\n", 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no conformance line to add pdb after")
	}
	e.scheduler(conf)
	e.vgpuGangOfClass("keep", "", low, 1, 2, 6000, 0, labelled(map[string]string{"app": "keep"}))
	e.vgpuGangOfClass("low", "", low, 1, 2, 6000, 0)
	e.waitBound("keep-", 2, 30*time.Second)
	e.waitBound("low-", 2, 30*time.Second)
	eventually(t, 60*time.Second, "the budget to count its 2 pods", func(ctx context.Context) (bool, string, error) {
		b, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Get(ctx, "keep", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return b.Status.ExpectedPods == 2, fmt.Sprintf("status %+v", b.Status), nil
	})

	e.vgpuGangOfClass("high", "", high, 1, 1, 12000, 0)
	e.waitBound("high-", 1, 60*time.Second)
	e.noOverbooking(ctx, nodes)
	if evicted, err := e.evictedPods(ctx); err != nil || strings.Join(evicted, ",") != "low-0,low-1" {
		t.Errorf("evicted %v (%v), want low-0 and low-1 only", evicted, err)
	}
	if b, _, err := e.boundPods(ctx, "keep-"); err != nil || b != 2 {
		t.Errorf("pods under the budget bound %d (%v), want both", b, err)
	}
}
