package api

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

func testPod(ns, name, node string, phase corev1.PodPhase, cpu string) *corev1.Pod {
	return st.MakePod().Namespace(ns).Name(name).Group("pg1").Node(node).Container(st.Resources(cpu, "")).Phase(phase).Obj()
}

// Golden strings from upstream's TestTaskSchedulingReason.
func TestTaskSchedulingReasonGolden(t *testing.T) {
	job := NewJobInfo("ns1/pg1")
	job.MinAvailable = 6
	fe := NewFitErrors()
	fe.SetNodeError("node1", NewStatus(Unschedulable, "node(s) pod number exceeded"))
	fe.SetNodeError("node2", NewStatus(Unschedulable, "node(s) resource fit failed"))
	fe.SetNodeError("node3", NewStatus(Unschedulable, "node(s) resource fit failed"))
	for i := 1; i <= 6; i++ {
		task := NewTaskInfo(testPod("ns1", fmt.Sprintf("task-%d", i), "", corev1.PodPending, "1"))
		switch {
		case i <= 3:
			task.LastTransaction = &TransactionContext{NodeName: "node1", Status: Allocated}
		case i == 6:
			job.NodesFitErrors[task.UID] = fe
		}
		job.AddTask(task)
	}
	want := "pod group is not ready, 6 Pending, 6 minAvailable; Pending: 3 Schedulable, 3 Unschedulable. " +
		"Origin reason is task-6: 0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 node(s) resource fit failed."
	if got := job.FitError(); got != want {
		t.Errorf("FitError()\n got %q\nwant %q", got, want)
	}
	task3 := job.Tasks["ns1-task-3"]
	reason, msg := job.TaskSchedulingReason(task3)
	if reason != "Schedulable" || msg != "Pod ns1/task-3 can possibly be assigned to node1, once minAvailable is satisfied" {
		t.Errorf("task-3: got (%q, %q)", reason, msg)
	}
	// A pending task without its own fit errors reports the gang's explanation.
	task4 := job.Tasks["ns1-task-4"]
	if reason, msg := job.PodScheduledMessage(task4, job.FitError); reason != "Unschedulable" || msg != want {
		t.Errorf("task-4: got (%q, %q)", reason, msg)
	}
}

// A task its queue refused tells its pod which queue and resource; the gang's message stays
// upstream's, counting it Unschedulable with no origin reason.
func TestQueueRefusalIsThePodsMessageOnly(t *testing.T) {
	job := NewJobInfo("ns/pg")
	job.MinAvailable = 1
	task := NewTaskInfo(testPod("ns", "w-0", "", corev1.PodPending, "1"))
	job.AddTask(task)
	const refusal = "queue default has no room for the pod within its deserved share: volcano.sh/vgpu-number"
	job.QueueRefusals = map[TaskID]string{task.UID: refusal}
	if reason, msg := job.PodScheduledMessage(task, job.FitError); reason != "Unschedulable" || msg != refusal {
		t.Errorf("pod: got (%q, %q), want (Unschedulable, %q)", reason, msg, refusal)
	}
	if got, want := job.FitError(), "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"; got != want {
		t.Errorf("gang: got %q, want %q", got, want)
	}
}

func TestFitErrorsWithoutNodes(t *testing.T) {
	if got := NewFitErrors().Error(); got != "0/0 nodes are unavailable" {
		t.Errorf("got %q", got)
	}
}

func TestPipelinedReason(t *testing.T) {
	job := NewJobInfo("ns/pg")
	task := NewTaskInfo(testPod("ns", "w-0", "", corev1.PodPending, "1"))
	task.LastTransaction = &TransactionContext{NodeName: "n1", Status: Pipelined}
	job.AddTask(task)
	reason, msg := job.TaskSchedulingReason(task)
	if reason != "Unschedulable" || msg != "Pod ns/w-0 can possibly be assigned to n1, once resource is released and minAvailable is satisfied" {
		t.Errorf("got (%q, %q)", reason, msg)
	}
}

func TestGangCounts(t *testing.T) {
	job := NewJobInfo("ns/pg")
	job.MinAvailable = 3
	job.AddTask(NewTaskInfo(testPod("ns", "a", "n1", corev1.PodRunning, "1")))
	job.AddTask(NewTaskInfo(testPod("ns", "b", "n1", corev1.PodPending, "1")))
	c := NewTaskInfo(testPod("ns", "c", "", corev1.PodPending, "1"))
	job.AddTask(c)
	if got := job.ReadyTaskNum(); got != 2 {
		t.Fatalf("ReadyTaskNum = %d, want 2 (Running + Bound)", got)
	}
	if job.IsReady() {
		t.Fatal("2 of 3 placed must not be ready")
	}
	job.UpdateTaskStatus(c, Allocated)
	if !job.IsReady() || job.IsStarving() {
		t.Fatal("3 of 3 placed must be ready and not starving")
	}
	if got := job.Allocated.MilliCPU; got != 3000 {
		t.Errorf("Allocated cpu = %v, want 3000", got)
	}
	job.UpdateTaskStatus(c, Pending)
	if got := job.Allocated.MilliCPU; got != 2000 {
		t.Errorf("after undo Allocated cpu = %v, want 2000", got)
	}
}

func TestTaskRequests(t *testing.T) {
	pod := testPod("ns", "p", "", corev1.PodPending, "500m")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
	task := NewTaskInfo(pod)
	if task.Resreq.MilliCPU != 500 || task.InitResreq.MilliCPU != 2000 {
		t.Errorf("Resreq cpu %v (want 500), InitResreq cpu %v (want 2000)", task.Resreq.MilliCPU, task.InitResreq.MilliCPU)
	}
	if task.Resreq.Get(corev1.ResourcePods) != 1000 {
		t.Errorf("a task holds one pod slot, got %v milli", task.Resreq.Get(corev1.ResourcePods))
	}
	if task.Job != "ns/pg1" || task.BestEffort {
		t.Errorf("job %q bestEffort %v", task.Job, task.BestEffort)
	}
}

// The counts the gang rules read are kept beside the status index; they must agree with it
// through adds, moves, replacements and deletions.
func TestTaskCountsFollowIndex(t *testing.T) {
	job := NewJobInfo("ns/pg")
	job.MinAvailable = 2
	bestEffort := NewTaskInfo(testPod("ns", "be", "", corev1.PodPending, "0"))
	placed := NewTaskInfo(testPod("ns", "p", "", corev1.PodPending, "1"))
	job.AddTask(bestEffort)
	job.AddTask(placed)
	check := func(when string) {
		t.Helper()
		var be int32
		for _, task := range job.TaskStatusIndex[Pending] {
			if task.BestEffort {
				be++
			}
		}
		if got := job.PendingBestEffortTaskNum(); got != be {
			t.Errorf("%s: PendingBestEffortTaskNum = %d, index says %d", when, got, be)
		}
		for s := Pending; s <= Unknown; s++ {
			if got, want := job.TaskCount(s), int32(len(job.TaskStatusIndex[s])); got != want {
				t.Errorf("%s: TaskCount(%v) = %d, index says %d", when, s, got, want)
			}
		}
	}
	check("added")
	if !bestEffort.BestEffort || job.ValidTaskNum() != 2 || job.IsReady() {
		t.Fatalf("best effort %v, valid %d, ready %v", bestEffort.BestEffort, job.ValidTaskNum(), job.IsReady())
	}
	job.UpdateTaskStatus(placed, Allocated)
	check("allocated")
	if !job.IsReady() {
		t.Error("one allocated and one best-effort pending must be ready")
	}
	job.AddTask(NewTaskInfo(testPod("ns", "be", "n1", corev1.PodRunning, "0")))
	check("replaced")
	job.UpdateTaskStatus(placed, Failed)
	check("failed")
	if got := job.ValidTaskNum(); got != 1 {
		t.Errorf("ValidTaskNum = %d, want 1 (the running one)", got)
	}
	job.DeleteTask(placed)
	job.DeleteTask(placed)
	check("deleted twice")
}

// A clone holds copies of the tasks, indexed, counted and totalled as adding them one by one
// would, and changing it leaves the original as it was.
func TestJobCloneMatchesAddingTasks(t *testing.T) {
	job := NewJobInfo("ns/pg")
	job.MinAvailable = 3
	running := NewTaskInfo(testPod("ns", "r", "n1", corev1.PodRunning, "2"))
	pending := NewTaskInfo(testPod("ns", "p", "", corev1.PodPending, "1"))
	for _, task := range []*TaskInfo{running, pending, NewTaskInfo(testPod("ns", "be", "", corev1.PodPending, "0")),
		NewTaskInfo(testPod("ns", "a", "", corev1.PodPending, "3")), NewTaskInfo(testPod("ns", "done", "n1", corev1.PodSucceeded, "1"))} {
		job.AddTask(task)
	}
	job.UpdateTaskStatus(job.Tasks["ns-a"], Allocated)

	rebuilt := NewJobInfo(job.UID)
	for _, task := range job.Tasks {
		rebuilt.AddTask(task.Clone())
	}
	c := job.Clone()
	describe := func(j *JobInfo) string {
		out := fmt.Sprintf("allocated %v, total %v, best effort %d;", j.Allocated, j.TotalRequest, j.PendingBestEffortTaskNum())
		for s := Pending; s <= Unknown; s++ {
			if n := len(j.TaskStatusIndex[s]); n > 0 || j.TaskCount(s) > 0 {
				out += fmt.Sprintf(" %v: %d indexed, %d counted", s, n, j.TaskCount(s))
			}
		}
		return out
	}
	if got, want := describe(c), describe(rebuilt); got != want {
		t.Fatalf("clone: %s\nadded one by one: %s", got, want)
	}
	for id, task := range c.Tasks {
		if task == job.Tasks[id] || c.TaskStatusIndex[task.Status][id] != task {
			t.Errorf("task %s: shared with the original, or not the one its index holds", id)
		}
	}
	before := describe(job)
	c.UpdateTaskStatus(c.Tasks[pending.UID], Allocated)
	c.DeleteTask(c.Tasks[running.UID])
	if after := describe(job); after != before || pending.Status != Pending {
		t.Errorf("changing the clone changed the original: %s, was %s", after, before)
	}
}
