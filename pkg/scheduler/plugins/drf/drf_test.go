package drf

import (
	"fmt"
	"math"
	"slices"
	"strings"
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

// allowAll is a plugin that lets a preemptor evict every candidate, so that beside it drf
// alone decides which go.
type allowAll struct{}

func (allowAll) Name() string { return "allow-all" }
func (allowAll) OnSessionOpen(ssn *framework.Session) {
	ssn.AddPreemptableFn("allow-all", func(_ *api.TaskInfo, candidates []*api.TaskInfo) ([]*api.TaskInfo, bool) {
		return candidates, false
	})
}
func (allowAll) OnSessionClose(*framework.Session) {}

// builders builds drf and allow-all, for sessions.
var builders = map[string]framework.PluginBuilder{
	PluginName:        New,
	allowAll{}.Name(): func(conf.Arguments) (framework.Plugin, error) { return allowAll{}, nil },
}

// drfOnly is the entry of drf, with no arguments.
var drfOnly = conf.PluginOption{Name: PluginName}

// onTwoNodes is a cache whose snapshot holds the jobs and two nodes of 4 cpu and 8Gi each.
func onTwoNodes(jobs ...*api.JobInfo) *frameworktest.Cache {
	var nodes []*api.NodeInfo
	for _, name := range []string{"n0", "n1"} {
		nodes = append(nodes, api.NewNodeInfo(st.Node(name, st.Resources("4", "8Gi")).Obj()))
	}
	return &frameworktest.Cache{Snap: frameworktest.ClusterOf(nodes, jobs...)}
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
	ssn := frameworktest.OpenSession(t, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
	want := []string{"idle", "memory-heavy", "cpu-heavy"}
	if got := jobOrder(ssn); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestEqualSharesFallBack(t *testing.T) {
	ssn := frameworktest.OpenSession(t, onTwoNodes(newJob("young", 2, pod{cpu: "2", memory: "1Gi", node: "n0"}),
		newJob("old", 1, pod{cpu: "1", memory: "4Gi", node: "n1"})), "allocate", builders, drfOnly) // both hold a quarter
	want := []string{"old", "young"}
	if got := jobOrder(ssn); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestSharesFollowStatement(t *testing.T) {
	ssn := frameworktest.OpenSession(t, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
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

// A pipelined task counts in its job's share as an allocated one does; an evicted one no
// longer counts; undoing either restores the order.
func TestSharesCountPipelinedAndEvicted(t *testing.T) {
	ssn := frameworktest.OpenSession(t, onTwoNodes(sessionJobs()...), "allocate", builders, drfOnly)
	stmt := ssn.NewStatement()
	if err := stmt.Pipeline(ssn.Jobs["ns/idle"].Tasks["idle-0"], ssn.Nodes["n0"]); err != nil {
		t.Fatal(err)
	}
	if got, want := jobOrder(ssn), []string{"memory-heavy", "cpu-heavy", "idle"}; !slices.Equal(got, want) {
		t.Errorf("after pipeline: order %v, want %v", got, want)
	}
	stmt.Discard()
	if err := stmt.Evict(ssn.Jobs["ns/cpu-heavy"].Tasks["cpu-heavy-0"], "test"); err != nil {
		t.Fatal(err)
	}
	// cpu-heavy holds nothing now, like idle, and is older.
	if got, want := jobOrder(ssn), []string{"cpu-heavy", "idle", "memory-heavy"}; !slices.Equal(got, want) {
		t.Errorf("after evict: order %v, want %v", got, want)
	}
	stmt.Discard()
	if got, want := jobOrder(ssn), []string{"idle", "memory-heavy", "cpu-heavy"}; !slices.Equal(got, want) {
		t.Errorf("after discard: order %v, want %v", got, want)
	}
}

// The cluster has 8 cpu and 16Gi. A candidate may go only while the preemptor's job, with
// the preemptor, holds a share no larger than the candidate's job keeps without it. Beside
// drf, a plugin allows every candidate.
func TestPreemptableKeepsSharesInOrder(t *testing.T) {
	running := func(n int, cpu, memory string) []pod {
		pods := make([]pod, n)
		for i := range pods {
			pods[i] = pod{cpu: cpu, memory: memory, node: "n0"}
		}
		return pods
	}
	cases := []struct {
		name      string
		jobs      []*api.JobInfo
		preemptor string // a pending task of one of jobs
		want      []string
	}{
		{"down to equal shares, and no further",
			[]*api.JobInfo{newJob("big", 1, running(3, "1", "1Gi")...), newJob("small", 2, pod{cpu: "1", memory: "1Gi"})},
			"small-0", []string{"big-0", "big-1"}}, // 1/8 against 2/8, then 1/8; not against 0
		{"a larger share evicts nothing",
			[]*api.JobInfo{newJob("big", 1, append(running(3, "1", "1Gi"), pod{cpu: "1", memory: "1Gi"})...),
				newJob("small", 2, running(1, "1", "1Gi")...)},
			"big-3", nil}, // 4/8 against 0
		{"each job keeps its own account",
			[]*api.JobInfo{newJob("a", 1, running(2, "1", "1Gi")...), newJob("b", 2, running(2, "1", "1Gi")...),
				newJob("new", 3, pod{cpu: "1", memory: "1Gi"})},
			"new-0", []string{"a-0", "b-0"}}, // 1/8 against 1/8 in each, then 0
		{"the dominant resource decides",
			[]*api.JobInfo{newJob("cpu-heavy", 1, running(3, "1", "1Gi")...), newJob("memory-heavy", 2, pod{cpu: "1", memory: "6Gi"})},
			"memory-heavy-0", nil}, // 6/16 against 2/8
		{"the preemptor's own job is weighed alike",
			[]*api.JobInfo{newJob("job", 1, append(running(2, "1", "1Gi"), pod{cpu: "1", memory: "1Gi"})...)},
			"job-2", nil}, // 3/8 against 1/8
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenSession(t, onTwoNodes(tc.jobs...), "allocate", builders, drfOnly, conf.PluginOption{Name: allowAll{}.Name()})
			var preemptor *api.TaskInfo
			var candidates []*api.TaskInfo
			for _, job := range ssn.Jobs {
				for _, task := range job.Tasks {
					switch {
					case task.Name == tc.preemptor:
						preemptor = task
					case task.NodeName != "":
						candidates = append(candidates, task)
					}
				}
			}
			slices.SortFunc(candidates, func(l, r *api.TaskInfo) int { return strings.Compare(l.Name, r.Name) })
			var got []string
			for _, v := range ssn.Preemptable(preemptor, candidates) {
				got = append(got, v.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("victims %v, want %v", got, tc.want)
			}
		})
	}
}
