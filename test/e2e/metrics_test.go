//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// freeAddress is a loopback address no one listens on, for a process's HTTP server.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// parseScrape parses a scrape the way Prometheus does; a page it cannot parse fails the test.
func parseScrape(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, tail(body, 20))
	}
	return families
}

// sum adds the values of a counter or gauge family's series (histograms: their counts).
func sum(f *dto.MetricFamily) float64 {
	var total float64
	for _, m := range f.GetMetric() {
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return total
}

// Prometheus scrapes the real binary's /metrics: one parsable page with the scheduler's own
// families, client-go's API request counts and the Go runtime's. Then SIGTERM in the middle
// of binding: the process exits cleanly, no Event is dropped, and every pod it bound has its
// Scheduled Event.
func TestMetricsScrapeAndCleanShutdown(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("a", "64")
	addr := freeAddress(t)
	sched, _ := e.scheduler(defaultConf, "--enable-metrics", "--listen-address", addr)
	e.gang("first", "", 1, 10, "100m", nil)
	e.waitBound("first-", 10, 30*time.Second)

	// The binder counts a pod once the API server has answered its Binding, a moment after
	// the pod shows bound to a watcher: scrape until the count has caught up.
	var families map[string]*dto.MetricFamily
	eventually(t, 10*time.Second, "volcano_scheduled_pods_total counts the 10 pods bound", func(context.Context) (bool, string, error) {
		families = parseScrape(t, scrape(t, "http://"+addr+"/metrics"))
		got := sum(families["volcano_scheduled_pods_total"])
		return got >= 10, fmt.Sprintf("volcano_scheduled_pods_total = %v", got), nil
	})
	for _, name := range []string{"volcano_scheduled_pods_total", "volcano_e2e_scheduling_latency_milliseconds",
		"volcano_action_scheduling_latency_milliseconds", "rest_client_requests_total", "go_goroutines", "process_resident_memory_bytes"} {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("the scrape has no %s", name)
		}
	}

	// Stop while a burst is being bound.
	e.gang("burst", "", 1, 40, "100m", nil)
	e.waitBoundCount("burst-", "at least 1", func(b int) bool { return b >= 1 }, 30*time.Second)
	_ = sched.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-sched.done:
	case <-time.After(30 * time.Second):
		t.Fatal("vc-scheduler did not exit within 30 s of SIGTERM")
	}
	if code := sched.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("vc-scheduler exited with %d after SIGTERM, want 0", code)
	}
	for _, lost := range []string{"broadcaster already stopped", "Unable to record event", "Events still queued at shutdown"} {
		if strings.Contains(sched.log.String(), lost) {
			t.Errorf("the scheduler's log says %q: an Event was lost while stopping", lost)
		}
	}
	ctx := context.Background()
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := map[string]bool{}
	for _, ev := range evs.Items {
		scheduled[ev.InvolvedObject.Name] = true
	}
	bound := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		if !scheduled[p.Name] {
			t.Errorf("pod %s is bound to %s but has no Scheduled Event", p.Name, p.Spec.NodeName)
		}
	}
	t.Logf("%d pods bound before the scheduler stopped, each with its Scheduled Event", bound)
}

// vgpuSeries is one vGPU family of a scrape as label values ("devID/NodeName[/podName]") ->
// value.
func vgpuSeries(families map[string]*dto.MetricFamily, name string) map[string]float64 {
	series := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		key := labels["devID"] + "/" + labels["NodeName"]
		if pod, ok := labels["podName"]; ok {
			key += "/" + pod
		}
		series[key] = m.GetGauge().GetValue()
	}
	return series
}

// Prometheus scrapes the real binary's vGPU series, which are made at scrape time from the
// last session's ledgers: upstream's names and labels, each GPU's size and bookings, one
// series per pod holding a vGPU, and a pod's series gone once the pod is.
func TestVGPUMetricsScrape(t *testing.T) {
	e := newSchedulerEnv(t)
	node := e.name + "-metrics"
	gpus := e.gpuNode("metrics", 2, 4, 8192, 0)
	queue := e.queue("metrics", nil)
	addr := freeAddress(t)
	e.scheduler(seedConf(t), "--enable-metrics", "--listen-address", addr)
	e.vgpuGang("m", queue, 3, 1000, 10)
	e.waitBound("m-", 3, 60*time.Second)

	// Wherever the pods went, the GPUs' series add up to them and each pod has its own.
	want := func(pods ...string) (bool, string) {
		families := parseScrape(t, scrape(t, "http://"+addr+"/metrics"))
		limit := vgpuSeries(families, "volcano_vgpu_device_memory_limit")
		memory := vgpuSeries(families, "volcano_vgpu_device_allocated_memory")
		shared := vgpuSeries(families, "volcano_vgpu_device_shared_number")
		perPod := vgpuSeries(families, "volcano_vgpu_device_memory_allocation_for_a_certain_pod")
		state := fmt.Sprintf("limit %v, memory %v, shared %v, per pod %v", limit, memory, shared, perPod)
		var total, devices float64
		for _, g := range gpus {
			if limit[g.UUID+"/"+node] != 8192 {
				return false, state
			}
			total += memory[g.UUID+"/"+node]
			devices += shared[g.UUID+"/"+node]
		}
		if total != float64(1000*len(pods)) || devices != float64(len(pods)) || len(perPod) != len(pods) {
			return false, state
		}
		for key, v := range perPod {
			if v != 1000 || !slices.ContainsFunc(pods, func(p string) bool { return strings.HasSuffix(key, "/"+node+"/"+p) }) {
				return false, state
			}
		}
		return true, state
	}
	eventually(t, 30*time.Second, "the scrape shows the three pods' vGPUs", func(context.Context) (bool, string, error) {
		ok, state := want("m-0", "m-1", "m-2")
		return ok, state, nil
	})
	zero := int64(0)
	if err := e.cs.CoreV1().Pods(e.ns).Delete(context.Background(), "m-1", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "m-1's series gone from the scrape", func(context.Context) (bool, string, error) {
		ok, state := want("m-0", "m-2")
		return ok, state, nil
	})
}
