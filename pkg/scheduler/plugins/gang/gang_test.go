package gang

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// task describes one pod of a test job.
type task struct {
	role       string
	status     api.TaskStatus
	bestEffort bool
}

// newJob builds PodGroup ns/<name> and its pods "<name>-<i>", each requesting 1 cpu unless
// best-effort, moved to the given status.
func newJob(name string, minMember int32, minTaskMember map[string]int32, old []schedulingv1beta1.PodGroupCondition, tasks ...task) *api.JobInfo {
	pg := st.MakePodGroup().Namespace("ns").Name(name).MinMember(minMember).MinTaskMember(minTaskMember).Conditions(old...).Obj()
	job := api.NewJobInfo(api.NewJobID("ns", name))
	job.SetPodGroup(pg, "default")
	for i, spec := range tasks {
		podName := fmt.Sprintf("%s-%d", name, i)
		var requests corev1.ResourceList
		if !spec.bestEffort {
			requests = st.Resources("1", "")
		}
		// No phase: the pod as the API server first stores it.
		pod := st.MakePod().Namespace("ns").UID(podName).Name(podName).Group(name).Annotation(batchv1alpha1.TaskSpecKey, spec.role).
			Container(requests).Phase("").Obj()
		t := api.NewTaskInfo(pod)
		job.AddTask(t)
		if spec.status != api.Pending {
			t.NodeName = "n0"
			job.UpdateTaskStatus(t, spec.status)
		}
	}
	return job
}

// builders builds gang alone, for sessions.
var builders = map[string]framework.PluginBuilder{PluginName: New}

// onN0 is a cache whose snapshot holds the jobs and one 8-cpu node n0.
func onN0(jobs ...*api.JobInfo) *frameworktest.Cache {
	n0 := api.NewNodeInfo(st.Node("n0", st.Resources("8", "")).Obj())
	return &frameworktest.Cache{Snap: frameworktest.ClusterOf([]*api.NodeInfo{n0}, jobs...)}
}

func repeat(n int, t task) []task {
	out := make([]task, n)
	for i := range out {
		out[i] = t
	}
	return out
}

var (
	pending   = task{status: api.Pending}
	allocated = task{status: api.Allocated}
	running   = task{status: api.Running}
	failed    = task{status: api.Failed}
)

func TestJobValid(t *testing.T) {
	cases := []struct {
		name          string
		minMember     int32
		minTaskMember map[string]int32
		tasks         []task
		want          *framework.ValidateResult
	}{
		{name: "enough pending pods", minMember: 2, tasks: repeat(2, pending)},
		{name: "fewer pods than minMember", minMember: 3, tasks: repeat(2, pending),
			want: &framework.ValidateResult{Reason: "NotEnoughTasks", Message: "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"}},
		{name: "failed pods are not valid", minMember: 3, tasks: []task{pending, running, failed},
			want: &framework.ValidateResult{Reason: "NotEnoughTasks", Message: "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"}},
		{name: "a role short of its minTaskMember", minMember: 3, minTaskMember: map[string]int32{"ps": 1, "worker": 2},
			tasks: []task{{role: "ps"}, {role: "worker"}, {role: "worker", status: api.Failed}, {role: "other"}},
			want:  &framework.ValidateResult{Reason: "NotEnoughPodsOfTask", Message: "Not enough valid pods of each task for gang-scheduling"}},
		{name: "role check skipped when minMember is below the roles' total", minMember: 2, minTaskMember: map[string]int32{"ps": 1, "worker": 2},
			tasks: []task{{role: "ps"}, {role: "worker"}, {role: "worker", status: api.Failed}}},
		{name: "every role meets its minimum", minMember: 3, minTaskMember: map[string]int32{"ps": 1, "worker": 2},
			tasks: []task{{role: "ps"}, {role: "worker"}, {role: "worker", status: api.Running}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("pg", tc.minMember, tc.minTaskMember, nil, tc.tasks...)
			ssn := frameworktest.OpenSession(t, onN0(job), "allocate", builders, conf.PluginOption{Name: PluginName})
			if diff := cmp.Diff(tc.want, ssn.JobValid(job)); diff != "" {
				t.Errorf("JobValid (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobReadyAndPipelined(t *testing.T) {
	ps := func(s api.TaskStatus) task { return task{role: "ps", status: s} }
	worker := func(s api.TaskStatus) task { return task{role: "worker", status: s} }
	roles := map[string]int32{"ps": 1, "worker": 1}
	cases := []struct {
		name          string
		minMember     int32
		minTaskMember map[string]int32
		tasks         []task
		ready         bool
		pipelined     bool
	}{
		{name: "all allocated", minMember: 2, tasks: repeat(2, allocated), ready: true, pipelined: true},
		{name: "running and allocated count together", minMember: 2, tasks: []task{running, allocated, pending}, ready: true, pipelined: true},
		{name: "one short", minMember: 2, tasks: []task{allocated, pending}},
		{name: "the missing one waits for released resources", minMember: 2, tasks: []task{allocated, {status: api.Pipelined}}, pipelined: true},
		{name: "a best-effort pending pod always fits", minMember: 2, tasks: []task{allocated, {bestEffort: true}}, ready: true, pipelined: true},
		{name: "minMember met but a role is not", minMember: 2, minTaskMember: roles,
			tasks: []task{worker(api.Allocated), worker(api.Allocated), ps(api.Pending)}},
		{name: "each role met", minMember: 2, minTaskMember: roles,
			tasks: []task{worker(api.Allocated), ps(api.Running), worker(api.Pending)}, ready: true, pipelined: true},
		{name: "a role waits for released resources", minMember: 2, minTaskMember: roles,
			tasks: []task{worker(api.Allocated), ps(api.Pipelined)}, pipelined: true},
		{name: "roles ignored when minMember is below their total", minMember: 2, minTaskMember: map[string]int32{"ps": 1, "worker": 2},
			tasks: []task{worker(api.Allocated), worker(api.Allocated), ps(api.Pending)}, ready: true, pipelined: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("pg", tc.minMember, tc.minTaskMember, nil, tc.tasks...)
			ssn := frameworktest.OpenSession(t, onN0(job), "allocate", builders, conf.PluginOption{Name: PluginName})
			if got := ssn.JobReady(job); got != tc.ready {
				t.Errorf("JobReady = %v, want %v", got, tc.ready)
			}
			if got := ssn.JobPipelined(job); got != tc.pipelined {
				t.Errorf("JobPipelined = %v, want %v", got, tc.pipelined)
			}
		})
	}
}

func TestJobOrderNotReadyFirst(t *testing.T) {
	// The ready job is older, so the framework's fallback alone would put it first.
	ready := newJob("ready", 1, nil, nil, running)
	ready.CreationTimestamp = metav1.Unix(100, 0)
	short := newJob("short", 2, nil, nil, running, pending)
	short.CreationTimestamp = metav1.Unix(200, 0)
	alsoShort := newJob("also-short", 1, nil, nil, pending)
	alsoShort.CreationTimestamp = metav1.Unix(300, 0)
	ssn := frameworktest.OpenSession(t, onN0(ready, short, alsoShort), "allocate", builders, conf.PluginOption{Name: PluginName})

	cases := []struct {
		l, r *api.JobInfo
		want bool
	}{
		{short, ready, true},
		{ready, short, false},
		// Both short of their minimum: gang has no opinion, the older goes first.
		{short, alsoShort, true},
		{alsoShort, short, false},
	}
	for _, tc := range cases {
		if got := ssn.JobOrderFn(tc.l, tc.r); got != tc.want {
			t.Errorf("JobOrderFn(%s, %s) = %v, want %v", tc.l.Name, tc.r.Name, got, tc.want)
		}
	}
}

// Classic preempt and reclaim keep a victim job at minMember only, whatever its roles' minTaskMember,
// as upstream v1.15.1's gang plugin (its preemptableFn counts ready pods against minMember;
// only the gang actions' bundles keep each role at its minimum, as gangevict's tests pin):
// a VolcanoJob of minMember 3 with one ps (minTaskMember 1) and four workers (minTaskMember
// 2), all running, lets any of its pods go and any two together, its only ps among them,
// but no three.
func TestEvictionKeepsMinMemberNotRoles(t *testing.T) {
	ps, worker := task{role: "ps", status: api.Running}, task{role: "worker", status: api.Running}
	train := newJob("train", 3, map[string]int32{"ps": 1, "worker": 2}, nil, ps, worker, worker, worker, worker)
	preemptor := newJob("p", 1, nil, nil, pending)
	ssn := frameworktest.OpenSession(t, onN0(train, preemptor), "preempt, reclaim", builders, conf.PluginOption{Name: PluginName})
	byName := map[string]*api.TaskInfo{}
	var candidates []*api.TaskInfo
	for _, task := range train.Tasks {
		byName[task.Name] = task
		candidates = append(candidates, task)
	}
	var p *api.TaskInfo
	for _, task := range preemptor.Tasks {
		p = task
	}
	set := func(names ...string) []*api.TaskInfo {
		out := make([]*api.TaskInfo, len(names))
		for i, n := range names {
			out[i] = byName[n]
		}
		return out
	}
	for _, action := range []struct {
		name     string
		allowed  func(*api.TaskInfo, []*api.TaskInfo) []*api.TaskInfo
		together func([]*api.TaskInfo) bool
	}{
		{"preempt", ssn.Preemptable, ssn.PreemptTogether},
		{"reclaim", ssn.Reclaimable, ssn.ReclaimTogether},
	} {
		if got := action.allowed(p, candidates); len(got) != len(candidates) {
			t.Errorf("%s: %d of the job's %d pods may go, want all", action.name, len(got), len(candidates))
		}
		for _, tc := range []struct {
			victims []string
			want    bool
		}{
			{[]string{"train-0"}, true},
			{[]string{"train-0", "train-1"}, true},
			{[]string{"train-1", "train-2"}, true},
			{[]string{"train-0", "train-1", "train-2"}, false},
			{[]string{"train-1", "train-2", "train-3"}, false},
		} {
			if got := action.together(set(tc.victims...)); got != tc.want {
				t.Errorf("%s: %v may go together: %v, want %v", action.name, tc.victims, got, tc.want)
			}
		}
	}
}

func TestOnSessionCloseConditions(t *testing.T) {
	const thisSession = "<this session>"
	oldUnschedulable := schedulingv1beta1.PodGroupCondition{
		Type: schedulingv1beta1.PodGroupUnschedulableType, Status: corev1.ConditionTrue, TransitionID: "earlier",
		Reason: "NotEnoughResources", Message: "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable",
	}
	insufficientVGPUMemory := func(job *api.JobInfo, pod string) {
		fe := api.NewFitErrors()
		fe.SetNodeError("n0", api.NewStatus(api.Unschedulable, "Insufficient volcano.sh/vgpu-memory"))
		job.NodesFitErrors[api.TaskID(pod)] = fe
	}
	cases := []struct {
		name string
		job  *api.JobInfo
		// inSession acts on the open session before it closes.
		inSession func(t *testing.T, ssn *framework.Session, job *api.JobInfo)
		want      []schedulingv1beta1.PodGroupCondition
	}{
		{
			name:      "one pod fit before the statement was discarded, the other did not",
			job:       newJob("pg", 2, nil, nil, pending, pending),
			inSession: allocateFirstThenDiscard,
			want: []schedulingv1beta1.PodGroupCondition{{
				Type: "Unschedulable", Status: "True", TransitionID: thisSession, Reason: "NotEnoughResources",
				Message: "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 1 Schedulable, 1 Unschedulable",
			}},
		},
		{
			name: "the pod that did not fit names its node failures",
			job:  newJob("pg", 2, nil, nil, pending, pending),
			inSession: func(t *testing.T, ssn *framework.Session, job *api.JobInfo) {
				allocateFirstThenDiscard(t, ssn, job)
				insufficientVGPUMemory(job, "pg-1")
			},
			want: []schedulingv1beta1.PodGroupCondition{{
				Type: "Unschedulable", Status: "True", TransitionID: thisSession, Reason: "NotEnoughResources",
				Message: "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 1 Schedulable, 1 Unschedulable. " +
					"Origin reason is pg-1: 0/1 nodes are unavailable: 1 Insufficient volcano.sh/vgpu-memory.",
			}},
		},
		{
			name: "a running pod counts as schedulable; an earlier Unschedulable is replaced",
			job:  newJob("pg", 3, nil, []schedulingv1beta1.PodGroupCondition{oldUnschedulable}, running, pending, pending),
			want: []schedulingv1beta1.PodGroupCondition{{
				Type: "Unschedulable", Status: "True", TransitionID: thisSession, Reason: "NotEnoughResources",
				Message: "2/3 tasks in gang unschedulable: pod group is not ready, 1 Running, 2 Pending, 3 minAvailable; Pending: 2 Unschedulable",
			}},
		},
		{
			name: "ready job is Scheduled",
			job:  newJob("pg", 2, nil, nil, running, allocated),
			want: []schedulingv1beta1.PodGroupCondition{{
				Type: "Scheduled", Status: "True", TransitionID: thisSession, Reason: "tasks in gang are ready to be scheduled",
			}},
		},
		{
			name: "Scheduled is added beside an earlier Unschedulable, which stays as it was",
			job:  newJob("pg", 2, nil, []schedulingv1beta1.PodGroupCondition{oldUnschedulable}, running, running),
			want: []schedulingv1beta1.PodGroupCondition{oldUnschedulable, {
				Type: "Scheduled", Status: "True", TransitionID: thisSession, Reason: "tasks in gang are ready to be scheduled",
			}},
		},
		{
			name: "a job whose pods do not exist yet gets no condition",
			job:  newJob("pg", 2, nil, []schedulingv1beta1.PodGroupCondition{oldUnschedulable}),
			want: []schedulingv1beta1.PodGroupCondition{oldUnschedulable},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenSession(t, onN0(tc.job), "allocate", builders, conf.PluginOption{Name: PluginName})
			if tc.inSession != nil {
				tc.inSession(t, ssn, tc.job)
			}
			framework.CloseSession(ssn)

			got := append([]schedulingv1beta1.PodGroupCondition(nil), tc.job.Status.Conditions...)
			for i := range got {
				if got[i].TransitionID != string(ssn.UID) {
					continue
				}
				if got[i].LastTransitionTime.IsZero() {
					t.Errorf("condition %s written without LastTransitionTime", got[i].Type)
				}
				got[i].TransitionID, got[i].LastTransitionTime = thisSession, metav1.Time{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

// allocateFirstThenDiscard replays a failed allocate pass: pod 0 is placed on n0, pod 1
// finds no place, the gang is not ready and the statement is discarded.
func allocateFirstThenDiscard(t *testing.T, ssn *framework.Session, job *api.JobInfo) {
	t.Helper()
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(job.Tasks["pg-0"], ssn.Nodes["n0"]); err != nil {
		t.Fatal(err)
	}
	if ssn.JobReady(job) || ssn.JobPipelined(job) {
		t.Fatal("half a gang must be neither ready nor pipelined")
	}
	stmt.Discard()
}

// The gang metrics follow what the conditions say: the unready job's missing tasks and a
// retry, and the number of unready jobs (upstream's names, help texts and labels).
func TestOnSessionCloseMetrics(t *testing.T) {
	m, reg := frameworktest.RegisteredMetrics()
	unready := newJob("short", 3, nil, nil, running, pending, pending)
	framework.CloseSession(frameworktest.OpenRecording(t, m, onN0(unready), "allocate", builders, conf.PluginOption{Name: PluginName}))
	want := `
# HELP volcano_unschedule_task_count Number of tasks could not be scheduled
# TYPE volcano_unschedule_task_count gauge
volcano_unschedule_task_count{job_id="short"} 2
# HELP volcano_job_retry_counts Number of retry counts for one job
# TYPE volcano_job_retry_counts counter
volcano_job_retry_counts{job_id="short"} 1
# HELP volcano_unschedule_job_count Number of jobs could not be scheduled
# TYPE volcano_unschedule_job_count gauge
volcano_unschedule_job_count 1
`
	names := []string{"volcano_unschedule_task_count", "volcano_job_retry_counts", "volcano_unschedule_job_count"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	framework.CloseSession(frameworktest.OpenRecording(t, m, onN0(newJob("ready", 2, nil, nil, running, running)), "allocate", builders, conf.PluginOption{Name: PluginName}))
	want = `
# HELP volcano_unschedule_job_count Number of jobs could not be scheduled
# TYPE volcano_unschedule_job_count gauge
volcano_unschedule_job_count 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "volcano_unschedule_job_count"); err != nil {
		t.Errorf("after a ready cycle: %v", err)
	}
}
