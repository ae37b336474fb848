package cache

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// The binder records into the metrics of its Options: a bound pod counts in
// volcano_scheduled_pods_total and the task scheduling latency, a refused bind in
// volcano_bind_failures_total.
func TestBindMetrics(t *testing.T) {
	ctx := context.Background()
	m, reg := frameworktest.RegisteredMetrics()
	env := newTestEnv(t, Options{Metrics: m})
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), newQueue("default"), newPodGroup("pg1", "", 1),
		st.Pod("p1", "1", "").Group("pg1").Obj(), st.Pod("p2", "1", "").Group("pg1").Obj())
	capture := &bindingCapture{}
	capture.install(env)
	for _, name := range []string{"p1", "p2"} {
		if err := env.sc.Bind(placed(t, env, name, "n1", nil)); err != nil {
			t.Fatalf("Bind %s: %v", name, err)
		}
		env.sc.processNextBind(ctx)
		capture.err = apierrors.NewInternalError(errors.New("etcd timeout")) // for p2
	}
	want := `
# HELP volcano_scheduled_pods_total Number of pods this scheduler bound to a node
# TYPE volcano_scheduled_pods_total counter
volcano_scheduled_pods_total 1
# HELP volcano_bind_failures_total Number of bind requests the API server refused
# TYPE volcano_bind_failures_total counter
volcano_bind_failures_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_scheduled_pods_total", "volcano_bind_failures_total"); err != nil {
		t.Error(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "volcano_task_scheduling_latency_milliseconds" {
			if n := f.Metric[0].GetHistogram().GetSampleCount(); n != 1 {
				t.Errorf("task scheduling latency observed %d times, want once (the bound pod)", n)
			}
			return
		}
	}
	t.Error("no volcano_task_scheduling_latency_milliseconds")
}
