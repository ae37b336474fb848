package drf

import (
	"fmt"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const vgpuMemory corev1.ResourceName = "volcano.sh/vgpu-memory"

func TestDominantShare(t *testing.T) {
	total := &api.Resource{MilliCPU: 8000, Memory: 16e9, ScalarResources: map[corev1.ResourceName]float64{
		vgpuMemory: 80000e3, corev1.ResourcePods: 20e3, "example.com/none": 0}}
	cases := []struct {
		name      string
		allocated *api.Resource
		want      float64
	}{
		{"nothing held", api.EmptyResource(), 0},
		{"cpu dominates", &api.Resource{MilliCPU: 2000, Memory: 1e9}, 0.25},
		{"memory dominates", &api.Resource{MilliCPU: 1000, Memory: 6e9}, 0.375},
		{"a scalar dominates", &api.Resource{MilliCPU: 1000, ScalarResources: map[corev1.ResourceName]float64{vgpuMemory: 40000e3}}, 0.5},
		{"pod slots order best-effort jobs", &api.Resource{ScalarResources: map[corev1.ResourceName]float64{corev1.ResourcePods: 2e3}}, 0.1},
		{"resources the cluster does not offer are skipped", &api.Resource{MilliCPU: 800, ScalarResources: map[corev1.ResourceName]float64{
			"example.com/none": 1e3, "example.com/absent": 5e3}}, 0.1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := dominantShare(tc.allocated, total); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("share %v, want %v", got, tc.want)
			}
		})
	}
}

// pod is one pod of a test job: running on n0, or pending when node is empty.
type pod struct {
	cpu, memory string
	node        string
}

// newJob builds job ns/<name> created at the given second, with pods "<name>-<i>".
func newJob(name string, created int64, pods ...pod) *api.JobInfo {
	pg := st.MakePodGroup().Namespace("ns").Name(name).CreatedAt(metav1.Unix(created, 0)).MinMember(1).Obj()
	job := api.NewJobInfo(api.NewJobID("ns", name))
	job.SetPodGroup(pg, "default")
	for i, p := range pods {
		podName := fmt.Sprintf("%s-%d", name, i)
		phase := corev1.PodRunning
		if p.node == "" {
			phase = corev1.PodPending
		}
		job.AddTask(api.NewTaskInfo(st.MakePod().Namespace("ns").UID(podName).Name(podName).Group(name).Node(p.node).
			Container(st.Resources(p.cpu, p.memory)).Phase(phase).Obj()))
	}
	return job
}

// openSession opens a session with drf alone over two nodes of 4 cpu and 8Gi each.
func openSession(t *testing.T, jobs ...*api.JobInfo) *framework.Session {
	t.Helper()
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}
	for _, name := range []string{"n0", "n1"} {
		n := api.NewNodeInfo(st.MakeNode().Name(name).Allocatable(st.Resources("4", "8Gi", "pods", "110")).Obj())
		ci.Nodes[name] = n
		ci.NodeList = append(ci.NodeList, n)
	}
	for _, j := range jobs {
		ci.Jobs[j.UID] = j
	}
	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, New)
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName}}}}}
	return framework.OpenSession(&frameworktest.Cache{Snap: ci}, cfg, reg)
}

// jobOrder lists the session's jobs as JobOrderFn sorts them.
func jobOrder(ssn *framework.Session) []string {
	var jobs []*api.JobInfo
	for _, j := range ssn.Jobs {
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(l, r *api.JobInfo) int {
		switch {
		case ssn.JobOrderFn(l, r):
			return -1
		case ssn.JobOrderFn(r, l):
			return 1
		}
		return 0
	})
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	return names
}

// The cluster has 8 cpu and 16Gi. Jobs are created in the reverse of their share order, so
// the framework's oldest-first fallback alone would give the opposite answer.
func sessionJobs() []*api.JobInfo {
	return []*api.JobInfo{
		newJob("cpu-heavy", 1, pod{cpu: "3", memory: "1Gi", node: "n0"}),    // 3/8 cpu
		newJob("memory-heavy", 2, pod{cpu: "1", memory: "4Gi", node: "n1"}), // 4/16 memory
		newJob("idle", 3, pod{cpu: "3", memory: "1Gi"}),                     // holds nothing yet
	}
}

func TestJobOrderBySmallerShare(t *testing.T) {
	ssn := openSession(t, sessionJobs()...)
	want := []string{"idle", "memory-heavy", "cpu-heavy"}
	if got := jobOrder(ssn); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestEqualSharesFallBack(t *testing.T) {
	ssn := openSession(t,
		newJob("young", 2, pod{cpu: "2", memory: "1Gi", node: "n0"}),
		newJob("old", 1, pod{cpu: "1", memory: "4Gi", node: "n1"})) // both hold a quarter
	want := []string{"old", "young"}
	if got := jobOrder(ssn); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestSharesFollowStatement(t *testing.T) {
	ssn := openSession(t, sessionJobs()...)
	idle := ssn.Jobs["ns/idle"]
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(idle.Tasks["idle-0"], ssn.Nodes["n0"]); err != nil {
		t.Fatal(err)
	}
	// idle now holds 3 cpu like cpu-heavy but is younger: equal shares keep the age order.
	if got, want := jobOrder(ssn), []string{"memory-heavy", "cpu-heavy", "idle"}; !slices.Equal(got, want) {
		t.Errorf("after allocate: order %v, want %v", got, want)
	}
	stmt.Discard()
	if got, want := jobOrder(ssn), []string{"idle", "memory-heavy", "cpu-heavy"}; !slices.Equal(got, want) {
		t.Errorf("after discard: order %v, want %v", got, want)
	}
}
