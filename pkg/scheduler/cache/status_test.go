package cache

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

var podGroupsResource = schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")

func onlyPrefixed(events []string, prefix string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

func TestUpdateJobStatusPodGroup(t *testing.T) {
	running := st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj()
	pending := st.Pod("p1", "1", "").Group("pg1").Obj()
	tests := []struct {
		name          string
		pod           *corev1.Pod
		phase         schedulingv1beta1.PodGroupPhase
		statusChanged bool
		wantWrite     bool
		wantEvents    []string
	}{
		{
			name: "waiting, unchanged: no write, the Unschedulable warning (once; TestPodGroupEventsNotRepeated)",
			pod:  pending, phase: schedulingv1beta1.PodGroupPending,
			wantEvents: []string{"PodGroup ns/pg1 Warning Unschedulable: 1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"},
		},
		{
			name: "admitted: written, still a warning",
			pod:  pending, phase: schedulingv1beta1.PodGroupInqueue, statusChanged: true, wantWrite: true,
			wantEvents: []string{"PodGroup ns/pg1 Warning Unschedulable: 1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable"},
		},
		{
			name: "unknown: the warning counts pending tasks only",
			pod:  running, phase: schedulingv1beta1.PodGroupUnknown, statusChanged: true, wantWrite: true,
			wantEvents: []string{"PodGroup ns/pg1 Warning Unschedulable: 0/1 tasks in gang unschedulable: pod group is not ready, 1 Running, 1 minAvailable"},
		},
		{
			name: "running, changed: written, and pod group is ready",
			pod:  running, phase: schedulingv1beta1.PodGroupRunning, statusChanged: true, wantWrite: true,
			wantEvents: []string{"PodGroup ns/pg1 Normal Scheduled: pod group is ready"},
		},
		{
			name: "running, unchanged: nothing",
			pod:  running, phase: schedulingv1beta1.PodGroupRunning,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			env := bindEnv(t, tt.pod)
			job := sessionJob(t, env.sc, "ns/pg1")
			job.Status.Phase = tt.phase
			job.Status.Running = job.TaskCount(api.Running)
			env.vc.ClearActions()

			env.sc.UpdateJobStatus(job, tt.statusChanged)
			env.drainWrites(ctx)

			updates := actionsOn(env.vc.Actions(), "update", podGroupsResource, "")
			if got := len(updates) == 1; got != tt.wantWrite || len(updates) > 1 {
				t.Fatalf("PodGroup updates: %d, want write %v", len(updates), tt.wantWrite)
			}
			if tt.wantWrite {
				sent := updates[0].(clienttesting.UpdateAction).GetObject().(*schedulingv1beta1.PodGroup)
				if diff := cmp.Diff(job.Status, sent.Status); diff != "" {
					t.Errorf("written status (-want +got):\n%s", diff)
				}
				if sent.Spec.MinMember != 1 || sent.Name != "pg1" {
					t.Errorf("the written PodGroup lost its spec: %+v", sent)
				}
			}
			if got := onlyPrefixed(env.events.Take(), "PodGroup"); !reflect.DeepEqual(got, tt.wantEvents) {
				t.Errorf("PodGroup events:\n got  %q\n want %q", got, tt.wantEvents)
			}
		})
	}
}

// TestUpdatePodGroupConflict: the PodGroup changed since the snapshot; the write re-reads it
// and keeps the newer spec.
func TestUpdatePodGroupConflict(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj())
	newer := newPodGroup("pg1", "", 3)
	newer.ResourceVersion = "2"
	mustCreate(t, env.vc.Tracker().Update(podGroupsResource, newer, "ns"))
	conflicts := 0
	env.vc.PrependReactor("update", "podgroups", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.UpdateAction).GetObject().(*schedulingv1beta1.PodGroup).ResourceVersion != "2" {
			conflicts++
			return true, nil, apierrors.NewConflict(podGroupsResource.GroupResource(), "pg1", nil)
		}
		return false, nil, nil
	})

	job := sessionJob(t, env.sc, "ns/pg1")
	job.Status.Phase = schedulingv1beta1.PodGroupInqueue
	env.sc.UpdateJobStatus(job, true)
	env.drainWrites(ctx)

	pg, err := env.vc.SchedulingV1beta1().PodGroups("ns").Get(ctx, "pg1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 || pg.Status.Phase != schedulingv1beta1.PodGroupInqueue || pg.Spec.MinMember != 3 {
		t.Errorf("after %d conflicts: phase %q, minMember %d; want 1 conflict, Inqueue, the newer minMember 3",
			conflicts, pg.Status.Phase, pg.Spec.MinMember)
	}
}

// TestUpdateJobStatusPodConditions: every unplaced, ungated pod gets PodScheduled=False with
// its reason and message, and a FailedScheduling event, only when that changes.
func TestUpdateJobStatusPodConditions(t *testing.T) {
	ctx := context.Background()
	full := api.NewFitErrors()
	full.SetNodeError("n1", api.NewStatus(api.Unschedulable, "Insufficient cpu"))
	fullMsg := "0/1 nodes are unavailable: 1 Insufficient cpu."
	env := bindEnv(t,
		st.Pod("fits-nowhere", "8", "").Group("pg1").Obj(),
		st.Pod("gated", "8", "").Group("pg1").Gated().Obj(),
		st.Pod("would-fit", "1", "").Group("pg1").Obj(),
		st.Pod("already-told", "8", "").Group("pg1").Condition(corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: api.ReasonUnschedulable, Message: fullMsg}).Obj(),
		st.Pod("running", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj(),
	)
	cycle := func(prepare func(job *api.JobInfo)) (events, patched []string) {
		t.Helper()
		job := sessionJob(t, env.sc, "ns/pg1")
		job.Status.Phase = schedulingv1beta1.PodGroupRunning
		for _, name := range []string{"fits-nowhere", "gated", "already-told"} {
			job.NodesFitErrors[taskNamed(t, job, name).UID] = full
		}
		taskNamed(t, job, "would-fit").LastTransaction = &api.TransactionContext{NodeName: "n1", Status: api.Allocated}
		if prepare != nil {
			prepare(job)
		}
		env.kube.ClearActions()
		env.sc.UpdateJobStatus(job, false)
		env.drainWrites(ctx)
		for _, a := range actionsOn(env.kube.Actions(), "patch", corev1.SchemeGroupVersion.WithResource("pods"), "status") {
			patched = append(patched, a.(clienttesting.PatchAction).GetName())
		}
		sort.Strings(patched)
		events = onlyPrefixed(env.events.Take(), "Pod ")
		sort.Strings(events)
		return events, patched
	}

	events, patched := cycle(nil)
	wantEvents := []string{
		"Pod ns/fits-nowhere Warning FailedScheduling: " + fullMsg,
		"Pod ns/would-fit Warning FailedScheduling: Pod ns/would-fit can possibly be assigned to n1, once minAvailable is satisfied",
	}
	if !reflect.DeepEqual(events, wantEvents) {
		t.Errorf("first cycle events:\n got  %q\n want %q", events, wantEvents)
	}
	if want := []string{"fits-nowhere", "would-fit"}; !reflect.DeepEqual(patched, want) {
		t.Errorf("first cycle patched %q, want %q", patched, want)
	}
	for name, want := range map[string]corev1.PodCondition{
		"fits-nowhere": {Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: api.ReasonUnschedulable, Message: fullMsg},
		"would-fit": {Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: api.ReasonSchedulable,
			Message: "Pod ns/would-fit can possibly be assigned to n1, once minAvailable is satisfied"},
	} {
		pod, err := env.kube.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := podScheduledCondition(pod)
		if got == nil {
			t.Errorf("pod %s has no PodScheduled condition", name)
			continue
		}
		if got.LastTransitionTime.IsZero() {
			t.Errorf("pod %s: condition without a transition time", name)
		}
		got.LastTransitionTime = metav1.Time{}
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("pod %s condition (-want +got):\n%s", name, diff)
		}
	}

	// Same decisions, and the informer has not caught up: nothing is sent again.
	if events, patched := cycle(nil); len(events)+len(patched) != 0 {
		t.Errorf("unchanged cycle sent events %q and patches %q", events, patched)
	}

	// One pod's reason changes: only it is told.
	events, patched = cycle(func(job *api.JobInfo) {
		other := api.NewFitErrors()
		other.SetNodeError("n1", api.NewStatus(api.Unschedulable, "node(s) had untolerated taint"))
		job.NodesFitErrors[taskNamed(t, job, "fits-nowhere").UID] = other
	})
	wantEvents = []string{"Pod ns/fits-nowhere Warning FailedScheduling: 0/1 nodes are unavailable: 1 node(s) had untolerated taint."}
	if !reflect.DeepEqual(events, wantEvents) || !reflect.DeepEqual(patched, []string{"fits-nowhere"}) {
		t.Errorf("changed cycle: events %q, patched %q; want %q and [fits-nowhere]", events, patched, wantEvents)
	}
}

// TestFailedConditionWriteIsRetried: a patch that fails is sent again by the next cycle.
func TestFailedConditionWriteIsRetried(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "8", "").Group("pg1").Obj())
	fail := true
	env.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, apierrors.NewServiceUnavailable("try later")
		}
		return false, nil, nil
	})
	patches := func() int {
		job := sessionJob(t, env.sc, "ns/pg1")
		env.kube.ClearActions()
		env.sc.UpdateJobStatus(job, false)
		env.drainWrites(ctx)
		return len(actionsOn(env.kube.Actions(), "patch", corev1.SchemeGroupVersion.WithResource("pods"), "status"))
	}
	if n := patches(); n != 1 {
		t.Fatalf("first cycle sent %d patches, want 1", n)
	}
	fail = false
	if n := patches(); n != 1 {
		t.Errorf("the cycle after a failed patch sent %d patches, want 1", n)
	}
	if n := patches(); n != 0 {
		t.Errorf("the cycle after a successful patch sent %d patches, want 0", n)
	}
}

// TestNoWritesForArrivingGangOrRepeatedEvent: a gang short of its minimum whose PodGroup is
// younger than api.GangArrivalGrace is still being created, and nothing is written about it;
// past the grace it is explained once, and its Unschedulable event is emitted again only when
// its message changes.
func TestNoWritesForArrivingGangOrRepeatedEvent(t *testing.T) {
	ctx := context.Background()
	env := newTestEnv(t, Options{})
	created := metav1.NewTime(env.clock.Now())
	pg := st.MakePodGroup().Namespace("ns").Name("gang").UID("uid-pg-gang").ResourceVersion("1").
		MinMember(4).Phase(schedulingv1beta1.PodGroupInqueue).CreatedAt(created).Obj()
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), newQueue("default"), pg,
		st.Pod("gang-0", "1", "").Group("gang").Obj(), st.Pod("gang-1", "1", "").Group("gang").Obj())
	cycle := func() (events, patched []string) {
		t.Helper()
		job := sessionJob(t, env.sc, "ns/gang")
		env.kube.ClearActions()
		env.sc.UpdateJobStatus(job, false)
		env.drainWrites(ctx)
		for _, a := range actionsOn(env.kube.Actions(), "patch", corev1.SchemeGroupVersion.WithResource("pods"), "status") {
			patched = append(patched, a.(clienttesting.PatchAction).GetName())
		}
		return env.events.Take(), patched
	}

	env.clock.SetTime(created.Add(api.GangArrivalGrace - time.Second))
	if events, patched := cycle(); len(events)+len(patched) != 0 {
		t.Errorf("arriving gang (2 of 4 pods, PodGroup %s old): events %q, patches %q; want none",
			api.GangArrivalGrace-time.Second, events, patched)
	}

	env.clock.SetTime(created.Add(api.GangArrivalGrace))
	events, patched := cycle()
	wantEvent := "PodGroup ns/gang Warning Unschedulable: 2/2 tasks in gang unschedulable: "
	if len(onlyPrefixed(events, wantEvent)) != 1 || len(patched) != 2 {
		t.Errorf("gang past the grace: events %q, patches %q; want one %q event and both pods told", events, patched, wantEvent)
	}
	if events, patched := cycle(); len(events)+len(patched) != 0 {
		t.Errorf("same decision again: events %q, patches %q; want none", events, patched)
	}

	env.add(t, st.Pod("gang-2", "1", "").Group("gang").Obj())
	events, _ = cycle()
	if want := "PodGroup ns/gang Warning Unschedulable: 3/3 tasks in gang unschedulable: "; len(onlyPrefixed(events, want)) != 1 {
		t.Errorf("message changed (a third pod): events %q, want one %q", events, want)
	}
}

// TestPodGroupEventsNotRepeated: Scheduled is emitted when a PodGroup's status becomes ready,
// not again with each later status write (a pod more running); a PodGroup that falls back to
// waiting and becomes ready again gets each event again.
func TestPodGroupEventsNotRepeated(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj())
	cycle := func(phase schedulingv1beta1.PodGroupPhase, running int32) []string {
		t.Helper()
		job := sessionJob(t, env.sc, "ns/pg1")
		job.Status.Phase, job.Status.Running = phase, running
		env.sc.UpdateJobStatus(job, true)
		env.drainWrites(ctx)
		return onlyPrefixed(env.events.Take(), "PodGroup")
	}
	scheduled := []string{"PodGroup ns/pg1 Normal Scheduled: pod group is ready"}
	for i, step := range []struct {
		phase   schedulingv1beta1.PodGroupPhase
		running int32
		want    []string
	}{
		{schedulingv1beta1.PodGroupRunning, 0, scheduled},
		{schedulingv1beta1.PodGroupRunning, 1, nil},
		{schedulingv1beta1.PodGroupUnknown, 1, []string{"PodGroup ns/pg1 Warning Unschedulable: 0/1 tasks in gang unschedulable: pod group is not ready, 1 Running, 1 minAvailable"}},
		{schedulingv1beta1.PodGroupRunning, 1, scheduled},
	} {
		if got := cycle(step.phase, step.running); !reflect.DeepEqual(got, step.want) {
			t.Errorf("step %d (%s, %d running): events %q, want %q", i, step.phase, step.running, got, step.want)
		}
	}
}

// TestPodGroupStatusNotSentTwice: a status still in flight when the next cycle computes it
// again (the informer shows the PodGroup as before) is not sent again; once the PodGroup
// changes under it (another writer, at a newer version), the same status is sent again.
func TestPodGroupStatusNotSentTwice(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj())
	updates := func(rv string) int {
		t.Helper()
		job := sessionJob(t, env.sc, "ns/pg1")
		job.PodGroup.ResourceVersion = rv
		job.Status.Phase, job.Status.Running = schedulingv1beta1.PodGroupRunning, 1
		env.vc.ClearActions()
		env.sc.UpdateJobStatus(job, true)
		env.drainWrites(ctx)
		return len(actionsOn(env.vc.Actions(), "update", podGroupsResource, ""))
	}
	for i, step := range []struct {
		rv   string
		want int
	}{{"1", 1}, {"1", 0}, {"1", 0}, {"7", 1}, {"7", 0}} {
		if got := updates(step.rv); got != step.want {
			t.Errorf("step %d (PodGroup at version %s): %d updates, want %d", i, step.rv, got, step.want)
		}
	}
}

// TestStatusWriteWaits: a PodGroup's status changes (phase, counts) are written after the
// delay, once, with the latest; only a Volcano Job's PodGroup without pods, whose controller
// waits for Inqueue to create them, is written at once.
func TestStatusWriteWaits(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj())
	env.sc.statusWriteDelay = 300 * time.Millisecond
	closeSession := func(name api.JobID, phase schedulingv1beta1.PodGroupPhase, running int32) {
		job := sessionJob(t, env.sc, name)
		job.Status.Phase, job.Status.Running = phase, running
		env.sc.UpdateJobStatus(job, true)
	}
	type update struct {
		name    string
		phase   schedulingv1beta1.PodGroupPhase
		running int32
	}
	updates := func() []update {
		var got []update
		for _, a := range actionsOn(env.vc.Actions(), "update", podGroupsResource, "") {
			pg := a.(clienttesting.UpdateAction).GetObject().(*schedulingv1beta1.PodGroup)
			got = append(got, update{pg.Name, pg.Status.Phase, pg.Status.Running})
		}
		return got
	}
	env.vc.ClearActions()
	closeSession("ns/pg1", schedulingv1beta1.PodGroupInqueue, 0)
	closeSession("ns/pg1", schedulingv1beta1.PodGroupRunning, 1)
	env.drainWrites(ctx)
	if got := updates(); len(got) != 0 {
		t.Fatalf("status changes of a PodGroup with pods written at once: %v", got)
	}
	// No status worker runs in these tests: run the writes as they become due.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		env.drainWrites(ctx)
		return len(updates()) > 0, nil
	})
	want := []update{{"pg1", schedulingv1beta1.PodGroupRunning, 1}}
	if err != nil || !reflect.DeepEqual(updates(), want) {
		t.Fatalf("after the delay: updates %v, want %v (%v)", updates(), want, err)
	}

	// Without pods: a Volcano Job's PodGroup at once (its controller creates the pods on
	// Inqueue), another's (e.g. Kubeflow's, which creates them anyway) after the delay.
	vcjob := newPodGroup("vcjob", "", 2)
	vcjob.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "j", UID: "u", Controller: ptr.To(true)}}
	env.add(t, vcjob, newPodGroup("kubeflow", "", 2))
	env.vc.ClearActions()
	closeSession("ns/vcjob", schedulingv1beta1.PodGroupInqueue, 0)
	closeSession("ns/kubeflow", schedulingv1beta1.PodGroupInqueue, 0)
	env.drainWrites(ctx)
	if got, want := updates(), []update{{"vcjob", schedulingv1beta1.PodGroupInqueue, 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("PodGroups without pods: updates %v, want %v at once and none for the other yet", got, want)
	}
}

// TestStatusWriteDelayByJob: a gang still arriving is not written (its controller's own
// PodGroup without pods excepted, at once), nor one with binds pending (a pipelined job's
// placements are not binds); one that completed is written at once, however young (a failed
// pod does not make its gang one still arriving); one whose bound pods are yet to start waits
// longer, so that their running count goes in the same write; others wait the delay.
func TestStatusWriteDelayByJob(t *testing.T) {
	const delay = time.Second
	now := time.Now()
	env := newTestEnv(t, Options{})
	vcjob := newPodGroup("vcjob", "", 2)
	vcjob.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "j", UID: "u", Controller: ptr.To(true)}}
	arriving := newPodGroup("arriving", "", 2)
	arriving.CreationTimestamp = metav1.NewTime(now)
	late := newPodGroup("late", "", 2)
	late.CreationTimestamp = metav1.NewTime(now.Add(-api.GangArrivalGrace))
	failed := newPodGroup("failed", "", 1)
	failed.CreationTimestamp = metav1.NewTime(now)
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), newQueue("default"), vcjob, arriving, late, failed,
		newPodGroup("starting", "", 1), newPodGroup("running", "", 1), newPodGroup("binding", "", 1), newPodGroup("pipelined", "", 1),
		st.Pod("a-0", "1", "").Group("arriving").Obj(), st.Pod("l-0", "1", "").Group("late").Obj(), st.Pod("b-0", "1", "").Group("binding").Obj(),
		st.Pod("p-0", "1", "").Group("pipelined").Obj(), st.Pod("f-0", "1", "").Group("failed").Node("n1").Phase(corev1.PodFailed).Obj(),
		st.Pod("s-0", "1", "").Group("starting").Node("n1").Obj(),
		st.Pod("r-0", "1", "").Group("running").Node("n1").Phase(corev1.PodRunning).Obj())
	for _, tc := range []struct {
		job api.JobID
		// placed, when set, is the job's pod placed in the session with status placedAs:
		// Binding (its bind pending) or Allocated (kept as a pipelined job's, no bind).
		placed   string
		placedAs api.TaskStatus
		// phase, when set, is the phase the session found.
		phase     schedulingv1beta1.PodGroupPhase
		wantDelay time.Duration
		wantWrite bool
	}{
		{job: "ns/vcjob", wantDelay: 0, wantWrite: true},
		{job: "ns/arriving", wantDelay: 0, wantWrite: false},
		{job: "ns/late", wantDelay: delay, wantWrite: true},
		{job: "ns/binding", placed: "b-0", placedAs: api.Binding, wantDelay: 0, wantWrite: false},
		{job: "ns/pipelined", placed: "p-0", placedAs: api.Allocated, wantDelay: delay, wantWrite: true},
		{job: "ns/failed", phase: schedulingv1beta1.PodGroupCompleted, wantDelay: 0, wantWrite: true},
		{job: "ns/starting", wantDelay: startingWriteDelay(delay), wantWrite: true},
		{job: "ns/running", wantDelay: delay, wantWrite: true},
	} {
		job := sessionJob(t, env.sc, tc.job)
		if tc.placed != "" {
			task := taskNamed(t, job, tc.placed)
			task.NodeName = "n1"
			job.UpdateTaskStatus(task, tc.placedAs)
		}
		if tc.phase != "" {
			job.Status.Phase = tc.phase
		}
		gotDelay, gotWrite := statusWriteDelay(job, job.Arriving(now), delay)
		if gotDelay != tc.wantDelay || gotWrite != tc.wantWrite {
			t.Errorf("%s: delay %v, write %t; want %v, %t", tc.job, gotDelay, gotWrite, tc.wantDelay, tc.wantWrite)
		}
	}
}
