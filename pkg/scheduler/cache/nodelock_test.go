package cache

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// A task carrying a node lock is bound only after the lock is taken: a free or expired lock
// is taken (its value the bind time), a fresh one refuses the bind, which is undone with the
// lock's message on the pod, and no Binding is sent.
func TestBindTakesNodeLock(t *testing.T) {
	const lock = vgpu.NodeLockAnnotation
	tests := []struct {
		name     string
		held     string // the lock's value on the node before the bind; "" for none
		wantBind bool
	}{
		{name: "free", wantBind: true},
		{name: "expired: left by a pod that never reached its device plugin", held: "2026-01-02T02:59:05Z", wantBind: true},
		{name: "taken a minute ago", held: "2026-01-02T03:03:05Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			env := bindEnv(t, newPod("p1", "1", inGroup("pg1")))
			capture := &bindingCapture{}
			capture.install(env)
			if tt.held != "" {
				node, err := env.kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				node.Annotations = map[string]string{lock: tt.held}
				if _, err := env.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			task := placed(t, env, "p1", "n1", nil)
			task.NodeLock = lock
			if err := env.sc.Bind(task); err != nil {
				t.Fatalf("Bind: %v", err)
			}
			env.sc.processNextBind(ctx)

			node, err := env.kube.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.wantBind {
				if len(capture.bindings) != 0 {
					t.Fatalf("sent a Binding although the node was locked")
				}
				if node.Annotations[lock] != tt.held {
					t.Errorf("lock %q, want it left at %q", node.Annotations[lock], tt.held)
				}
				want := "failed to bind to node n1: node n1 locked for ns/p1 hamivgpu lockname node n1 has been locked within 5 minutes"
				if got := strings.Join(env.events.take(), "\n"); !strings.Contains(got, want) {
					t.Errorf("events %q, want one saying %q", got, want)
				}
				if got := describeCache(env.sc); got[0] != "job ns/pg1 [pg queue=default] p1=Pending" {
					t.Errorf("the refused bind was not undone: %q", got)
				}
				return
			}
			if len(capture.bindings) != 1 {
				t.Fatalf("sent %d Bindings, want 1", len(capture.bindings))
			}
			if want := env.clock.Now().Format(time.RFC3339); node.Annotations[lock] != want {
				t.Errorf("lock %q, want %q (the bind time)", node.Annotations[lock], want)
			}
		})
	}
}
