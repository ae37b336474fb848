//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/deviceshare"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// BenchmarkCycle measures one whole scheduling cycle of this binary (open session, enqueue,
// allocate, backfill, close with its status updates) with every plugin a configuration names,
// over 10,000 new vGPU pods (1 cpu, 2 GiB, one 8,000 MiB vGPU each) on 1,000 nodes of 8 GPUs
// (81,920 MiB, split 10), binds counted by a fake cache. Two configurations: upstream's
// default (vGPU counted as plain extended resources) and lab 8's seed, which adds deviceshare
// with binpack. It reports pods/s of wall time and pods per CPU-second; the design target is
// 10,000 pods/s on one core.
//
//	go test ./cmd/vc-scheduler/ -run '^$' -bench BenchmarkCycle -benchtime 3x
func BenchmarkCycle(b *testing.B) {
	const nodeCount, podCount = 1000, 10000
	registry := newRegistry(allocate.Options{})
	lab8, err := conf.Parse(lab8Seed(b), registry)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  *conf.SchedulerConfiguration
	}{{"default-conf", conf.DefaultConfiguration()}, {"lab8-conf", lab8}} {
		for _, gang := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/nodes=%d/pods=%d/gang=%d", c.name, nodeCount, podCount, gang), func(b *testing.B) {
				template := vgpuCluster(nodeCount, podCount, gang)
				var cpu time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					bound := 0
					cache := &frameworktest.Cache{Snap: frameworktest.CloneCluster(template), OnBind: func(*api.TaskInfo) error { bound++; return nil }}
					s := scheduler.New(cache, func() *conf.SchedulerConfiguration { return c.cfg }, registry, 0)
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
			})
		}
	}
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

// vgpuCluster is the benchmark's snapshot: Pending PodGroups of gang pods, each pod with one
// 8,000 MiB vGPU, on nodes of 8 GPUs (see gpuCluster).
func vgpuCluster(nodeCount, podCount, gang int) *api.ClusterInfo {
	ci := gpuCluster(nodeCount, 8)
	for j := 0; j*gang < podCount; j++ {
		addGang(ci, fmt.Sprintf("job-%05d", j), gang, 8000)
	}
	return ci
}

// benchGPUMemoryMiB is the memory of every GPU the benchmarks' nodes have (an H100 80GB's).
const benchGPUMemoryMiB = 81920

// gpuCluster is a cluster without pods: the default queue, and nodes of gpus GPUs
// (benchGPUMemoryMiB, split 10) whose GPU ledgers are derived as the cache derives them.
func gpuCluster(nodeCount, gpus int) *api.ClusterInfo {
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	ci.Queues["default"] = api.NewQueueInfo(&schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: schedulingv1beta1.QueueSpec{Weight: 1}, Status: schedulingv1beta1.QueueStatus{State: schedulingv1beta1.QueueStateOpen}})
	deriver := deviceshare.NewDeriver()
	for i := range nodeCount {
		n := api.NewNodeInfo(gpuNode(fmt.Sprintf("node-%04d", i), gpus, 10, benchGPUMemoryMiB))
		n.Devices = map[string]api.Devices{deviceshare.PluginName: deriver.Derive(n)}
		ci.Nodes[n.Name] = n
		ci.NodeList = append(ci.NodeList, n)
	}
	return ci
}

// addGang adds a Pending PodGroup of gang pods, each with one vGPU of memMiB, to the default
// queue.
func addGang(ci *api.ClusterInfo, name string, gang int, memMiB int64) {
	job := api.NewJobInfo(api.NewJobID("bench", name))
	job.SetPodGroup(&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name},
		Spec:   schedulingv1beta1.PodGroupSpec{MinMember: int32(gang), Queue: "default"},
		Status: schedulingv1beta1.PodGroupStatus{Phase: schedulingv1beta1.PodGroupPending}}, "default")
	for k := range gang {
		job.AddTask(api.NewTaskInfo(vgpuPod(fmt.Sprintf("%s-%d", name, k), name, memMiB)))
	}
	ci.Jobs[job.UID] = job
}

func gpuNode(name string, gpus int, split, memMiB int32) *corev1.Node {
	devices := make([]vgpu.NodeDevice, gpus)
	for i := range devices {
		devices[i] = vgpu.NodeDevice{UUID: nvml.FakeUUID(name, i), Count: split, Memory: memMiB, Type: "NVIDIA-NVIDIA H100 80GB HBM3",
			Healthy: true, Mode: vgpu.ModeHAMiCore}
	}
	register, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		panic(err)
	}
	quantity := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("110"), vgpu.DefaultCountResource: quantity(int64(split) * int64(gpus)),
		vgpu.DefaultMemoryResource: quantity(int64(memMiB) * int64(gpus)), vgpu.DefaultCoresResource: quantity(100 * int64(gpus))}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{vgpu.NodeDevicesAnnotation: register}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// vgpuPod is a pending pod of the group asking 1 cpu, 2 GiB and one vGPU of memMiB.
func vgpuPod(name, group string, memMiB int64) *corev1.Pod {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	limits := corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("1"),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(memMiB, resource.DecimalSI)}
	// The API server defaults a container's missing requests to its limits.
	for r, q := range limits {
		requests[r] = q
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID("bench-" + name),
			Annotations: map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: group}},
		Spec: corev1.PodSpec{SchedulerName: "volcano", Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}
