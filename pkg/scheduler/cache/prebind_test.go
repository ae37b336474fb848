package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// recordingStep is a pre-bind step that records its calls and fails with err.
type recordingStep struct {
	name  string
	calls *[]string
	err   error
}

func (s recordingStep) Name() string { return s.name }
func (s recordingStep) PreBind(_ context.Context, r *api.PreBindRequest) error {
	*s.calls = append(*s.calls, s.name+" "+r.Pod.Name+" on "+r.Node)
	return s.err
}

// The bind worker runs a task's pre-bind steps in order before the Binding; the first that
// fails stops the bind: no Binding, no later step, the placement undone and the step's error
// on the pod.
func TestBindRunsPreBindSteps(t *testing.T) {
	for _, fail := range []bool{false, true} {
		ctx := context.Background()
		env := bindEnv(t, newPod("p1", "1", inGroup("pg1")))
		capture := &bindingCapture{}
		capture.install(env)
		var calls []string
		var err error
		if fail {
			err = errors.New("claim ns/data cannot be bound")
		}
		task := placed(t, env, "p1", "n1", nil)
		task.AddPreBind(recordingStep{name: "first", calls: &calls, err: err})
		task.AddPreBind(recordingStep{name: "second", calls: &calls})
		if err := env.sc.Bind(task); err != nil {
			t.Fatalf("Bind: %v", err)
		}
		env.sc.processNextBind(ctx)

		want := []string{"first p1 on n1", "second p1 on n1"}
		if fail {
			want = want[:1]
		}
		if !slices.Equal(calls, want) {
			t.Errorf("fail %v: steps ran %q, want %q", fail, calls, want)
		}
		if !fail {
			if len(capture.bindings) != 1 {
				t.Errorf("sent %d Bindings, want 1", len(capture.bindings))
			}
			continue
		}
		if len(capture.bindings) != 0 {
			t.Errorf("sent a Binding although a pre-bind step failed")
		}
		if got := strings.Join(env.events.take(), "\n"); !strings.Contains(got, "failed to bind to node n1: claim ns/data cannot be bound") {
			t.Errorf("events %q, want the step's error", got)
		}
		if got := describeCache(env.sc); got[0] != "job ns/pg1 [pg queue=default] p1=Pending" {
			t.Errorf("the refused bind was not undone: %q", got)
		}
	}
}
