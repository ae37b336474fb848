package deviceshare

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
)

// busyCluster is nodes of 8 H200s (81,920 MiB, split 10), each GPU shared by podsPerGPU
// running pods of one vGPU of 8000 MiB and 25% of the cores, with their ledgers derived.
func busyCluster(nodeCount, podsPerGPU int) map[string]*api.NodeInfo {
	nodes := make(map[string]*api.NodeInfo, nodeCount)
	for n := range nodeCount {
		name := fmt.Sprintf("n%04d", n)
		var pods []*corev1.Pod
		for g := range 8 {
			for k := range podsPerGPU {
				p := pod(fmt.Sprintf("%s-g%d-p%d", name, g, k), "pg", vgpuCtr("main", 1, 8000, 25))
				pods = append(pods, runningWith(p, name, dev(8*n+g, "8000", "25")))
			}
		}
		nodes[name] = nodeInfo(gpuNode(name, 8*n, gpus(8, 10, 81920, h200)), pods...)
	}
	return nodes
}

// BenchmarkSessionCloseVGPU measures what the plugin adds to a session's close on 1,000
// nodes of 8 GPUs, each GPU shared by 2 pods (16,000 pods; 32,000 GPU series and 32,000 pod
// series): publishing the vGPU metrics when no node changed since the last close (an idle
// cycle), and when every node did (the first close after a start, or a cycle that placed
// pods everywhere); and the queue usage of every pod.
//
//	go test ./pkg/scheduler/plugins/deviceshare/ -run '^$' -bench BenchmarkSessionCloseVGPU
func BenchmarkSessionCloseVGPU(b *testing.B) {
	nodes := busyCluster(1000, 2)
	p := policyPlugin(b, PolicyBinpack, 1)
	b.Cleanup(func() { p.publishMetrics(nil, nil) })
	p.publishMetrics(nodes, nil)
	b.Run("metrics-unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			p.publishMetrics(nodes, nil)
		}
	})
	b.Run("metrics-all-changed", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			for _, n := range nodes {
				// What the cache's deriving the node again looks like to the metrics.
				l := ledgerOf(n)
				l.derived = &derivation{bookings: l.derived.bookings}
			}
			b.StartTimer()
			p.publishMetrics(nodes, nil)
		}
	})
	b.Run("queue-usage", func(b *testing.B) {
		list := make([]*api.NodeInfo, 0, len(nodes))
		for _, n := range nodes {
			list = append(list, n)
		}
		ssn := openDeviceSession(&frameworktest.Cache{Snap: snapshot(list, 1)})
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			// As the session sums its queues' allocations.
			total := api.EmptyResource()
			for _, n := range list {
				for _, t := range n.Tasks {
					ssn.AddQueueUsage(total, t)
				}
			}
			if got := total.Get(resMem); got != 16000*8000e3 {
				b.Fatalf("vgpu-memory %v, want %v", got, 16000*8000e3)
			}
		}
	})
}

// BenchmarkVGPUMetricsMemory measures the memory the vGPU metrics cost on 1,000 nodes of 8
// GPUs, each GPU shared by 10 pods (80,000 pods; 32,000 GPU series and 160,000 pod series):
// "publish" is a first close, every node new, with retained-B the heap its state keeps live
// until the next one (what the scheduler's resident memory pays); "scrape" is one Gather of
// the series through a registry.
//
//	go test ./pkg/scheduler/plugins/deviceshare/ -run '^$' -bench BenchmarkVGPUMetricsMemory -benchtime 5x
func BenchmarkVGPUMetricsMemory(b *testing.B) {
	nodes := busyCluster(1000, 10)
	p := policyPlugin(b, PolicyBinpack, 1)
	b.Run("publish", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			p.shared = NewShared(defaultDevices)
			b.StartTimer()
			p.publishMetrics(nodes, nil)
		}
		b.StopTimer()
		with := liveHeap()
		p.shared = nil
		b.ReportMetric(float64(with)-float64(liveHeap()), "retained-B")
	})
	b.Run("scrape", func(b *testing.B) {
		p.shared = NewShared(defaultDevices)
		p.publishMetrics(nodes, nil)
		reg := prometheus.NewRegistry()
		reg.MustRegister(p.shared.Collectors()...)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// liveHeap is the heap held by live objects, after a collection has freed the rest.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
