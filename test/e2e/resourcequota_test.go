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
)

// The resourcequota plugin under the chart's conf: with a namespace quota of 1 CPU, a gang of
// two 400m pods asking 800m is enqueued and bound (its own pods, counted by the quota when
// they were created, are not counted twice); a PodGroup whose minResources ask 700m more than
// its pod's 100m stays Pending with upstream's "resource quota insufficient" Event naming the
// quota, while a later one asking only its pod's 50m is bound.
func TestResourceQuotaHoldsJobsBack(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	e.node("cpus", "8")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "team"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
	if _, err := e.cs.CoreV1().ResourceQuotas(e.ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	chart := chartConf(t)
	conf := strings.Replace(chart, "  - name: conformance\n", "  - name: conformance\n  - name: resourcequota\n", 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no conformance line to add resourcequota after")
	}
	e.scheduler(conf)

	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	e.gang("first", "", 2, 2, "400m", cpu("800m"))
	e.waitBound("first-", 2, 60*time.Second)
	eventually(t, 30*time.Second, "the quota's status.used to count first's 800m", func(ctx context.Context) (bool, string, error) {
		q, err := e.cs.CoreV1().ResourceQuotas(e.ns).Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		used := q.Status.Used[corev1.ResourceRequestsCPU]
		return used.MilliValue() == 800, fmt.Sprintf("used %v", q.Status.Used), nil
	})
	// second's pod is counted at its creation (900m used); its minResources ask 700m more.
	e.gang("second", "", 1, 1, "100m", cpu("800m"))
	e.gang("third", "", 1, 1, "50m", cpu("50m"))
	e.waitBound("third-", 1, 60*time.Second)
	eventually(t, 30*time.Second, "second's resource quota insufficient Event", func(ctx context.Context) (bool, string, error) {
		events, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=second"})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, ev := range events.Items {
			if ev.Reason == "Unschedulable" && strings.HasPrefix(ev.Message, "resource quota insufficient") && strings.Contains(ev.Message, "team") {
				return true, "", nil
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return false, fmt.Sprintf("events %q", seen), nil
	})
	pg, err := e.vc.SchedulingV1beta1().PodGroups(e.ns).Get(ctx, "second", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pg.Status.Phase == schedulingv1beta1.PodGroupInqueue || pg.Status.Phase == schedulingv1beta1.PodGroupRunning {
		t.Errorf("second is %s past its namespace's quota", pg.Status.Phase)
	}
}
