package quotatest

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Scenario is one enqueue-then-allocate cycle for one job, checked end to end: whether the job
// is admitted, which of its pods get a node, and the PodGroup events emitted.
type Scenario struct {
	Name    string
	Cluster frameworktest.Objects
	// Job is the PodGroup under test; it should be Pending.
	Job string
	// WantEnqueued: the job is admitted.
	WantEnqueued bool
	// WantPlaced: the job's pods that get a node, by name, when its pending pods are tried in
	// name order after admission (none when it is not admitted).
	WantPlaced []string
	// WantEvents: the PodGroup events, in order.
	WantEvents []frameworktest.JobEvent
}

// Run opens a session with the plugins, admits the job as the enqueue action would, then tries
// its pending pods as the allocate action would, and checks the outcome.
func (s Scenario) Run(t *testing.T, builders map[string]framework.PluginBuilder, plugins ...conf.PluginOption) {
	t.Helper()
	cache := &frameworktest.Cache{Snap: s.Cluster.ClusterInfo()}
	ssn := frameworktest.OpenSession(t, cache, Actions, builders, plugins...)
	job := Job(ssn, s.Job)
	if job == nil {
		t.Fatalf("no PodGroup %s in the scenario", s.Job)
	}
	if got := Enqueue(ssn, job); got != s.WantEnqueued {
		t.Errorf("enqueued = %v, want %v", got, s.WantEnqueued)
	}
	var placed []string
	if job.Status.Phase == schedulingv1beta1.PodGroupInqueue {
		var pending []string
		for _, task := range job.Tasks {
			if task.NodeName == "" {
				pending = append(pending, task.Name)
			}
		}
		sort.Strings(pending)
		for _, name := range pending {
			if Allocate(ssn, Task(ssn, name)) != "" {
				placed = append(placed, name)
			}
		}
	}
	if diff := cmp.Diff(s.WantPlaced, placed); diff != "" {
		t.Errorf("placed pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.WantEvents, cache.Events); diff != "" {
		t.Errorf("PodGroup events (-want +got):\n%s", diff)
	}
}

// The vGPU resource names, as st.Resources takes them.
const (
	vgpuNumber           = string(vgpu.DefaultCountResource)
	vgpuMemory           = string(vgpu.DefaultMemoryResource)
	vgpuCores            = string(vgpu.DefaultCoresResource)
	vgpuMemoryPercentage = string(vgpu.DefaultMemoryPercentageResource)
)

// VGPU is the request of one vGPU slice of memMiB and 30% of the cores (lab 8's pods).
func VGPU(memMiB string) corev1.ResourceList {
	return st.Resources("", "", vgpuNumber, "1", vgpuMemory, memMiB, vgpuCores, "30")
}

// halfGPU is the request of one vGPU of half its GPU's memory (a share of each GPU's memory
// instead of an amount; our device plugin advertises 100 of it per GPU).
func halfGPU() corev1.ResourceList {
	return st.Resources("", "", vgpuNumber, "1", vgpuMemoryPercentage, "50")
}

// QueueQuotaRejected is the PodGroup event of a job the queue quota keeps Pending.
func QueueQuotaRejected(podGroup, message string) frameworktest.JobEvent {
	return frameworktest.JobEvent{PodGroup: podGroup, Type: corev1.EventTypeNormal, Reason: "Unschedulable", Message: message}
}

// VGPUQueueScenarios are lab 8's queue cases, which proportion and capacity
// decide alike: queue gpu-small-queue caps vgpu-number 2, vgpu-memory 4000 and vgpu-cores 60
// on a cluster whose node has 8192 MiB of vGPU memory.
func VGPUQueueScenarios() []Scenario {
	gpuNode := func() *corev1.Node {
		return st.Node("gpu-node", st.Resources("8", "16Gi", vgpuNumber, "10", vgpuMemory, "8192", vgpuCores, "100")).Obj()
	}
	smallQueue := func() *schedulingv1beta1.Queue {
		return Queue("gpu-small-queue", st.Resources("", "", vgpuNumber, "2", vgpuMemory, "4000", vgpuCores, "60"))
	}
	// A pod of 3000 MiB already running in the queue.
	running := func() (*schedulingv1beta1.PodGroup, *corev1.Pod) {
		return PodGroup("running", "gpu-small-queue", 1, VGPU("3000"), schedulingv1beta1.PodGroupRunning),
			Pod("running-0", "running", "gpu-node", VGPU("3000"))
	}
	runningPG, runningPod := running()
	return []Scenario{
		{
			Name: "3000 MiB next to 3000 MiB allocated: minResources without vGPU (VolcanoJob) is admitted, then not allocatable",
			Cluster: frameworktest.Objects{
				Nodes:     []*corev1.Node{gpuNode()},
				Queues:    []*schedulingv1beta1.Queue{smallQueue()},
				PodGroups: []*schedulingv1beta1.PodGroup{runningPG, PodGroup("job", "gpu-small-queue", 1, st.Resources("", "", "pods", "1"), schedulingv1beta1.PodGroupPending)},
				Pods:      []*corev1.Pod{runningPod, Pod("job-w-0", "job", "", VGPU("3000"))},
			},
			Job: "job", WantEnqueued: true,
		},
		{
			Name: "3000 MiB next to 3000 MiB allocated: minResources with vGPU (standalone pod) stays Pending with the event",
			Cluster: frameworktest.Objects{
				Nodes:     []*corev1.Node{gpuNode()},
				Queues:    []*schedulingv1beta1.Queue{smallQueue()},
				PodGroups: []*schedulingv1beta1.PodGroup{runningPG, PodGroup("single", "gpu-small-queue", 1, VGPU("3000"), schedulingv1beta1.PodGroupPending)},
				Pods:      []*corev1.Pod{runningPod, Pod("single", "single", "", VGPU("3000"))},
			},
			Job:          "single",
			WantEnqueued: false,
			WantEvents:   []frameworktest.JobEvent{QueueQuotaRejected("single", "queue resource quota insufficient: insufficient volcano.sh/vgpu-memory")},
		},
		{
			Name: "gang of two 3000 MiB pods without vGPU minResources: the first fits, the second would exceed 4000",
			Cluster: frameworktest.Objects{
				Nodes:     []*corev1.Node{gpuNode()},
				Queues:    []*schedulingv1beta1.Queue{smallQueue()},
				PodGroups: []*schedulingv1beta1.PodGroup{PodGroup("exceeds", "gpu-small-queue", 2, st.Resources("", "", "pods", "2"), schedulingv1beta1.PodGroupPending)},
				Pods:      []*corev1.Pod{Pod("exceeds-w-0", "exceeds", "", VGPU("3000")), Pod("exceeds-w-1", "exceeds", "", VGPU("3000"))},
			},
			Job: "exceeds", WantEnqueued: true, WantPlaced: []string{"exceeds-w-0"},
		},
		{
			Name: "gang of two 1000 MiB pods fits the queue",
			Cluster: frameworktest.Objects{
				Nodes:  []*corev1.Node{gpuNode()},
				Queues: []*schedulingv1beta1.Queue{smallQueue()},
				PodGroups: []*schedulingv1beta1.PodGroup{PodGroup("fit", "gpu-small-queue", 2,
					st.Resources("", "", vgpuNumber, "2", vgpuMemory, "2000", vgpuCores, "60"), schedulingv1beta1.PodGroupPending)},
				Pods: []*corev1.Pod{Pod("fit-w-0", "fit", "", VGPU("1000")), Pod("fit-w-1", "fit", "", VGPU("1000"))},
			},
			Job: "fit", WantEnqueued: true, WantPlaced: []string{"fit-w-0", "fit-w-1"},
		},
		{
			Name: "gang of two 3000 MiB pods with vGPU minResources stays Pending",
			Cluster: frameworktest.Objects{
				Nodes:  []*corev1.Node{gpuNode()},
				Queues: []*schedulingv1beta1.Queue{smallQueue()},
				PodGroups: []*schedulingv1beta1.PodGroup{PodGroup("exceeds", "gpu-small-queue", 2,
					st.Resources("", "", vgpuNumber, "2", vgpuMemory, "6000", vgpuCores, "60"), schedulingv1beta1.PodGroupPending)},
				Pods: []*corev1.Pod{Pod("exceeds-w-0", "exceeds", "", VGPU("3000")), Pod("exceeds-w-1", "exceeds", "", VGPU("3000"))},
			},
			Job:        "exceeds",
			WantEvents: []frameworktest.JobEvent{QueueQuotaRejected("exceeds", "queue resource quota insufficient: insufficient volcano.sh/vgpu-memory")},
		},
		{
			Name: "memory percentage, no node advertises it (upstream's device plugin): the standalone pod stays Pending with the event",
			Cluster: frameworktest.Objects{
				Nodes:     []*corev1.Node{gpuNode()},
				Queues:    []*schedulingv1beta1.Queue{Queue("default", nil)},
				PodGroups: []*schedulingv1beta1.PodGroup{PodGroup("half", "default", 1, halfGPU(), schedulingv1beta1.PodGroupPending)},
				Pods:      []*corev1.Pod{Pod("half", "half", "", halfGPU())},
			},
			Job:        "half",
			WantEvents: []frameworktest.JobEvent{QueueQuotaRejected("half", "queue resource quota insufficient: insufficient volcano.sh/vgpu-memory-percentage")},
		},
		{
			Name: "memory percentage on a node advertising 100 per GPU: admitted and placed",
			Cluster: frameworktest.Objects{
				Nodes: []*corev1.Node{st.Node("gpu-node", st.Resources("8", "16Gi", vgpuNumber, "10", vgpuMemory, "8192", vgpuCores, "100",
					vgpuMemoryPercentage, "100")).Obj()},
				Queues:    []*schedulingv1beta1.Queue{Queue("default", nil)},
				PodGroups: []*schedulingv1beta1.PodGroup{PodGroup("half", "default", 1, halfGPU(), schedulingv1beta1.PodGroupPending)},
				Pods:      []*corev1.Pod{Pod("half", "half", "", halfGPU())},
			},
			Job: "half", WantEnqueued: true, WantPlaced: []string{"half"},
		},
		{
			Name: "no node exposes vGPU: every requested vGPU dimension compares against zero",
			Cluster: frameworktest.Objects{
				Nodes:     []*corev1.Node{st.Node("cpu-node", st.Resources("8", "16Gi")).Obj()},
				Queues:    []*schedulingv1beta1.Queue{Queue("default", nil)},
				PodGroups: []*schedulingv1beta1.PodGroup{PodGroup("single", "default", 1, VGPU("1000"), schedulingv1beta1.PodGroupPending)},
				Pods:      []*corev1.Pod{Pod("single", "single", "", VGPU("1000"))},
			},
			Job: "single",
			WantEvents: []frameworktest.JobEvent{QueueQuotaRejected("single", "queue resource quota insufficient: "+
				"insufficient volcano.sh/vgpu-cores, insufficient volcano.sh/vgpu-memory, insufficient volcano.sh/vgpu-number")},
		},
	}
}
