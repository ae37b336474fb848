package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The handler must gather the scheduler's registry and the legacy one without a clash: a
// family registered twice (the Go and process collectors once were) turns the whole scrape
// into an error page.
func TestHandlerServesOneParsableScrape(t *testing.T) {
	_, reg := registered(t)
	if _, err := gatherer(reg).Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
	srv := httptest.NewServer(Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, name := range []string{"volcano_e2e_scheduling_latency_milliseconds", "volcano_scheduled_pods_total",
		"go_goroutines", "process_cpu_seconds_total"} {
		if families[name] == nil {
			t.Errorf("family %s missing from the scrape", name)
		}
	}
}
