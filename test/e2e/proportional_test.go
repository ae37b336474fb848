//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Upstream's proportional predicate in the chart's conf, for vGPU slots: a node of 32 cpu and
// one GPU split 10 keeps 2 cpu per idle slot for pods that ask for vGPU. An 8-cpu pod fits
// (24 left, 20 kept); a 16-cpu pod does not, in upstream's words, until vGPU pods (which the
// reserve does not hold back) take 8 slots and the reserve falls to 4.
func TestProportionalKeepsCPUForIdleGPUs(t *testing.T) {
	e := newSchedulerEnv(t)
	e.gpuNode("gpu", 1, 10, 24576, 0)
	chart := chartConf(t)
	conf := strings.Replace(chart, "  - name: predicates\n", `  - name: predicates
    arguments:
      predicate.ProportionalEnable: true
      predicate.resources: volcano.sh/vgpu-number
      predicate.resources.volcano.sh/vgpu-number.cpu: 2
      predicate.resources.volcano.sh/vgpu-number.memory: 0
`, 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no predicates line to add arguments to")
	}
	e.scheduler(conf)

	e.gang("small", "", 1, 1, "8", nil)
	e.waitBound("small-", 1, 60*time.Second)
	e.gang("big", "", 1, 1, "16", nil)
	const reason = "proportional of resource volcano.sh/vgpu-number check failed"
	e.podGroup("big", 30*time.Second, "Unschedulable with "+reason, func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && strings.Contains(c.Message, reason)
	})

	e.vgpuGangOfClass("sliced", "", "", 8, 8, 1000, 0)
	e.waitBound("sliced-", 8, 60*time.Second)
	e.waitBound("big-", 1, 60*time.Second)
}
