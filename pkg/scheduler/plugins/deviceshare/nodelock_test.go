package deviceshare

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// With deviceshare.NodeLockEnable a placed vGPU task asks the binder for the node lock, a
// task without vGPUs does not, and undoing the placement takes the request back.
func TestNodeLockRequest(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{nodeInfo(gpuNode("n1", 0, gpus(1, 10, 30000, h200)))}, 1,
			pod("gpu", "pg", vgpuCtr("main", 1, 1000, 0)), pod("plain", "pg", ctr("main", "cpu=1")))}
		cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{
			Name: PluginName, Arguments: conf.Arguments{VGPUEnableArg: true, NodeLockEnableArg: enabled},
		}}}}}
		ssn := framework.OpenSession(cache, cfg, registry(nil), nil)
		var want []api.PreBindStep
		if enabled {
			want = []api.PreBindStep{nodeLockStep}
		}
		stmt := ssn.NewStatement()
		for _, name := range []string{"gpu", "plain"} {
			if err := stmt.Allocate(taskOf(t, ssn, name), ssn.Nodes["n1"]); err != nil {
				t.Fatalf("Allocate %s: %v", name, err)
			}
		}
		if got := taskOf(t, ssn, "gpu").PreBind; !slices.Equal(got, want) {
			t.Errorf("lock enabled %v: vGPU task's pre-bind steps %v, want %v", enabled, got, want)
		}
		if got := taskOf(t, ssn, "plain").PreBind; got != nil {
			t.Errorf("lock enabled %v: a task without vGPUs has pre-bind steps %v", enabled, got)
		}
		stmt.Discard()
		if got := taskOf(t, ssn, "gpu").PreBind; got != nil {
			t.Errorf("lock enabled %v: pre-bind steps %v left after Discard", enabled, got)
		}
	}
}

// The node lock step takes a free or expired lock (its value the bind time) and refuses the
// bind, with upstream's message, while a fresh one is held.
func TestNodeLockStep(t *testing.T) {
	const lock = vgpu.NodeLockAnnotation
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		held    string // the lock's value on the node before the bind; "" for none
		wantErr string
	}{
		{name: "free"},
		{name: "expired: left by a pod that never reached its device plugin", held: "2026-01-02T02:59:05Z"},
		{name: "taken a minute ago", held: "2026-01-02T03:03:05Z",
			wantErr: "node n1 locked for ns/p1 hamivgpu lockname node n1 has been locked within 5 minutes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}}
			if tt.held != "" {
				node.Annotations = map[string]string{lock: tt.held}
			}
			client := fake.NewClientset(node)
			_, err := nodeLockStep.PreBind(context.Background(), lockRequest(client, now))
			got, getErr := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if getErr != nil {
				t.Fatal(getErr)
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				if got.Annotations[lock] != tt.held {
					t.Errorf("lock %q, want it left at %q", got.Annotations[lock], tt.held)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := now.Format(time.RFC3339); got.Annotations[lock] != want {
				t.Errorf("lock %q, want %q (the bind time)", got.Annotations[lock], want)
			}
		})
	}
}

// lockRequest is the pre-bind request of pod ns/p1 to node n1 at now.
func lockRequest(client *fake.Clientset, now time.Time) *api.PreBindRequest {
	return &api.PreBindRequest{Client: client, Clock: clocktesting.NewFakePassiveClock(now),
		Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}}, Node: "n1"}
}

// A bind that fails after the lock was taken releases it (the node's other vGPU pods would
// wait five minutes otherwise), unless the lock is no longer the one it took: then another
// bind holds it.
func TestNodeLockUndo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, takenOver := range []bool{false, true} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}}
		client := fake.NewClientset(node)
		ctx := context.Background()
		undo, err := nodeLockStep.PreBind(ctx, lockRequest(client, now))
		if err != nil || undo == nil {
			t.Fatalf("PreBind: undo %v, error %v", undo != nil, err)
		}
		other := vgpu.NodeLockValue(now.Add(vgpu.NodeLockExpiry + time.Second))
		if takenOver {
			if _, err := nodeLockStep.PreBind(ctx, lockRequest(client, now.Add(vgpu.NodeLockExpiry+time.Second))); err != nil {
				t.Fatal(err)
			}
		}
		if err := undo(ctx); err != nil {
			t.Fatalf("undo: %v", err)
		}
		got, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lock, held := got.Annotations[vgpu.NodeLockAnnotation]
		switch {
		case !takenOver && held:
			t.Errorf("lock %q left after the undo, want it removed", lock)
		case takenOver && lock != other:
			t.Errorf("lock %q after the undo, want the other bind's %q kept", lock, other)
		}
	}
}
