//go:build unix

package deviceshare

import (
	"fmt"
	"testing"
	"time"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/gang"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/predicates"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// BenchmarkAllocateVGPU measures the allocate action with the real gang, predicates and
// deviceshare (binpack) plugins placing 10,000 one-vGPU pods, in gangs of 8, on 1,000 nodes
// of 8 GPUs (81,920 MiB, split 10), with a binder that only records. The README's target is
// 10,000 pods/s on one core. It reports pods/s of wall time and pods per CPU-second.
//
//	go test ./pkg/scheduler/plugins/deviceshare/ -run '^$' -bench BenchmarkAllocateVGPU -benchtime 3x
func BenchmarkAllocateVGPU(b *testing.B) {
	const nodeCount, podCount, gangSize = 1000, 10000, 8
	var nodes []*api.NodeInfo
	for i := range nodeCount {
		nodes = append(nodes, nodeInfo(gpuNode(fmt.Sprintf("n%04d", i), 8*i, gpus(8, 10, 81920, h200))))
	}
	template := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	template.Queues["default"] = api.NewQueueInfo(st.MakeQueue().Name("default").Weight(1).Obj())
	for _, n := range nodes {
		template.Nodes[n.Name] = n
		template.NodeList = append(template.NodeList, n)
	}
	for j := 0; j*gangSize < podCount; j++ {
		name := fmt.Sprintf("job%05d", j)
		job := api.NewJobInfo(api.NewJobID(testNS, name))
		job.SetPodGroup(st.MakePodGroup().Namespace(testNS).Name(name).MinMember(gangSize).Queue("default").
			Phase(schedulingv1beta1.PodGroupInqueue).Obj(), "default")
		for k := range gangSize {
			job.AddTask(api.NewTaskInfo(pod(fmt.Sprintf("%s-w-%d", name, k), name, vgpuCtr("main", 1, 8000, 0))))
		}
		template.Jobs[job.UID] = job
	}
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{
		{Plugins: []conf.PluginOption{{Name: gang.PluginName}}},
		{Plugins: []conf.PluginOption{{Name: predicates.PluginName},
			{Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: PolicyBinpack}}}},
	}}
	reg := registry(map[string]framework.PluginBuilder{gang.PluginName: gang.New, predicates.PluginName: predicates.New})
	act := allocate.New()
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cache := &frameworktest.Cache{Snap: frameworktest.CloneCluster(template)}
		ssn := framework.OpenSession(cache, cfg, reg, nil)
		before := frameworktest.CPUTime(b)
		b.StartTimer()
		act.Execute(ssn)
		b.StopTimer()
		cpu += frameworktest.CPUTime(b) - before
		if len(cache.Bound) != podCount {
			b.Fatalf("bound %d pods, want %d", len(cache.Bound), podCount)
		}
	}
	b.ReportMetric(float64(podCount*b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(podCount*b.N)/cpu.Seconds(), "pods/cpu-s")
}

// BenchmarkPredicate measures the check of one 8-GPU node for a one-vGPU pod, the hot path
// of a node search: fitting the pod to the GPUs (the first pod of its shape on the node, or
// the first since a pod was booked there), and answering from the node's fit memo (the
// rest of a gang).
func BenchmarkPredicate(b *testing.B) {
	for _, memo := range []bool{false, true} {
		b.Run(fmt.Sprintf("memo=%v", memo), func(b *testing.B) {
			p := policyPlugin(b, PolicyBinpack, 1)
			node := nodeInfo(gpuNode("n1", 0, gpus(8, 10, 81920, h200)), runningWith(pod("a", "x"), "n1", dev(3, "4000", "30")))
			task := api.NewTaskInfo(pod("p", "pg", vgpuCtr("main", 1, 8000, 0)))
			l := ledgerOf(node)
			b.ReportAllocs()
			for b.Loop() {
				if !memo {
					l.lastFit = fitMemo{}
				}
				p.predicate(task, node)
			}
		})
	}
}

// BenchmarkDerive measures the cache's work after a pod event on a full node: 8 GPUs, 80
// pods with assignments.
func BenchmarkDerive(b *testing.B) {
	n := api.NewNodeInfo(gpuNode("n1", 0, gpus(8, 10, 81920, h200)))
	for i := range 80 {
		n.AddTask(api.NewTaskInfo(runningWith(pod(fmt.Sprintf("p%d", i), "x"), "n1", dev(i%8, "8000", "10"))))
	}
	d := NewDeriver()
	n.Devices = map[string]api.Devices{PluginName: d.Derive(n)}
	b.ReportAllocs()
	for b.Loop() {
		d.Derive(n)
	}
}
