//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/cache"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// BenchmarkCycleWithPendingGangs is volcano-sh/volcano #5940's shape: a full cluster and
// 10,000 gang pods that cannot fit, which every cycle must look at again. The binary's cache
// over fake clientsets, the chart's configuration and this binary's plugins, on
// BENCH_PENDING_NODES nodes (default 1,000) of test/workload/preempt.yaml with every GPU slot
// taken by a running pod (32 a node, each with its assignment), and 1,250 gangs of 8 one-slot
// pods. Two cases: the gangs' PodGroups Pending (enqueue looks at each and admits none) and
// Inqueue (allocate tries each gang on the nodes). Each iteration is one cycle (snapshot,
// actions, close): the gap between two cycles, which must stay under the schedule period
// (1 s). The status writes the cycles ask for are answered without being stored. It also
// reports the process's CPU time a cycle (garbage collection included), which holds still
// on a shared machine where wall time does not.
//
//	go test ./cmd/vc-scheduler/ -run '^$' -bench BenchmarkCycleWithPendingGangs -benchtime 5x
func BenchmarkCycleWithPendingGangs(b *testing.B) {
	nodes := 1000
	if v := os.Getenv("BENCH_PENDING_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_PENDING_NODES=%q: want a positive node count", v)
		}
		nodes = n
	}
	const gangs, gangSize = 1250, 8
	w := benchWorkload(b, "preempt.yaml")
	for _, phase := range []schedulingv1beta1.PodGroupPhase{schedulingv1beta1.PodGroupPending, schedulingv1beta1.PodGroupInqueue} {
		b.Run(fmt.Sprintf("podgroups=%s/nodes=%d/running=%d/pending=%d", phase, nodes, w.PodCount(nodes), gangs*gangSize), func(b *testing.B) {
			kube := kubefake.NewClientset()
			vc := vcfake.NewSimpleClientset() //nolint:staticcheck // NewClientset cannot store cluster-scoped Queues
			var binds atomic.Int64
			answerWrites(kube, vc, &binds)
			fullCluster(b, w, nodes, kube, vc)
			shape := w.Mix[0]
			shape.Gang = gangSize
			for g := range gangs {
				job := w.Job("pending", "volcano", fmt.Sprintf("gang-%04d", g), shape)
				job.PodGroup.Status.Phase = phase
				add(b, vc.Tracker(), job.PodGroup)
				for _, pod := range job.Pods {
					add(b, kube.Tracker(), pod)
				}
			}
			s := startScheduler(b, kube, vc)
			s.RunOnce() // the first cycle writes every gang's condition once
			b.ResetTimer()
			cpu := frameworktest.CPUTime(b)
			for b.Loop() {
				s.RunOnce()
			}
			cpu = frameworktest.CPUTime(b) - cpu
			b.StopTimer()
			if n := binds.Load(); n > 0 {
				b.Fatalf("%d pods bound on a full cluster", n)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/cycle")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/cycle")
		})
	}
}

// fullCluster stores nodes nodes of w, each GPU slot taken by a running pod of w's first
// wave (gangs of one) with its assignment, as the scheduler would have bound them.
func fullCluster(b *testing.B, w *workload.Workload, nodes int, kube *kubefake.Clientset, vc *vcfake.Clientset) {
	b.Helper()
	// Open, as Volcano's controller leaves it (the cache would create it without a state).
	add(b, vc.Tracker(), &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: schedulingv1beta1.QueueSpec{Weight: 1}, Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen}})
	for name, value := range w.PriorityClasses {
		add(b, kube.Tracker(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
	}
	shape := w.Mix[0]
	slots := int(w.Node.Split)
	for n := range nodes {
		node := w.NodeObject(fmt.Sprintf("node-%05d", n))
		add(b, kube.Tracker(), node)
		for i := range w.PodsPerNode {
			job := w.Job("fill", "volcano", fmt.Sprintf("%s-%02d", node.Name, i), shape)
			job.PodGroup.Status = schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupRunning, Running: 1}
			add(b, vc.Tracker(), job.PodGroup)
			assignment, err := vgpu.PodDevices{{{UUID: nvml.FakeUUID(node.Name, i/slots), Type: vgpu.DeviceTypeNVIDIA,
				UsedMemory: int32(shape.MemoryMiB), UsedCores: int32(shape.Cores)}}}.Encode()
			if err != nil {
				b.Fatal(err)
			}
			pod := job.Pods[0]
			pod.Spec.NodeName, pod.Status.Phase = node.Name, corev1.PodRunning
			pod.Annotations[vgpu.AssignedDevicesAnnotation] = assignment
			add(b, kube.Tracker(), pod)
		}
	}
}

// answerWrites answers the cache's writes (binds, pod conditions, PodGroup statuses, Events)
// without storing them: a fake watch holds only 100 events and panics past that. binds
// counts the Bindings.
func answerWrites(kube *kubefake.Clientset, vc *vcfake.Clientset, binds *atomic.Int64) {
	kube.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binds.Add(1)
		return true, action.(k8stesting.CreateAction).GetObject(), nil
	})
	answered := func(action k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil }
	kube.PrependReactor("patch", "pods", answered)
	kube.PrependReactor("create", "events", answered)
	kube.PrependReactor("patch", "events", answered)
	vc.PrependReactor("update", "podgroups", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, action.(k8stesting.UpdateAction).GetObject(), nil
	})
	vc.PrependReactor("update", "queues", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, action.(k8stesting.UpdateAction).GetObject(), nil
	})
}

// startScheduler starts the binary's cache over the clientsets, with the static device
// configuration (the chart's default) and the chart's scheduler configuration, and returns a
// scheduler over it once the cache has synced.
func startScheduler(b *testing.B, kube *kubefake.Clientset, vc *vcfake.Clientset) *scheduler.Scheduler {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	sc, err := cache.New(ctx, cache.Options{}, kube, vc)
	if err != nil {
		b.Fatal(err)
	}
	sc.AddDeviceDeriver(deviceshare.NewDeriver())
	registry := newRegistryWith(allocate.Options{}, sources{devices: deviceshare.NewStaticShared(), interPod: interPodSource(b)})
	for _, c := range registry.Components() {
		c.Start(ctx, sc)
	}
	cfg := chartConf(b, registry)
	for _, c := range registry.Components() {
		c.Configure(ctx, cfg)
	}
	sc.Run(ctx)
	if !sc.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	return scheduler.New(sc, func() *conf.SchedulerConfiguration { return cfg }, registry, nil, time.Second)
}

// add stores obj as the API server would, with a UID.
func add(b *testing.B, tracker k8stesting.ObjectTracker, obj runtime.Object) {
	b.Helper()
	if m, ok := obj.(metav1.Object); ok && m.GetUID() == "" {
		m.SetUID(types.UID(m.GetNamespace() + "/" + m.GetName()))
	}
	if err := tracker.Add(obj); err != nil {
		b.Fatal(err)
	}
}

// chartConf is the chart's scheduler configuration (config/volcano-scheduler.conf).
func chartConf(b testing.TB, registry *framework.Registry) *conf.SchedulerConfiguration {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "volcano-scheduler.conf"))
	if err != nil {
		b.Fatal(err)
	}
	cfg, _, err := conf.Parse(data, registry)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}
