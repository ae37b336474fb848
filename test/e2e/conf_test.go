//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// upstreamConf is one of the upstream-style scheduler configurations the scheduler's golden
// test loads (cmd/vc-scheduler/testdata/upstream-confs).
func upstreamConf(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "cmd", "vc-scheduler", "testdata", "upstream-confs", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// vgpuPlaced binds one vGPU pod on a fresh GPU node and checks that it carries its
// assignment: vGPU scheduling is on.
func (e *schedulerEnv) vgpuPlaced(name string, gpus map[string][]vgpu.NodeDevice) {
	e.t.Helper()
	e.vgpuGang(name, "", 1, 1000, 10)
	e.waitBound(name+"-", 1, 30*time.Second)
	if bound, problems, err := e.checkLedger(context.Background(), gpus); err != nil || len(problems) > 0 || bound == 0 {
		e.t.Errorf("ledger: %d bound, problems %v, err %v: vGPU scheduling is off", bound, problems, err)
	}
}

// A cluster's conf that names an action and plugins this scheduler lacks (shuffle; usage,
// rescheduling, network-topology-aware) runs without them and with its deviceshare: vGPU pods
// get their assignment. The operator reads what was skipped, and what it would have done, in
// the Warning Events, the real binary's /metrics and its /status page.
func TestUpstreamConfWithMissingActionsKeepsVGPU(t *testing.T) {
	e := newSchedulerEnv(t)
	node := e.name + "-gpu"
	gpus := map[string][]vgpu.NodeDevice{node: e.gpuNode("gpu", 2, 10, 8192, 0)}
	metricsAddr, healthzAddr := freeAddress(t), freeAddress(t)
	sched, path := e.scheduler(upstreamConf(t, "05-newer-plugins.conf"), "--enable-metrics", "--listen-address", metricsAddr,
		"--enable-healthz", "--healthz-address", healthzAddr)
	e.vgpuPlaced("sliced", gpus)

	for _, action := range []string{"shuffle"} {
		want := `actions: action "` + action + `" is skipped: not implemented by this scheduler; in Volcano it `
		waitEvent(t, e.cs, 20*time.Second, "volcano-system", "involvedObject.name="+e.name, "SkippedSchedulerAction "+action,
			func(ev corev1.Event) bool {
				return ev.Type == corev1.EventTypeWarning && ev.Reason == "SkippedSchedulerAction" && strings.HasPrefix(ev.Message, want)
			})
	}
	if strings.Contains(sched.log.String(), "rejected") {
		t.Errorf("the file was rejected:\n%s", tail(sched.log.String(), 20))
	}

	families := parseScrape(t, scrape(t, "http://"+metricsAddr+"/metrics"))
	got := map[string]float64{}
	for _, m := range families["volcano_scheduler_conf_skipped"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["kind"]+" "+labels["name"]] = m.GetGauge().GetValue()
	}
	want := map[string]float64{"action shuffle": 1, "plugin network-topology-aware": 1, "plugin usage": 1, "plugin rescheduling": 1}
	if !maps.Equal(got, want) {
		t.Errorf("volcano_scheduler_conf_skipped = %v, want %v", got, want)
	}
	if builtin := families["volcano_scheduler_conf_builtin"]; builtin == nil || sum(builtin) != 0 {
		t.Errorf("volcano_scheduler_conf_builtin = %v, want 0: the file is in force", builtin)
	}

	status := scrape(t, "http://"+healthzAddr+"/status")
	for _, line := range []string{"configuration: " + path + ", in force since ", "skipped: 4\n", "  action shuffle: ", "  plugin usage: "} {
		if !strings.Contains(status, line) {
			t.Errorf("/status\n%s\nlacks %q", status, line)
		}
	}
}

// A file that cannot be used at all leaves the built-in configuration in force; with a node
// whose device plugin registered vGPU, that one schedules vGPU too, so no vGPU pod is bound
// without its assignment.
func TestUnusableConfKeepsVGPUOn(t *testing.T) {
	e := newSchedulerEnv(t)
	node := e.name + "-gpu"
	gpus := map[string][]vgpu.NodeDevice{node: e.gpuNode("gpu", 1, 10, 8192, 0)}
	healthzAddr := freeAddress(t)
	_, path := e.scheduler("actions: [enqueue\n", "--enable-healthz", "--healthz-address", healthzAddr)
	waitEvent(t, e.cs, 20*time.Second, "volcano-system", "involvedObject.name="+e.name, "InvalidSchedulerConfig event",
		func(ev corev1.Event) bool {
			return ev.Reason == "InvalidSchedulerConfig" && strings.HasPrefix(ev.Message, "scheduler configuration "+path+": parse: ")
		})
	e.vgpuPlaced("builtin", gpus)
	status := scrape(t, "http://"+healthzAddr+"/status")
	if !strings.HasPrefix(status, "configuration: built-in, with deviceshare (nodes with vGPU registered: 1)\n") {
		t.Errorf("/status\n%s\nwant the built-in configuration with deviceshare", status)
	}
}

// Upstream's chart default conf has no deviceshare. On a cluster whose device plugin has
// registered vGPU, the real binary keeps a vGPU pod Pending, its PodGroup saying which plugin
// the conf lacks, instead of binding it without an assignment, while a cpu pod binds; the
// operator reads it once in a VGPUSchedulingOff Warning Event, the
// volcano_vgpu_unscheduled_nodes gauge and /status.
func TestChartDefaultConfHoldsVGPUPods(t *testing.T) {
	e := newSchedulerEnv(t)
	e.gpuNode("gpu", 1, 10, 8192, 0)
	metricsAddr, healthzAddr := freeAddress(t), freeAddress(t)
	e.scheduler(upstreamConf(t, "01-chart-default.conf"), "--enable-metrics", "--listen-address", metricsAddr,
		"--enable-healthz", "--healthz-address", healthzAddr)
	e.vgpuGang("sliced", "", 1, 1000, 0)
	e.gang("plain", "", 1, 1, "1", nil)
	e.waitBound("plain-", 1, 60*time.Second)

	reason := fmt.Sprintf("pod %s/sliced-0 requests %s, which only the deviceshare plugin places, "+
		"and the scheduler configuration in force does not turn it on.", e.ns, vgpu.DefaultCountResource)
	e.podGroup("sliced", 30*time.Second, "Unschedulable naming deviceshare", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, reason)
	})
	if bound, _, err := e.boundPods(context.Background(), "sliced-"); err != nil || bound != 0 {
		t.Errorf("sliced: %d pods bound (%v) without deviceshare, want none", bound, err)
	}
	message := "1 node(s) have registered vGPU, but the scheduler configuration in force does not schedule it"
	waitEvent(t, e.cs, 20*time.Second, "volcano-system", "involvedObject.name="+e.name, "a VGPUSchedulingOff Event",
		func(ev corev1.Event) bool {
			return ev.Type == corev1.EventTypeWarning && ev.Reason == "VGPUSchedulingOff" && strings.HasPrefix(ev.Message, message)
		})
	families := parseScrape(t, scrape(t, "http://"+metricsAddr+"/metrics"))
	if g := families["volcano_vgpu_unscheduled_nodes"]; g == nil || sum(g) != 1 {
		t.Errorf("volcano_vgpu_unscheduled_nodes = %v, want 1", g)
	}
	if status := scrape(t, "http://"+healthzAddr+"/status"); !strings.Contains(status, "\nvGPU: not scheduled: "+message) {
		t.Errorf("/status\n%s\nlacks the vGPU line", status)
	}
}
