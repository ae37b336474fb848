package deviceshare

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// vgpuMetricNames are upstream's names and ours, written out so that a renamed metric fails the
// golden comparison instead of being filtered away.
var vgpuMetricNames = []string{
	"volcano_vgpu_device_shared_number", "volcano_vgpu_device_allocated_memory", "volcano_vgpu_device_allocated_cores",
	"volcano_vgpu_device_memory_limit", "volcano_vgpu_device_memory_allocation_for_a_certain_pod",
	"volcano_vgpu_device_core_allocation_for_a_certain_pod",
	// Ours: the part of the memory above that is context reserve.
	"volcano_vgpu_device_allocated_context_reserve", "volcano_vgpu_device_context_reserve_for_a_certain_pod",
}

// restartMetrics gives the vGPU metrics the state of a process just started: no series, and
// nothing remembered of earlier sessions.
func restartMetrics() {
	testShared = NewShared(defaultDevices)
	metricsRegistry = prometheus.NewRegistry()
	metricsRegistry.MustRegister(testShared.Collectors()...)
}

// metricsRegistry holds testShared's gauges.
var metricsRegistry *prometheus.Registry

func compareGolden(t *testing.T, file string) {
	t.Helper()
	golden, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer golden.Close()
	if err := testutil.GatherAndCompare(metricsRegistry, golden, vgpuMetricNames...); err != nil {
		t.Error(err)
	}
}

// gaugeValue is the value of the series of gauge name with the label values devID, NodeName
// and, for a per-pod gauge, podName, as a scrape of reg reads it; ok is false when there is
// no such series.
func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) (value float64, ok bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"devID", "NodeName", "podName"}[:len(labels)]
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, pair := range m.GetLabel() {
				i := slices.Index(names, pair.GetName())
				if i < 0 || labels[i] != pair.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func countVGPUSeries(t *testing.T) int {
	t.Helper()
	n, err := testutil.GatherAndCount(metricsRegistry, vgpuMetricNames...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// metricsCluster: n1 has 2 GPUs of 30,000 MiB shared by pod a (GPU 0), a pod a of another
// namespace (GPU 0), b (one container on each GPU) and c (two containers on GPU 1); n2 has
// one GPU of 81,920 MiB, free; n3 has no GPU. running is the pods bound to n2.
func metricsCluster(without string, running ...*corev1.Pod) []*api.NodeInfo {
	otherA := using("a", "x", dev(0, "500", "5"))
	otherA.Namespace, otherA.UID = "other", "uid-other-a"
	n1Pods := []*corev1.Pod{
		using("a", "x", dev(0, "1000", "30")),
		otherA,
		using("b", "x", dev(0, "2000", "0")+";"+dev(1, "3000", "0")),
		using("c", "x", dev(1, "500", "10")+";"+dev(1, "500", "10")),
	}
	var nodes []*api.NodeInfo
	var kept []*corev1.Pod
	for _, p := range n1Pods {
		if p.Name != without || p.Namespace != testNS {
			kept = append(kept, p)
		}
	}
	nodes = append(nodes, nodeInfo(gpuNode("n1", 0, gpus(2, 10, 30000, h200)), kept...))
	if without != "n2" {
		nodes = append(nodes, nodeInfo(gpuNode("n2", 2, gpus(1, 10, 81920, h200)), running...))
	}
	return append(nodes, nodeInfo(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}))
}

func clones(nodes []*api.NodeInfo) []*api.NodeInfo {
	c := make([]*api.NodeInfo, len(nodes))
	for i, n := range nodes {
		c[i] = n.Clone()
	}
	return c
}

// TestVGPUMetrics: a session close publishes every GPU's and every pod's bookings, the
// session's placements included (golden file); a restarted scheduler that finds the placed
// pod bound publishes the same; a deleted pod and a deleted node lose their series; a
// placement whose bind never reached the cache is gone at the next close; turning vGPU
// scheduling off deletes everything.
func TestVGPUMetrics(t *testing.T) {
	restartMetrics()
	t.Cleanup(restartMetrics)

	base := metricsCluster("")
	cache := &frameworktest.Cache{Snap: snapshot(clones(base), 1, pod("new", "pg", vgpuCtr("main", 1, 4000, 50)))}
	ssn := openDeviceSession(cache)
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(taskOf(t, ssn, "new"), ssn.Nodes["n2"]); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()
	framework.CloseSession(ssn)
	compareGolden(t, "testdata/metrics.golden")
	if len(cache.Bound) != 1 {
		t.Fatalf("bound %d pods, want 1", len(cache.Bound))
	}
	assignment := cache.Bound[0].BindAnnotations[vgpu.AssignedDevicesAnnotation]
	bound := runningWith(pod("new", "pg", vgpuCtr("main", 1, 4000, 50)), "n2", assignment)

	t.Run("bind never reached the cache", func(t *testing.T) {
		// The cache's ledgers are those of the first session: the placement left no trace.
		ssn := openDeviceSession(&frameworktest.Cache{Snap: snapshot(clones(base), 1)})
		framework.CloseSession(ssn)
		if got, ok := gaugeValue(t, metricsRegistry, "volcano_vgpu_device_shared_number", uuid(2), "n2"); !ok || got != 0 {
			t.Errorf("n2's GPU shared by %v (series found: %v), want 0", got, ok)
		}
		if n, err := testutil.GatherAndCount(metricsRegistry, "volcano_vgpu_device_memory_allocation_for_a_certain_pod"); err != nil || n != 4 {
			t.Errorf("%d pod memory series (%v), want the 4 of n1", n, err)
		}
	})

	t.Run("restart", func(t *testing.T) {
		restartMetrics()
		if n := countVGPUSeries(t); n != 0 {
			t.Fatalf("%d series after the restart", n)
		}
		restarted := metricsCluster("", bound)
		framework.CloseSession(openDeviceSession(&frameworktest.Cache{Snap: snapshot(clones(restarted), 1)}))
		compareGolden(t, "testdata/metrics.golden")
		// The cache derived no node again: the next close publishes none, and the series stay.
		framework.CloseSession(openDeviceSession(&frameworktest.Cache{Snap: snapshot(clones(restarted), 1)}))
		compareGolden(t, "testdata/metrics.golden")
	})

	t.Run("pod and node deleted", func(t *testing.T) {
		cluster := metricsCluster("b", bound)
		var nodes []*api.NodeInfo
		for _, n := range cluster {
			if n.Name != "n2" {
				nodes = append(nodes, n)
			}
		}
		framework.CloseSession(openDeviceSession(&frameworktest.Cache{Snap: snapshot(nodes, 1)}))
		compareGolden(t, "testdata/metrics_deleted.golden")
	})

	t.Run("vGPU scheduling off", func(t *testing.T) {
		cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName}}}}}
		framework.CloseSession(framework.OpenSession(&frameworktest.Cache{Snap: snapshot(metricsCluster("", bound), 1)}, cfg, registry(nil), nil))
		if n := countVGPUSeries(t); n != 0 {
			t.Errorf("%d series with vGPU scheduling off, want 0", n)
		}
	})
}

// TestVGPUMetricsPodsOfOneName: the per-pod series are labelled by pod name only, so a GPU
// shared by pods of one name, bound in different namespaces or placed by the session, and by
// the containers of one pod, shows one series per name with their sum. A collector sending
// the same label set twice would fail every scrape, so this gathers through a registry.
func TestVGPUMetricsPodsOfOneName(t *testing.T) {
	restartMetrics()
	t.Cleanup(restartMetrics)

	inNamespace := func(ns string, p *corev1.Pod) *corev1.Pod {
		p.Namespace, p.UID = ns, types.UID("uid-"+ns+"-"+p.Name)
		return p
	}
	running := []*corev1.Pod{
		inNamespace("one", runningWith(pod("w", "x"), "n1", dev(0, "1000", "10"))),
		// Two containers, each with a vGPU of GPU 0.
		inNamespace("two", runningWith(pod("w", "x"), "n1", dev(0, "2000", "20")+";"+dev(0, "3000", "30"))),
		inNamespace("three", runningWith(pod("w", "x"), "n1", dev(1, "4000", "40"))),
	}
	node := nodeInfo(gpuNode("n1", 0, gpus(2, 10, 30000, h200)), running...)
	// The session places a fourth w, of the test namespace, on GPU 0 as well.
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{node}, 1, pod("w", "pg", vgpuCtr("main", 1, 500, 5)))}
	ssn := openDeviceSession(cache)
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(taskOf(t, ssn, "w"), ssn.Nodes["n1"]); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()
	framework.CloseSession(ssn)
	if got := cache.Bound[0].BindAnnotations[vgpu.AssignedDevicesAnnotation]; got != dev(0, "500", "5") {
		t.Fatalf("placed on %q, want GPU 0 (binpack)", got)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(testShared.Collectors()...)
	for _, tt := range []struct {
		gauge string
		gpu   int
		want  float64
	}{
		{"volcano_vgpu_device_memory_allocation_for_a_certain_pod", 0, 1000 + 2000 + 3000 + 500},
		{"volcano_vgpu_device_core_allocation_for_a_certain_pod", 0, 10 + 20 + 30 + 5},
		{"volcano_vgpu_device_memory_allocation_for_a_certain_pod", 1, 4000},
		{"volcano_vgpu_device_core_allocation_for_a_certain_pod", 1, 40},
	} {
		if got, ok := gaugeValue(t, reg, tt.gauge, uuid(tt.gpu), "n1", "w"); !ok || got != tt.want {
			t.Errorf("%s on GPU %d = %v (series found: %v), want %v", tt.gauge, tt.gpu, got, ok, tt.want)
		}
	}
	for gauge, want := range map[string]int{
		"volcano_vgpu_device_memory_allocation_for_a_certain_pod": 2, "volcano_vgpu_device_core_allocation_for_a_certain_pod": 2,
	} {
		if n, err := testutil.GatherAndCount(reg, gauge); err != nil || n != want {
			t.Errorf("%d series of %s (%v), want %d, one per GPU", n, gauge, err, want)
		}
	}
	if got, ok := gaugeValue(t, reg, "volcano_vgpu_device_shared_number", uuid(0), "n1"); !ok || got != 4 {
		t.Errorf("GPU 0 shared by %v (series found: %v), want 4 vGPUs", got, ok)
	}
}

// TestVGPUMetricsScrapeDuringClose: scrapes run on the HTTP server's goroutines while
// sessions close on the scheduler's; run with -race. Every scrape sees whole nodes.
func TestVGPUMetricsScrapeDuringClose(t *testing.T) {
	nodes := busyCluster(20, 2)
	p := policyPlugin(t, PolicyBinpack, 1)
	p.shared = NewShared(defaultDevices)
	reg := prometheus.NewRegistry()
	reg.MustRegister(p.shared.Collectors()...)
	done := make(chan struct{})
	scraped := make(chan error)
	go func() {
		for {
			select {
			case <-done:
				close(scraped)
				return
			default:
			}
			n, err := testutil.GatherAndCount(reg, "volcano_vgpu_device_memory_allocation_for_a_certain_pod")
			if err == nil && n%16 != 0 {
				err = fmt.Errorf("%d pod series, not whole nodes of 16", n)
			}
			if err != nil {
				scraped <- err
			}
		}
	}()
	for i := range 50 {
		for _, n := range nodes {
			// What the cache's deriving the node again looks like to the metrics.
			l := ledgerOf(n)
			l.derived = &derivation{bookings: l.derived.bookings}
		}
		if i%10 == 9 {
			p.publishMetrics(nil, nil)
		} else {
			p.publishMetrics(nodes, nil)
		}
	}
	close(done)
	for err := range scraped {
		t.Error(err)
	}
}

// TestPendingVGPUMetrics: a session close publishes, per job, its vGPU pods still waiting for
// a node and the age of the oldest as a scrape reads it; a pod asking no vGPU is not counted,
// and the series go once nothing of the job waits.
func TestPendingVGPUMetrics(t *testing.T) {
	restartMetrics()
	t.Cleanup(restartMetrics)
	testShared.metrics.now = func() time.Time { return fixedClock }
	tooBig := func(name string, age time.Duration) *corev1.Pod {
		p := pod(name, "pg", vgpuCtr("main", 1, 200000, 0))
		p.CreationTimestamp = metav1.NewTime(fixedClock.Add(-age))
		return p
	}
	cpuOnly := pod("cpu", "pg", ctr("main", "cpu=1"))
	cpuOnly.CreationTimestamp = metav1.NewTime(fixedClock.Add(-time.Hour))
	nodes := []*api.NodeInfo{nodeInfo(gpuNode("n1", 0, gpus(1, 10, 30000, h200)))}
	framework.CloseSession(openDeviceSession(&frameworktest.Cache{Snap: snapshot(clones(nodes), 1,
		tooBig("big-0", 90*time.Second), tooBig("big-1", 30*time.Second), cpuOnly)}))
	want := `# HELP volcano_vgpu_job_oldest_pending_seconds Seconds since the oldest of the job's pods asking for vGPU that wait for a node was created
# TYPE volcano_vgpu_job_oldest_pending_seconds gauge
volcano_vgpu_job_oldest_pending_seconds{job_name="pg",job_namespace="` + testNS + `",queue="default"} 90
# HELP volcano_vgpu_job_pending_pods Pods of the job asking for vGPU that wait for a node (Pending or Pipelined)
# TYPE volcano_vgpu_job_pending_pods gauge
volcano_vgpu_job_pending_pods{job_name="pg",job_namespace="` + testNS + `",queue="default"} 2
`
	names := []string{"volcano_vgpu_job_pending_pods", "volcano_vgpu_job_oldest_pending_seconds"}
	if err := testutil.GatherAndCompare(metricsRegistry, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	framework.CloseSession(openDeviceSession(&frameworktest.Cache{Snap: snapshot(clones(nodes), 1, cpuOnly)}))
	if n, err := testutil.GatherAndCount(metricsRegistry, names...); err != nil || n != 0 {
		t.Errorf("%d pending series (%v) once no vGPU pod waits, want 0", n, err)
	}
}
