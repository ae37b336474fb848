//go:build unix

package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/cache"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// BenchmarkCycleAfterOnePodEvent measures what one pod event costs the cycle after it, the
// performance target "a cycle costs what changed": the binary's cache over fake clientsets,
// the chart's configuration and this binary's plugins, on BENCH_EVENT_NODES nodes (default
// 1,000; the target's larger scale is 5,000) of test/workload/singles.yaml, each running its
// 10 single-pod jobs (10,000 or 50,000 bound pods with their assignments, a node's pods on its
// GPUs in turn, so that every GPU holds one), alone and beside 1,250 gangs of 8 pods of a whole
// GPU's memory (Inqueue) that cannot fit, as no GPU is free. Each iteration is one cycle after
// one event, the event and the undoing of it (with a cycle of its own) left out of the
// measure:
//   - pod-created: a single-pod job that fits (its PodGroup Pending with minResources, and its
//     pod) is created; the cycle enqueues and binds it. The Binding lands as the API server's
//     would, the pod then shows its node.
//   - pod-deleted: a running pod of a GPU that keeps another is deleted.
//
// The queues' allocation is summed in the first cycle only (a cost of the period, not of an
// event); status writes other than Bindings are answered without being stored, and the
// gangs' Unschedulable status, sent once, is not sent again. It reports the process's CPU time
// and the wall time of the measured cycles (ms/cycle; ns/op is the same wall time).
//
//	go test ./cmd/vc-scheduler/ -run '^$' -bench BenchmarkCycleAfterOnePodEvent -benchtime 20x
func BenchmarkCycleAfterOnePodEvent(b *testing.B) {
	nodes := benchNodes(b, "BENCH_EVENT_NODES")
	w := benchWorkload(b, "singles.yaml")
	for _, pending := range []int{0, pendingGangs * pendingGangSize} {
		b.Run(fmt.Sprintf("nodes=%d/bound=%d/pending=%d", nodes, w.PodCount(nodes), pending), func(b *testing.B) {
			e := &eventBench{w: w, kube: kubefake.NewClientset(),
				vc: vcfake.NewSimpleClientset()} //nolint:staticcheck // NewClientset cannot store cluster-scoped Queues
			var answered atomic.Int64 // Bindings are stored instead, below
			answerWrites(e.kube, e.vc, &answered)
			e.kube.PrependReactor("create", "pods", e.storeBinding)
			runningCluster(b, w, nodes, e.kube, e.vc)
			if pending > 0 {
				whole := w.Mix[0]
				whole.MemoryMiB = int64(w.Node.GPUMemoryMiB)
				addPendingGangs(b, w, whole, schedulingv1beta1.PodGroupInqueue, e.kube, e.vc)
			}
			e.s, e.sc = startScheduler(b, e.kube, e.vc, time.Hour)
			e.s.RunOnce() // sums the queues, writes every gang's condition once
			b.Run("event=pod-created", e.podCreated)
			b.Run("event=pod-deleted", e.podDeleted)
		})
	}
}

// eventBench is one cluster of BenchmarkCycleAfterOnePodEvent.
type eventBench struct {
	w    *workload.Workload
	kube *kubefake.Clientset
	vc   *vcfake.Clientset
	s    *scheduler.Scheduler
	sc   *cache.SchedulerCache
	// binds counts the Bindings stored.
	binds atomic.Int64
}

var (
	podsResource      = corev1.SchemeGroupVersion.WithResource("pods")
	podGroupsResource = schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")
)

// storeBinding sets the pod's node and the Binding's annotations, as the API server does.
func (e *eventBench) storeBinding(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	binding := action.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
	obj, err := e.kube.Tracker().Get(podsResource, binding.Namespace, binding.Name)
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	pod.Spec.NodeName = binding.Target.Name
	for k, v := range binding.Annotations {
		pod.Annotations[k] = v
	}
	if err := e.kube.Tracker().Update(podsResource, pod, pod.Namespace); err != nil {
		return true, nil, err
	}
	e.binds.Add(1)
	return true, binding, nil
}

// podCreated: a single-pod job created before each cycle; deleted after it, once bound.
func (e *eventBench) podCreated(b *testing.B) {
	var m cycleMeasure
	for b.Loop() {
		b.StopTimer()
		job := e.w.Job("bench", "volcano", fmt.Sprintf("new-%d", m.cycles), e.w.Mix[0])
		job.PodGroup.Status.Phase = schedulingv1beta1.PodGroupPending
		pod := job.Pods[0]
		// The PodGroup and the pod arrive; the cycle binds the pod (a change the cache counts)
		// and the pod shows its node.
		before := e.sc.Changes()
		add(b, e.vc.Tracker(), job.PodGroup)
		add(b, e.kube.Tracker(), pod)
		e.waitChanges(b, before+2, "the new job taken")
		m.cycle(b, e.s)
		e.waitChanges(b, before+4, "the new pod bound and shown bound")
		before = e.sc.Changes()
		e.delete(b, e.kube.Tracker(), podsResource, pod.Namespace, pod.Name)
		e.delete(b, e.vc.Tracker(), podGroupsResource, job.PodGroup.Namespace, job.PodGroup.Name)
		e.waitChanges(b, before+2, "the new job deleted")
		e.s.RunOnce()
		b.StartTimer()
	}
	m.report(b)
}

// podDeleted: a running pod deleted before each cycle, and stored again after it. Pod 8 of
// the first node shares GPU 0 with pod 0: no GPU is left free for a gang.
func (e *eventBench) podDeleted(b *testing.B) {
	obj, err := e.kube.Tracker().Get(podsResource, "fill", "node-00000-08-0")
	if err != nil {
		b.Fatal(err)
	}
	pod := obj.(*corev1.Pod)
	var m cycleMeasure
	for b.Loop() {
		b.StopTimer()
		before := e.sc.Changes()
		e.delete(b, e.kube.Tracker(), podsResource, pod.Namespace, pod.Name)
		e.waitChanges(b, before+1, "the pod deleted")
		m.cycle(b, e.s)
		add(b, e.kube.Tracker(), pod.DeepCopy())
		e.waitChanges(b, before+2, "the pod stored again")
		e.s.RunOnce()
		b.StartTimer()
	}
	m.report(b)
}

// waitChanges waits until the cache has counted want changes: the events the benchmark
// caused, applied. No other change happens meanwhile: the benchmark's writes are answered
// without events but for the Bindings, which it waits for.
func (e *eventBench) waitChanges(b *testing.B, want uint64, what string) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Microsecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return e.sc.Changes() >= want, nil
	})
	if err != nil {
		b.Fatalf("%s: the cache counted %d changes, want %d (%d Bindings stored)", what, e.sc.Changes(), want, e.binds.Load())
	}
}

// delete removes an object from the fake API server.
func (e *eventBench) delete(b *testing.B, tracker k8stesting.ObjectTracker, resource schema.GroupVersionResource, ns, name string) {
	b.Helper()
	if err := tracker.Delete(resource, ns, name); err != nil {
		b.Fatal(err)
	}
}

// cycleMeasure sums the CPU and wall time of the measured cycles.
type cycleMeasure struct {
	cycles    int
	cpu, wall time.Duration
}

// cycle runs one measured cycle; the benchmark's timer runs only through it.
func (m *cycleMeasure) cycle(b *testing.B, s *scheduler.Scheduler) {
	cpu, start := frameworktest.CPUTime(b), time.Now()
	b.StartTimer()
	s.RunOnce()
	b.StopTimer()
	m.wall += time.Since(start)
	m.cpu += frameworktest.CPUTime(b) - cpu
	m.cycles++
}

func (m *cycleMeasure) report(b *testing.B) {
	b.ReportMetric(float64(m.cpu.Microseconds())/1000/float64(m.cycles), "cpu-ms/cycle")
	b.ReportMetric(float64(m.wall.Microseconds())/1000/float64(m.cycles), "ms/cycle")
}
