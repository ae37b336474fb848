//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// BenchmarkCycle measures one whole scheduling cycle of this binary (open session, enqueue,
// allocate, backfill, close with its status updates) with every plugin a configuration names
// (predicates with kube-scheduler's inter-pod filters, as the binary has them; the volume
// plugins are BenchmarkCycleWithClaims'), over the benchmark workloads (test/workload/*.yaml, shared with make bench-e2e) on 1,000
// nodes of 8 GPUs (81,920 MiB, split 10): 10,000 new pods with one 8,192 MiB vGPU each, alone,
// in gangs of 8, or mixed; binds counted by a fake cache. Two configurations: the built-in one
// a cluster with vGPU nodes gets without a file (upstream's default with deviceshare; under
// upstream's default alone vGPU pods stay Pending) and lab 8's seed, which adds deviceshare
// with binpack. It reports pods/s of wall time and pods per CPU-second; the README's target is
// 10,000 pods/s on one core.
//
//	go test ./cmd/vc-scheduler/ -run '^$' -bench BenchmarkCycle -benchtime 3x
func BenchmarkCycle(b *testing.B) {
	const nodeCount = 1000
	registry := newRegistryWith(allocate.Options{}, sources{devices: deviceshare.NewStaticShared(), interPod: interPodSource(b)})
	lab8, _, err := conf.Parse(lab8Seed(b), registry)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  *conf.SchedulerConfiguration
	}{{"builtin-conf", builtinWithVGPU()}, {"lab8-conf", lab8}} {
		for _, file := range []string{"singles.yaml", "gangs.yaml", "gpu-mix.yaml"} {
			w := benchWorkload(b, file)
			podCount := w.PodCount(nodeCount)
			b.Run(fmt.Sprintf("%s/%s/nodes=%d/pods=%d", c.name, w.Name, nodeCount, podCount), func(b *testing.B) {
				benchCycles(b, registry, c.cfg, workloadCluster(w, nodeCount))
			})
		}
	}
}

// benchCycles runs one cycle per iteration on a copy of template under cfg, requires every
// pod bound, and reports pods/s of wall time and pods per CPU-second.
func benchCycles(b *testing.B, registry *framework.Registry, cfg *conf.SchedulerConfiguration, template *api.ClusterInfo) {
	podCount := 0
	for _, job := range template.Jobs {
		podCount += len(job.Tasks)
	}
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bound := 0
		cache := &frameworktest.Cache{Snap: frameworktest.CloneCluster(template), OnBind: func(*api.TaskInfo) error { bound++; return nil }}
		s := scheduler.New(cache, func() *conf.SchedulerConfiguration { return cfg }, registry, nil, 0)
		before := frameworktest.CPUTime(b)
		b.StartTimer()
		s.RunOnce()
		b.StopTimer()
		cpu += frameworktest.CPUTime(b) - before
		if bound != podCount {
			b.Fatalf("bound %d pods, want %d", bound, podCount)
		}
	}
	b.ReportMetric(float64(podCount*b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(podCount*b.N)/cpu.Seconds(), "pods/cpu-s")
}

// lab8Seed is the text of lab 8's seed scheduler.conf: deviceshare with binpack after
// upstream's default plugins.
func lab8Seed(b *testing.B) []byte {
	seed, err := os.ReadFile(filepath.Join("..", "..", "config", "lab8-scheduler.conf"))
	if err != nil {
		b.Fatal(err)
	}
	return seed
}

// benchWorkload reads one of the benchmarks' workload files.
func benchWorkload(b testing.TB, file string) *workload.Workload {
	w, err := workload.Load(filepath.Join("..", "..", "test", "workload", file))
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// workloadCluster is the snapshot of a run of w on nodeCount nodes: every job Pending in the
// default queue.
func workloadCluster(w *workload.Workload, nodeCount int) *api.ClusterInfo {
	ci := nodeCluster(w, nodeCount)
	for _, job := range w.Jobs("bench", "volcano", w.PodCount(nodeCount)) {
		addJob(ci, job)
	}
	return ci
}

// nodeCluster is a cluster without pods: the default queue, and nodeCount nodes of w's shape
// whose GPU ledgers are derived as the cache derives them.
func nodeCluster(w *workload.Workload, nodeCount int) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	ci.Queues["default"] = api.NewQueueInfo(&schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: schedulingv1beta1.QueueSpec{Weight: 1}, Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen}})
	deriver := deviceshare.NewDeriver()
	for i := range nodeCount {
		n := api.NewNodeInfo(w.NodeObject(fmt.Sprintf("node-%04d", i)))
		n.Devices = map[string]api.Devices{deviceshare.PluginName: deriver.Derive(n)}
		ci.Nodes[n.Name] = n
		ci.NodeList = append(ci.NodeList, n)
	}
	return ci
}

// addJob adds a workload job to the snapshot as the cache would hold it: a Pending PodGroup
// and Pending pods with their UIDs.
func addJob(ci *api.ClusterInfo, job workload.Job) {
	pg := job.PodGroup
	pg.Status.Phase = schedulingv1beta1.PodGroupPending
	info := api.NewJobInfo(api.NewJobID(pg.Namespace, pg.Name))
	info.SetPodGroup(pg, pg.Spec.Queue)
	for _, pod := range job.Pods {
		pod.UID = types.UID(pod.Namespace + "-" + pod.Name)
		pod.Status.Phase = corev1.PodPending
		info.AddTask(api.NewTaskInfo(pod))
	}
	ci.Jobs[info.UID] = info
}
