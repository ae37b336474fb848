//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// The nodegroup plugin under the chart's conf (binpack, which would put every pod on one
// node): queue a requires node group x and queue b node group y (the nodes'
// volcano.sh/nodegroup-name label), so each queue's gang lands on its group's node only.
func TestNodeGroupsKeepQueuesApart(t *testing.T) {
	e := newSchedulerEnv(t)
	for _, n := range []struct{ name, group string }{{"x", "x"}, {"y", "y"}} {
		e.node(n.name, "8")
		e.labelNode(n.name, "volcano.sh/nodegroup-name", n.group)
	}
	requires := func(group string) func(*schedulingv1beta1.QueueSpec) {
		return func(spec *schedulingv1beta1.QueueSpec) {
			spec.Affinity = &schedulingv1beta1.Affinity{NodeGroupAffinity: &schedulingv1beta1.NodeGroupAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []string{group}}}
		}
	}
	qa, qb := e.queueWith("a", requires("x")), e.queueWith("b", requires("y"))
	chart := chartConf(t)
	conf := strings.Replace(chart, "  - name: conformance\n", "  - name: conformance\n  - name: nodegroup\n", 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no conformance line to add nodegroup after")
	}
	e.scheduler(conf)
	e.gang("ga", qa, 3, 3, "1", nil)
	e.gang("gb", qb, 3, 3, "1", nil)
	e.waitBound("ga-", 3, 60*time.Second)
	e.waitBound("gb-", 3, 60*time.Second)
	for prefix, want := range map[string]string{"ga-": e.name + "-x", "gb-": e.name + "-y"} {
		if per := e.podsPerNode(prefix); len(per) != 1 || per[want] != 3 {
			t.Errorf("%s pods per node %v, want all 3 on %s", prefix, per, want)
		}
	}
}
