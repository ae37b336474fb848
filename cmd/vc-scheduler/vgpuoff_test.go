package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// upstreamConf reads one of testdata/upstream-confs.
func upstreamConf(t *testing.T, file string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "upstream-confs", file))
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// vgpuOffCycle runs one cycle of the upstream conf file over two vGPU nodes with a 1-vGPU /
// 8192 MiB pod and a pod that asks only for cpu, each a PodGroup of one, and closes it as the
// scheduler does; it returns what was bound and the vGPU pod's job.
func vgpuOffCycle(t *testing.T, file string) ([]*api.TaskInfo, *api.JobInfo) {
	t.Helper()
	w, err := workload.Load(filepath.Join("..", "..", "test", "workload", "singles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ci := nodeCluster(w, 2)
	addJob(ci, w.Job("ns", "volcano", "gpu", w.Mix[0]))
	cpu := st.MakePodGroup().Namespace("ns").Name("cpu").Obj()
	cpu.Spec.MinMember, cpu.Spec.Queue = 1, "default"
	addJob(ci, workload.Job{PodGroup: cpu, Pods: []*corev1.Pod{st.Pod("cpu-0", "1", "1Gi").Group("cpu").Obj()}})

	registry := newRegistry(allocate.Options{})
	cfg, skipped, err := conf.Parse(upstreamConf(t, file), registry)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("%s: skipped %v, err %v", file, skipped, err)
	}
	cache := &frameworktest.Cache{Snap: ci}
	ssn := frameworktest.RunActions(t, cache, cfg, registry)
	framework.CloseSession(ssn)
	return cache.Bound, ssn.Jobs["ns/gpu"]
}

// Upstream's chart default conf (no deviceshare) on a cluster with vGPU nodes: the vGPU pod
// stays Pending, its PodGroup's Unschedulable condition naming the plugin it lacks, instead of
// being bound without an assignment; the cpu pod binds. With deviceshare in the file the vGPU
// pod binds with its assignment.
func TestConfWithoutDeviceshareKeepsVGPUPodsPending(t *testing.T) {
	bound, job := vgpuOffCycle(t, "01-chart-default.conf")
	if len(bound) != 1 || bound[0].Key() != "ns/cpu-0" {
		t.Fatalf("bound %v, want only ns/cpu-0", bound)
	}
	const reason = "0/2 nodes are unavailable: 2 pod ns/gpu-0 requests volcano.sh/vgpu-number, which only the deviceshare plugin places, " +
		"and the scheduler configuration in force does not turn it on."
	var cond *schedulingv1beta1.PodGroupCondition
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == schedulingv1beta1.PodGroupUnschedulableType {
			cond = &job.Status.Conditions[i]
		}
	}
	if cond == nil || !strings.HasSuffix(cond.Message, "Origin reason is gpu-0: "+reason) {
		t.Errorf("conditions %+v, want Unschedulable ending %q", job.Status.Conditions, reason)
	}

	bound, _ = vgpuOffCycle(t, "02-gpu-preempt-reclaim.conf")
	var keys []string
	for _, b := range bound {
		keys = append(keys, b.Key())
		if b.Key() == "ns/gpu-0" && b.BindAnnotations[vgpu.AssignedDevicesAnnotation] == "" {
			t.Errorf("with deviceshare: ns/gpu-0 bound without %s", vgpu.AssignedDevicesAnnotation)
		}
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"ns/cpu-0", "ns/gpu-0"}) {
		t.Errorf("with deviceshare: bound %q, want both pods", keys)
	}
}

// A file in force that does not schedule vGPU is reported once per load, as soon as a node
// has registered vGPU: one Warning Event however many cycles run, the gauge and /status. A
// reload is a new load; a file with deviceshare reports nothing.
func TestConfWithoutDeviceshareIsReportedOncePerLoad(t *testing.T) {
	chart := upstreamConf(t, "01-chart-default.conf")
	path := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
	write := func(text []byte) {
		t.Helper()
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(chart)
	nodes := 0
	recorder := record.NewFakeRecorder(20)
	report := newConfigReport(newConfigEvents(recorder, &options{}), path, func(string) int { return nodes }, vgpuEnabled)
	w, err := loadConfig(&options{schedulerConf: path}, newRegistry(allocate.Options{}), report)
	if err != nil {
		t.Fatal(err)
	}
	current := report.Checked(w.Current)
	cycles := func(n int) []string {
		for range n {
			current()
		}
		return drain(recorder)
	}
	gauge := func(want string) {
		t.Helper()
		served := prometheus.NewPedanticRegistry()
		served.MustRegister(report.Collectors()...)
		if err := testutil.GatherAndCompare(served, strings.NewReader(`
# HELP volcano_vgpu_unscheduled_nodes Nodes with vGPU registered while the scheduler configuration in force does not schedule vGPU (no deviceshare with deviceshare.VGPUEnable: true), so that pods requesting vGPU stay Pending
# TYPE volcano_vgpu_unscheduled_nodes gauge
volcano_vgpu_unscheduled_nodes `+want+"\n"), "volcano_vgpu_unscheduled_nodes"); err != nil {
			t.Error(err)
		}
	}
	status := func() string {
		rec := httptest.NewRecorder()
		report.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
		return rec.Body.String()
	}
	reload := func(text []byte) {
		t.Helper()
		write(text)
		if _, err := w.Reload(); err != nil {
			t.Fatal(err)
		}
		report.Loaded(w.Skipped())
	}

	if events := cycles(3); len(events) != 0 {
		t.Errorf("no vGPU node yet: events %q", events)
	}
	gauge("0")

	nodes = 2
	const message = "2 node(s) have registered vGPU, but the scheduler configuration in force does not schedule it " +
		"(no deviceshare plugin with deviceshare.VGPUEnable: true): pods that request vGPU stay Pending"
	if events := cycles(5); !slices.Equal(events, []string{"Warning VGPUSchedulingOff " + message}) {
		t.Errorf("5 cycles with 2 vGPU nodes: events %q, want one VGPUSchedulingOff", events)
	}
	gauge("2")
	if body := status(); !strings.Contains(body, "\nvGPU: not scheduled: "+message+"\n") {
		t.Errorf("/status\n%s\nlacks the vGPU line", body)
	}

	reload(append(chart, "# edited\n"...))
	if events := cycles(3); len(events) != 1 {
		t.Errorf("after a reload: events %q, want one VGPUSchedulingOff", events)
	}

	reload(upstreamConf(t, "02-gpu-preempt-reclaim.conf"))
	if events := cycles(3); len(events) != 0 {
		t.Errorf("with deviceshare: events %q", events)
	}
	gauge("0")
	if body := status(); strings.Contains(body, "vGPU:") {
		t.Errorf("with deviceshare, /status\n%s\nsays vGPU is not scheduled", body)
	}
}
