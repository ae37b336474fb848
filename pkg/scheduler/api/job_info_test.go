package api

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

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

// refreshFixture is a gang of two, one pod running and one pending, with its clone as a
// session would have it.
func refreshFixture() (*JobInfo, *JobInfo) {
	job := NewJobInfo("ns/pg1")
	job.SetPodGroup(st.MakePodGroup().Namespace("ns").Name("pg1").MinMember(2).Phase(schedulingv1beta1.PodGroupRunning).Obj(), "default")
	job.AddTask(NewTaskInfo(testPod("ns", "run", "n1", corev1.PodRunning, "1")))
	job.AddTask(NewTaskInfo(testPod("ns", "wait", "", corev1.PodPending, "1")))
	return job, job.Clone()
}

type stepForTest struct{}

func (*stepForTest) Name() string { return "test" }
func (*stepForTest) PreBind(context.Context, *PreBindRequest) (Undo, error) {
	return nil, nil
}

// TestRefresh: a session's copy of a job serves the next session only while it holds exactly
// what the cache's job holds, its status apart; then it is what a new copy would be.
func TestRefresh(t *testing.T) {
	task := func(job *JobInfo, name string) *TaskInfo { return job.Tasks[TaskID("ns-"+name)] }
	tests := []struct {
		name  string
		do    func(job, c *JobInfo)
		reuse bool
	}{
		{name: "untouched", do: func(job, c *JobInfo) {}, reuse: true},
		{name: "the session rewrote the status and priority", reuse: true, do: func(job, c *JobInfo) {
			c.Status.Phase = schedulingv1beta1.PodGroupUnknown
			c.Status.Conditions = append(c.Status.Conditions, schedulingv1beta1.PodGroupCondition{Type: schedulingv1beta1.PodGroupScheduled})
			c.Priority = 7
		}},
		{name: "the session placed a task and discarded it exactly", reuse: true, do: func(job, c *JobInfo) {
			c.UpdateTaskStatus(task(c, "wait"), Allocated)
			c.UpdateTaskStatus(task(c, "wait"), Pending)
		}},
		{name: "the session placed a task", do: func(job, c *JobInfo) { c.UpdateTaskStatus(task(c, "wait"), Allocated) }},
		{name: "the session gave a task a node", do: func(job, c *JobInfo) { task(c, "wait").NodeName = "n2" }},
		{name: "the session left a last transaction", do: func(job, c *JobInfo) {
			task(c, "wait").LastTransaction = &TransactionContext{NodeName: "n2", Status: Allocated}
		}},
		{name: "the session set bind annotations", do: func(job, c *JobInfo) { task(c, "wait").BindAnnotations = map[string]string{} }},
		{name: "the session added a pre-bind step", do: func(job, c *JobInfo) { task(c, "wait").AddPreBind(&stepForTest{}) }},
		{name: "the session recorded a fit error", do: func(job, c *JobInfo) { c.NodesFitErrors[task(c, "wait").UID] = NewFitErrors() }},
		{name: "the session recorded a queue refusal", do: func(job, c *JobInfo) { c.QueueRefusals = map[TaskID]string{} }},
		{name: "the session recorded a job fit error", do: func(job, c *JobInfo) { c.JobFitErrors = "no" }},
		{name: "the session changed the gang size", do: func(job, c *JobInfo) { c.MinAvailable = 1 }},
		{name: "the session dropped a task", do: func(job, c *JobInfo) { c.DeleteTask(task(c, "wait")) }},
		{name: "the session broke the index", do: func(job, c *JobInfo) {
			c.TaskStatusIndex[Running][task(c, "wait").UID] = task(c, "wait")
		}},
		{name: "the cache moved a task", do: func(job, c *JobInfo) { job.UpdateTaskStatus(task(job, "wait"), Binding) }},
		{name: "the cache added a task", do: func(job, c *JobInfo) {
			job.AddTask(NewTaskInfo(testPod("ns", "more", "", corev1.PodPending, "1")))
		}},
		{name: "the cache took a newer pod", do: func(job, c *JobInfo) {
			job.AddTask(NewTaskInfo(testPod("ns", "wait", "", corev1.PodPending, "1")))
		}},
		{name: "the cache took a newer PodGroup", do: func(job, c *JobInfo) { job.SetPodGroup(job.PodGroup.DeepCopy(), "default") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, c := refreshFixture()
			tt.do(job, c)
			if got := job.Refresh(c); got != tt.reuse {
				t.Fatalf("Refresh = %v, want %v", got, tt.reuse)
			}
			if tt.reuse && !reflect.DeepEqual(c, job.Clone()) {
				t.Errorf("the refreshed copy differs from a new one:\n got  %+v\n want %+v", c, job.Clone())
			}
		})
	}
}

// TestRefreshComparesEveryField: a field added to JobInfo or TaskInfo must be copied by Clone
// and compared by Refresh (or refreshed, as the status is) before it is listed here, or a
// session's change to it would reach the next session.
func TestRefreshComparesEveryField(t *testing.T) {
	fields := func(v any) []string {
		var names []string
		for f := range reflect.TypeOf(v).Fields() {
			names = append(names, f.Name)
		}
		return names
	}
	jobFields := []string{"UID", "Name", "Namespace", "Queue", "Priority", "PriorityClassMissing", "MinAvailable", "TaskMinAvailable",
		"TaskMinAvailableTotal", "MinResources", "PodGroup", "Status", "Tasks", "TaskStatusIndex", "Allocated", "TotalRequest",
		"taskCounts", "pendingBestEffort", "NodesFitErrors", "QueueRefusals", "JobFitErrors", "CreationTimestamp"}
	taskFields := []string{"UID", "Job", "Name", "Namespace", "TaskRole", "Resreq", "InitResreq", "NodeName", "Status",
		"Priority", "Preemptable", "BestEffort", "SchGated", "LastTransaction", "BindAnnotations", "PreBind", "Pod"}
	resourceFields := []string{"MilliCPU", "Memory", "ScalarResources", "MaxTaskNum"}
	for _, tt := range []struct {
		v    any
		want []string
	}{{JobInfo{}, jobFields}, {TaskInfo{}, taskFields}, {Resource{}, resourceFields}} {
		if got := fields(tt.v); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%T has fields %q; Refresh knows %q", tt.v, got, tt.want)
		}
	}
}

// A PodGroup's volcano.sh/preemptable is read as a pod's: the annotation, or where there is
// none the label, and only "false" marks it; a job without a PodGroup is preemptable.
func TestJobPreemptableReadsThePodGroupAsAPod(t *testing.T) {
	key := schedulingv1beta1.PodPreemptable
	for _, tc := range []struct {
		name                string
		annotations, labels map[string]string
		want                bool
	}{
		{"unmarked", nil, nil, true},
		{"annotated false", map[string]string{key: "false"}, nil, false},
		{"labelled false", nil, map[string]string{key: "false"}, false},
		{"annotated true over a label false", map[string]string{key: "true"}, map[string]string{key: "false"}, true},
		{"annotated other than false", map[string]string{key: "no"}, map[string]string{key: "false"}, true},
		{"labelled False", nil, map[string]string{key: "False"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := st.MakePodGroup().Namespace("ns").Name("pg1").MinMember(1).Obj()
			pg.Annotations, pg.Labels = tc.annotations, tc.labels
			job := NewJobInfo("ns/pg1")
			job.SetPodGroup(pg, "default")
			if got := job.Preemptable(); got != tc.want {
				t.Errorf("job Preemptable = %v, want %v", got, tc.want)
			}
			if got := job.Clone().Preemptable(); got != tc.want {
				t.Errorf("clone's Preemptable = %v, want %v", got, tc.want)
			}
			pod := testPod("ns", "p", "", corev1.PodPending, "1")
			pod.Annotations, pod.Labels = tc.annotations, tc.labels
			if got := NewTaskInfo(pod).Preemptable; got != tc.want {
				t.Errorf("a pod marked alike: Preemptable = %v, want %v", got, tc.want)
			}
		})
	}
	if !NewJobInfo("ns/none").Preemptable() {
		t.Error("a job without a PodGroup is not preemptable")
	}
}
