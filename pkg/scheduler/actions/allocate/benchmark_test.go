//go:build unix

package allocate

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// BenchmarkAllocate measures allocate alone (no plugin work beyond the stubs, a binder that
// only counts) placing 10,000 pending pods on 1,000 nodes: as single-pod jobs, and as gangs
// of 8. It reports pods/s of wall time and pods per CPU-second of the process (getrusage
// around Execute alone), which holds still on a busy shared machine where wall time does
// not. The target is 10,000 pods/s on one core, as the README's benchmark table says.
//
//	go test ./pkg/scheduler/actions/allocate/ -run '^$' -bench BenchmarkAllocate -benchtime 5x
func BenchmarkAllocate(b *testing.B) {
	const nodeCount, podCount = 1000, 10000
	for _, gang := range []int{1, 8} {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d/gang=%d", nodeCount, podCount, gang), func(b *testing.B) {
			template := benchCluster(nodeCount, podCount, gang)
			act := New()
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bound := 0
				cache := &frameworktest.Cache{Snap: frameworktest.CloneCluster(template), OnBind: func(*api.TaskInfo) error { bound++; return nil }}
				ssn := frameworktest.OpenTiers(cache, benchConfig, standardTiers(nil)...)
				before := frameworktest.CPUTime(b)
				b.StartTimer()
				act.Execute(ssn)
				b.StopTimer()
				cpu += frameworktest.CPUTime(b) - before
				if bound != podCount {
					b.Fatalf("bound %d pods, want %d", bound, podCount)
				}
			}
			b.ReportMetric(float64(podCount*b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(podCount*b.N)/cpu.Seconds(), "pods/cpu-s")
		})
	}
}

// BenchmarkAllocateSettled measures a cycle with nothing to do: allocate over a session
// whose 10,000 pods are all placed already (target: under 5 ms).
func BenchmarkAllocateSettled(b *testing.B) {
	bound := 0
	cache := &frameworktest.Cache{Snap: benchCluster(1000, 10000, 8), OnBind: func(*api.TaskInfo) error { bound++; return nil }}
	ssn := frameworktest.OpenTiers(cache, benchConfig, standardTiers(nil)...)
	act := New()
	act.Execute(ssn)
	if bound != 10000 {
		b.Fatalf("bound %d pods, want 10000", bound)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		act.Execute(ssn)
	}
	if bound != 10000 {
		b.Fatalf("a settled cycle bound %d more pods", bound-10000)
	}
}

// benchConfig is the configuration of the benchmarks' sessions, before the stubs' tiers.
var benchConfig = conf.SchedulerConfiguration{Actions: "enqueue, allocate, backfill"}

// benchCluster: nodes of 32 cpu, 128 GiB, 110 pods; pods of 1 cpu and 2 GiB in Inqueue
// jobs of gang pods each (minMember = gang), one queue.
func benchCluster(nodeCount, podCount, gang int) *api.ClusterInfo {
	var groups []*schedulingv1beta1.PodGroup
	var pods []*corev1.Pod
	request := st.Resources("1", "2Gi")
	for j := 0; j*gang < podCount; j++ {
		name := fmt.Sprintf("job%05d", j)
		groups = append(groups, buildPodGroup(name, "q1", int32(gang), inqueue, j))
		for k := 0; k < gang; k++ {
			pods = append(pods, buildPod(fmt.Sprintf("%s-w-%d", name, k), name, request))
		}
	}
	return frameworktest.Objects{Nodes: nodes(nodeCount, st.Resources("32", "128Gi", "pods", "110")),
		Queues: []*schedulingv1beta1.Queue{buildQueue("q1", 0, 0)}, PodGroups: groups, Pods: pods}.ClusterInfo()
}
