package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReportAddAndPublish: Add sums into a series, Set replaces it; a second report sets
// the series that live on (through the gauges the first one set) and deletes the others.
func TestReportAddAndPublish(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_gauge", Help: "test"}, []string{"a", "b"})
	var p Publisher
	p.Publish(func(r Report) {
		r.Add(vec, 2, "x", "1")
		r.Add(vec, 3, "x", "1")
		r.Set(vec, 7, "y", "1")
		r.Add(vec, 1, "y", "1")
	})
	if got := testutil.ToFloat64(vec.WithLabelValues("x", "1")); got != 5 {
		t.Errorf("x 1 = %v, want 5 (2 + 3)", got)
	}
	if got := testutil.ToFloat64(vec.WithLabelValues("y", "1")); got != 8 {
		t.Errorf("y 1 = %v, want 8 (7 + 1)", got)
	}

	p.Publish(func(r Report) { r.Set(vec, 4, "x", "1") })
	if n := testutil.CollectAndCount(vec); n != 1 {
		t.Errorf("%d series after the second report, want 1", n)
	}
	if got := testutil.ToFloat64(vec.WithLabelValues("x", "1")); got != 4 {
		t.Errorf("x 1 = %v after the second report, want 4", got)
	}
}
