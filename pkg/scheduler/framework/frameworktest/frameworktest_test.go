package frameworktest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// A snapshot of objects lists the nodes by name and puts each pod in its job and on its node,
// where those are among the objects.
func TestObjectsClusterInfo(t *testing.T) {
	ci := Objects{
		Nodes:     []*corev1.Node{st.Node("n2", st.Resources("4", "")).Obj(), st.Node("n1", st.Resources("4", "")).Obj()},
		Queues:    []*schedulingv1beta1.Queue{st.MakeQueue().Name("q").Obj()},
		PodGroups: []*schedulingv1beta1.PodGroup{st.MakePodGroup().Namespace("ns").Name("pg").Obj()},
		Pods: []*corev1.Pod{
			st.Pod("placed", "1", "").Group("pg").Node("n1").Phase(corev1.PodRunning).Obj(),
			st.Pod("pending", "1", "").Group("pg").Obj(),
			st.Pod("elsewhere", "1", "").Node("n2").Phase(corev1.PodRunning).Obj(),
			st.Pod("orphan", "1", "").Group("gone").Obj(),
		},
	}.ClusterInfo()
	if got := []string{ci.NodeList[0].Name, ci.NodeList[1].Name}; !cmp.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("nodes listed %v, want by name", got)
	}
	job := ci.Jobs["ns/pg"]
	if job == nil || len(job.Tasks) != 2 || job.Queue != "default" || ci.Queues["q"] == nil {
		t.Fatalf("jobs %v, queues %v: want ns/pg in queue default with placed and pending, and queue q", ci.Jobs, ci.Queues)
	}
	if len(ci.Nodes["n1"].Tasks) != 1 || len(ci.Nodes["n2"].Tasks) != 1 || len(ci.Jobs) != 1 {
		t.Errorf("n1 holds %d tasks, n2 %d, %d jobs; want 1, 1, 1", len(ci.Nodes["n1"].Tasks), len(ci.Nodes["n2"].Tasks), len(ci.Jobs))
	}
}

// The cache keeps a copy of each bind unless OnBind takes it, and what the session writes.
func TestCacheKeeps(t *testing.T) {
	c := &Cache{}
	if c.Snapshot() == c.Snapshot() || c.Snapshots.Load() != 2 {
		t.Errorf("want a new empty cluster for each of the 2 snapshots counted, got %d", c.Snapshots.Load())
	}
	task := api.NewTaskInfo(st.Pod("p", "1", "").Obj())
	task.NodeName = "n1"
	if err := c.Bind(task); err != nil {
		t.Fatal(err)
	}
	task.NodeName = "n2"
	if got := c.Binds(); !cmp.Equal(got, map[string]string{"ns/p": "n1"}) || c.Bound[0] == task {
		t.Errorf("binds %v, want a copy of the task as bound on n1", got)
	}
	refused := errors.New("refused")
	c.OnBind = func(*api.TaskInfo) error { return refused }
	if err := c.Bind(task); err != refused || len(c.Bound) != 1 {
		t.Errorf("bind with OnBind: %v, %d kept; want OnBind's error, nothing kept", err, len(c.Bound))
	}
	job := api.NewJobInfo("ns/pg")
	job.Name = "pg"
	c.RecordJobEvent(job, corev1.EventTypeNormal, "Unschedulable", "full")
	if want := []JobEvent{{PodGroup: "pg", Type: corev1.EventTypeNormal, Reason: "Unschedulable", Message: "full"}}; !cmp.Equal(c.Events, want) {
		t.Errorf("events %v, want %v", c.Events, want)
	}
	allocated := api.NewResource(st.Resources("2", ""))
	c.UpdateQueueStatus(&api.QueueInfo{Name: "q"}, allocated)
	allocated.MilliCPU = 0
	if got := c.Allocated["q"]; got == nil || got.MilliCPU != 2000 {
		t.Errorf("allocated %v, want a copy of 2 cpu", got)
	}
}
