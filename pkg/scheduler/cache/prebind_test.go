package cache

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// recordingStep is a pre-bind step that records its calls and its undo's, and fails with err.
type recordingStep struct {
	name  string
	calls *[]string
	err   error
}

func (s recordingStep) Name() string { return s.name }
func (s recordingStep) PreBind(_ context.Context, r *api.PreBindRequest) (api.Undo, error) {
	*s.calls = append(*s.calls, s.name+" "+r.Pod.Name+" on "+r.Node)
	if s.err != nil {
		return nil, s.err
	}
	return func(context.Context) error {
		*s.calls = append(*s.calls, "undo "+s.name)
		return nil
	}, nil
}

// The bind worker runs a task's pre-bind steps in order before the Binding; the first that
// fails stops the bind: no Binding, no later step, the steps done undone last first, the
// placement undone and the step's error on the pod. A refused Binding undoes every step.
func TestBindRunsPreBindSteps(t *testing.T) {
	stepFails := errors.New("claim ns/data cannot be bound")
	tests := []struct {
		name                string
		firstErr, secondErr error
		bindErr             error
		wantCalls           []string
		wantBindings        int
		wantEvent           string
	}{
		{name: "all succeed", wantCalls: []string{"first p1 on n1", "second p1 on n1"}, wantBindings: 1},
		{name: "the first fails", firstErr: stepFails, wantCalls: []string{"first p1 on n1"},
			wantEvent: "failed to bind to node n1: claim ns/data cannot be bound"},
		{name: "the second fails", secondErr: stepFails, wantCalls: []string{"first p1 on n1", "second p1 on n1", "undo first"},
			wantEvent: "failed to bind to node n1: claim ns/data cannot be bound"},
		{name: "the Binding is refused", bindErr: errors.New("node n1 is gone"),
			wantCalls:    []string{"first p1 on n1", "second p1 on n1", "undo second", "undo first"},
			wantBindings: 1, wantEvent: "failed to bind to node n1: node n1 is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj())
			capture := &bindingCapture{err: tt.bindErr}
			capture.install(env)
			var calls []string
			task := placed(t, env, "p1", "n1", nil)
			task.AddPreBind(recordingStep{name: "first", calls: &calls, err: tt.firstErr})
			task.AddPreBind(recordingStep{name: "second", calls: &calls, err: tt.secondErr})
			if err := env.sc.Bind(task); err != nil {
				t.Fatalf("Bind: %v", err)
			}
			env.sc.processNextBind(context.Background())

			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", calls, tt.wantCalls)
			}
			if len(capture.bindings) != tt.wantBindings {
				t.Errorf("sent %d Bindings, want %d", len(capture.bindings), tt.wantBindings)
			}
			if tt.wantEvent == "" {
				return
			}
			if got := strings.Join(env.events.Take(), "\n"); !strings.Contains(got, tt.wantEvent) {
				t.Errorf("events %q, want %q", got, tt.wantEvent)
			}
			if got := describeCache(env.sc); got[0] != "job ns/pg1 [pg queue=default] p1=Pending" {
				t.Errorf("the refused bind was not undone: %q", got)
			}
		})
	}
}

// waitingStep is a pre-bind step that may wait long: it blocks until release is closed.
type waitingStep struct {
	started chan struct{}
	release chan struct{}
}

func (s waitingStep) Name() string { return "waiting" }
func (s waitingStep) MayWait()     {}
func (s waitingStep) PreBind(ctx context.Context, _ *api.PreBindRequest) (api.Undo, error) {
	close(s.started)
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil, nil
}

// A task whose step waits (for the PV controller) does not hold the bind worker: the next
// task's Binding is sent while it waits, and its own once the step is done. Stop drains it.
func TestWaitingStepLeavesTheWorkerFree(t *testing.T) {
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj(), st.Pod("p2", "1", "").Group("pg1").Obj())
	capture := &bindingCapture{}
	capture.install(env)
	step := waitingStep{started: make(chan struct{}), release: make(chan struct{})}
	first := placed(t, env, "p1", "n1", nil)
	first.AddPreBind(step)
	second := placed(t, env, "p2", "n1", nil)
	for _, task := range []*api.TaskInfo{first, second} {
		if err := env.sc.Bind(task); err != nil {
			t.Fatalf("Bind %s: %v", task.Name, err)
		}
	}
	ctx := context.Background()
	env.sc.processNextBind(ctx) // p1: its step starts on a goroutine of its own
	<-step.started
	env.sc.processNextBind(ctx) // p2, on the same worker
	capture.mu.Lock()
	if len(capture.bindings) != 1 || capture.bindings[0].Name != "p2" {
		t.Errorf("Bindings sent while p1's step waits: %v, want p2's", capture.bindings)
	}
	capture.mu.Unlock()

	close(step.release)
	if !env.sc.Stop(ctx) {
		t.Error("Stop reports a Binding unanswered; want every one answered")
	}
	if len(capture.bindings) != 2 || capture.bindings[1].Name != "p1" {
		t.Errorf("Bindings once the step is done and the cache stopped: %v, want p2's then p1's", capture.bindings)
	}
}

// Binds not started when Stop's time is up are handed back: no Binding is sent, their pods
// stay Pending for the next leader, and Stop returns once the workers have passed them.
func TestStopHandsBackBindsNotStarted(t *testing.T) {
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj(), st.Pod("p2", "1", "").Group("pg1").Obj())
	capture := &bindingCapture{}
	capture.install(env)
	for _, name := range []string{"p1", "p2"} {
		if err := env.sc.Bind(placed(t, env, name, "n1", nil)); err != nil {
			t.Fatalf("Bind %s: %v", name, err)
		}
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := make(chan struct{})
	go func() { env.sc.Stop(expired); close(stopped) }()
	for !env.sc.handingBack.Load() {
		runtime.Gosched()
	}
	for env.sc.processNextBind(context.Background()) { // a worker, after the time is up
	}
	<-stopped
	if len(capture.bindings) != 0 || env.sc.handedBack.Load() != 2 {
		t.Errorf("sent %d Bindings, handed back %d; want none sent, 2 handed back", len(capture.bindings), env.sc.handedBack.Load())
	}
}

// A Binding that Stop cancels in flight may have been bound by the API server or not: it is
// counted as cut off, neither undone in the cache nor reported on the pod as failed, and
// Stop reports it unanswered.
func TestStopCountsBindsCutOff(t *testing.T) {
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj())
	cut, cancel := context.WithCancel(context.Background())
	capture := &bindingCapture{err: context.Canceled}
	capture.install(env)
	if err := env.sc.Bind(placed(t, env, "p1", "n1", nil)); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	cancel() // Stop's cancel of the workers' calls, the request in flight
	env.sc.processNextBind(cut)
	if got := env.sc.bindsCutOff.Load(); got != 1 {
		t.Errorf("binds cut off = %d, want 1", got)
	}
	if got := describeCache(env.sc); !slices.Contains(got, "job ns/pg1 [pg queue=default] p1=Binding@n1") {
		t.Errorf("cache after the cut-off: %v, want p1 still Binding on n1", got)
	}
	if evs := env.events.Take(); len(evs) != 0 || env.sc.resyncs.Len() != 0 {
		t.Errorf("events %v, %d re-reads queued; want none of either", evs, env.sc.resyncs.Len())
	}
	if env.sc.Stop(context.Background()) {
		t.Error("Stop reports every Binding answered after one was cut off")
	}
}

// reservingStep is a pre-bind step whose placement reserved something in the scheduler (as
// VolumeBinding's assumed PVs): it counts the binder's Unreserve, its own PreBind and the
// undo of its work, and runs during while it works.
type reservingStep struct {
	unreserved, preBound, undone int
	during                       func()
}

func (s *reservingStep) Name() string                  { return "reserving" }
func (s *reservingStep) Unreserve(ctx context.Context) { s.unreserved++ }
func (s *reservingStep) PreBind(context.Context, *api.PreBindRequest) (api.Undo, error) {
	s.preBound++
	if s.during != nil {
		s.during()
	}
	return func(context.Context) error { s.undone++; return nil }, nil
}

// A placement's reservation is given back exactly once whichever way its bind ends: by the
// cache when the bind is dropped before its step ran (the pod deleted, or bound by another
// scheduler, while its Binding waited; Stop's time up), by the step's undo when the step ran
// and the Binding was refused (the pod deleted while the step worked), and not at all when the
// pod is bound. The pod's deletion at the end gives back nothing more.
func TestDroppedBindGivesBackItsReservation(t *testing.T) {
	pod := st.Pod("p1", "1", "1Gi").Group("pg1").Obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-p1"}}}}
	bound := pod.DeepCopy()
	bound.Spec.NodeName, bound.Status.Phase = "n2", corev1.PodRunning
	labelled := pod.DeepCopy()
	labelled.Labels = map[string]string{"app": "train"}
	tests := []struct {
		name string
		// before runs once Bind accepted the placement, during while the step works.
		before, during                                         func(env *testEnv)
		bindErr                                                error
		wantUnreserved, wantPreBound, wantUndone, wantBindings int
	}{
		{name: "deleted before the bind started", before: func(env *testEnv) { env.sc.onPodDelete(pod) },
			wantUnreserved: 1},
		{name: "bound by another scheduler before the bind started", before: func(env *testEnv) { env.sc.onPodUpdate(pod, bound) },
			wantUnreserved: 1},
		{name: "Stop's time up before the bind started", before: func(env *testEnv) { env.sc.handingBack.Store(true) },
			wantUnreserved: 1},
		{name: "updated but still pending", before: func(env *testEnv) { env.sc.onPodUpdate(pod, labelled) },
			wantPreBound: 1, wantBindings: 1},
		{name: "deleted while the step works", during: func(env *testEnv) { env.sc.onPodDelete(pod) },
			bindErr: apierrors.NewNotFound(corev1.Resource("pods"), "p1"), wantPreBound: 1, wantUndone: 1, wantBindings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, Options{})
			env.add(t, st.Node("n1", st.Resources("4", "8Gi")).Obj(), st.Node("n2", st.Resources("4", "8Gi")).Obj(),
				newQueue("default"), newPodGroup("pg1", "", 1), pod.DeepCopy())
			capture := &bindingCapture{err: tt.bindErr}
			capture.install(env)
			step := &reservingStep{}
			if tt.during != nil {
				step.during = func() { tt.during(env) }
			}
			task := placed(t, env, "p1", "n1", nil)
			task.AddPreBind(step)
			if err := env.sc.Bind(task); err != nil {
				t.Fatalf("Bind: %v", err)
			}
			if tt.before != nil {
				tt.before(env)
			}
			env.sc.processNextBind(context.Background())
			env.sc.onPodDelete(pod)

			if step.unreserved != tt.wantUnreserved || step.preBound != tt.wantPreBound || step.undone != tt.wantUndone {
				t.Errorf("unreserved %d, pre-bound %d, undone %d; want %d, %d, %d",
					step.unreserved, step.preBound, step.undone, tt.wantUnreserved, tt.wantPreBound, tt.wantUndone)
			}
			if len(capture.bindings) != tt.wantBindings {
				t.Errorf("sent %d Bindings, want %d", len(capture.bindings), tt.wantBindings)
			}
		})
	}
}
