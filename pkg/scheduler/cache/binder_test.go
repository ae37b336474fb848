package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// bindingCapture answers "create pods/binding" with err and keeps what was sent.
type bindingCapture struct {
	mu       sync.Mutex
	bindings []*corev1.Binding
	err      error
}

func (c *bindingCapture) install(env *testEnv) {
	env.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.bindings = append(c.bindings, action.(clienttesting.CreateAction).GetObject().(*corev1.Binding))
		return true, nil, c.err
	})
}

// bindEnv is a node n1 of 4 CPUs, the default queue, and PodGroup pg1 with the given pods.
func bindEnv(t *testing.T, pods ...*corev1.Pod) *testEnv {
	t.Helper()
	env := newTestEnv(t, Options{})
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), newQueue("default"), newPodGroup("pg1", "", 1))
	for _, p := range pods {
		env.add(t, p)
	}
	return env
}

// placed is the session's task for pod name, placed on node with the given annotations.
func placed(t *testing.T, env *testEnv, name, node string, annotations map[string]string) *api.TaskInfo {
	t.Helper()
	task := taskNamed(t, sessionJob(t, env.sc, "ns/pg1"), name)
	task.NodeName = node
	task.Status = api.Allocated
	task.BindAnnotations = annotations
	return task
}

func TestBindSuccess(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj())
	capture := &bindingCapture{}
	capture.install(env)
	assignment := map[string]string{"volcano.sh/vgpu-ids-new": "GPU-0,NVIDIA,2000,30:;", "volcano.sh/vgpu-node": "n1"}

	task := placed(t, env, "p1", "n1", assignment)
	if err := env.sc.Bind(task); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	task.BindAnnotations["volcano.sh/vgpu-node"] = "changed by the session afterwards"

	// The next snapshot sees the placement before the API server does.
	want := []string{"job ns/pg1 [pg queue=default] p1=Binding@n1", "node n1: idle cpu 3000, tasks p1"}
	if got := describeCache(env.sc); !reflect.DeepEqual(got, want) {
		t.Errorf("cache after Bind:\n got  %q\n want %q", got, want)
	}
	if snap := env.sc.Snapshot(); snap.Nodes["n1"].Idle.MilliCPU != 3000 || taskNamed(t, snap.Jobs["ns/pg1"], "p1").Status != api.Binding {
		t.Errorf("snapshot after Bind does not hold the placement")
	}

	env.sc.processNextBind(ctx)
	wantBinding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1", UID: "uid-p1",
			Annotations: map[string]string{"volcano.sh/vgpu-ids-new": "GPU-0,NVIDIA,2000,30:;", "volcano.sh/vgpu-node": "n1"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"},
	}
	if len(capture.bindings) != 1 {
		t.Fatalf("sent %d bindings, want 1", len(capture.bindings))
	}
	if diff := cmp.Diff(wantBinding, capture.bindings[0]); diff != "" {
		t.Errorf("binding (-want +got):\n%s", diff)
	}
	wantEvents := []string{"Pod ns/p1 Normal Scheduled: Successfully assigned ns/p1 to n1"}
	if got := env.events.Take(); !reflect.DeepEqual(got, wantEvents) {
		t.Errorf("events %q, want %q", got, wantEvents)
	}
	if got := describeCache(env.sc); !reflect.DeepEqual(got, want) {
		t.Errorf("a successful bind changed the cache before the informer did:\n got  %q\n want %q", got, want)
	}
}

func TestBindRefused(t *testing.T) {
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		prepare func(t *testing.T, env *testEnv)
		pod     string
		node    string
		wantErr string
	}{
		{
			name:    "the node's idle resources cannot take the pod",
			pods:    []*corev1.Pod{st.Pod("big", "3", "").Group("pg1").Obj(), st.Pod("other", "2", "").Node("n1").Phase(corev1.PodRunning).Obj()},
			pod:     "big",
			node:    "n1",
			wantErr: "insufficient [cpu]",
		},
		{
			name:    "the node is unknown",
			pods:    []*corev1.Pod{st.Pod("p1", "1", "").Group("pg1").Obj()},
			pod:     "p1",
			node:    "n9",
			wantErr: "the node is not in the cache",
		},
		{
			name: "the node object was deleted",
			pods: []*corev1.Pod{st.Pod("p1", "1", "").Group("pg1").Obj(), st.Pod("other", "1", "").Node("n1").Phase(corev1.PodRunning).Obj()},
			prepare: func(t *testing.T, env *testEnv) {
				env.sc.onNodeDelete(st.Node("n1", st.Resources("4", "")).Obj())
			},
			pod:     "p1",
			node:    "n1",
			wantErr: "the node is not in the cache",
		},
		{
			name: "the pod is already being bound",
			pods: []*corev1.Pod{st.Pod("p1", "1", "").Group("pg1").Obj()},
			prepare: func(t *testing.T, env *testEnv) {
				if err := env.sc.Bind(placed(t, env, "p1", "n1", nil)); err != nil {
					t.Fatalf("first Bind: %v", err)
				}
			},
			pod:     "p1",
			node:    "n1",
			wantErr: "the pod is Binding in the cache",
		},
		{
			name: "the pod was deleted",
			pods: []*corev1.Pod{st.Pod("p1", "1", "").Group("pg1").Obj()},
			prepare: func(t *testing.T, env *testEnv) {
				env.sc.onPodDelete(st.Pod("p1", "1", "").Obj())
			},
			pod:     "p1",
			node:    "n1",
			wantErr: "no longer in the cache",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := bindEnv(t, tt.pods...)
			task := placed(t, env, tt.pod, tt.node, nil)
			if tt.prepare != nil {
				tt.prepare(t, env)
			}
			before := describeCache(env.sc)
			queued := env.sc.binds.Len()
			err := env.sc.Bind(task)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "ns/"+tt.pod) {
				t.Fatalf("Bind error = %v, want one naming the pod and saying %q", err, tt.wantErr)
			}
			if got := describeCache(env.sc); !reflect.DeepEqual(got, before) {
				t.Errorf("a refused Bind changed the cache:\n got  %q\n want %q", got, before)
			}
			if env.sc.binds.Len() != queued {
				t.Errorf("a refused Bind queued a bind request")
			}
		})
	}
}

// TestBindFailure: a refused Binding marks the pod (condition and event), undoes the
// placement, and the pod is re-read from the API server.
func TestBindFailure(t *testing.T) {
	tests := []struct {
		name string
		// apiServer changes the fake API server's pod before the re-read.
		apiServer func(t *testing.T, env *testEnv)
		wantAfter []string
	}{
		{
			name:      "the pod is unchanged: it waits for the next cycle",
			apiServer: func(*testing.T, *testEnv) {},
			wantAfter: []string{"job ns/pg1 [pg queue=default] p1=Pending", "node n1: idle cpu 4000, tasks none"},
		},
		{
			name: "the bind happened after all (a timeout): the re-read shows it",
			apiServer: func(t *testing.T, env *testEnv) {
				mustCreate(t, env.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"),
					st.Pod("p1", "1", "").Group("pg1").Node("n1").ResourceVersion("7").Obj(), "ns"))
			},
			wantAfter: []string{"job ns/pg1 [pg queue=default] p1=Bound@n1", "node n1: idle cpu 3000, tasks p1"},
		},
		{
			name: "the pod is gone",
			apiServer: func(t *testing.T, env *testEnv) {
				mustCreate(t, env.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "p1"))
			},
			wantAfter: []string{"job ns/pg1 [pg queue=default]", "node n1: idle cpu 4000, tasks none"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj())
			capture := &bindingCapture{err: apierrors.NewInternalError(errors.New("etcd timeout"))}
			capture.install(env)

			if err := env.sc.Bind(placed(t, env, "p1", "n1", map[string]string{"k": "v"})); err != nil {
				t.Fatalf("Bind: %v", err)
			}
			env.sc.processNextBind(ctx)

			wantRolledBack := []string{"job ns/pg1 [pg queue=default] p1=Pending", "node n1: idle cpu 4000, tasks none"}
			if got := describeCache(env.sc); !reflect.DeepEqual(got, wantRolledBack) {
				t.Errorf("cache after the failed bind:\n got  %q\n want %q", got, wantRolledBack)
			}
			msg := "failed to bind to node n1: Internal error occurred: etcd timeout"
			wantEvents := []string{"Pod ns/p1 Warning FailedScheduling: " + msg}
			if got := env.events.Take(); !reflect.DeepEqual(got, wantEvents) {
				t.Errorf("events %q, want %q", got, wantEvents)
			}
			env.drainWrites(ctx)
			pod, err := env.kube.CoreV1().Pods("ns").Get(ctx, "p1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := podScheduledCondition(pod)
			if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != api.ReasonSchedulerError || cond.Message != msg {
				t.Errorf("PodScheduled condition = %+v, want False/%s/%q", cond, api.ReasonSchedulerError, msg)
			}

			tt.apiServer(t, env)
			env.kube.ClearActions()
			env.sc.processNextResync(ctx)
			if !hasAction(env.kube.Actions(), "get", "pods", "") {
				t.Errorf("the pod was not re-read from the API server: %v", env.kube.Actions())
			}
			if got := describeCache(env.sc); !reflect.DeepEqual(got, tt.wantAfter) {
				t.Errorf("cache after the re-read:\n got  %q\n want %q", got, tt.wantAfter)
			}
		})
	}
}

func hasAction(actions []clienttesting.Action, verb, resource, subresource string) bool {
	for _, a := range actions {
		if a.Matches(verb, resource) && a.GetSubresource() == subresource {
			return true
		}
	}
	return false
}

// actionsOn lists the actions of one verb on one resource and subresource.
func actionsOn(actions []clienttesting.Action, verb string, gvr schema.GroupVersionResource, subresource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource() == gvr && a.GetSubresource() == subresource {
			out = append(out, a)
		}
	}
	return out
}

// TestBindWorkers runs the cache as the scheduler does: informers, bind workers, and sessions
// taking snapshots and binding while pods change. The fake API server applies each Binding,
// and the informer brings the bound pods back.
func TestBindWorkers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := newTestEnv(t, Options{BindWorkers: 4})
	const pods = 40
	mustCreate(t, env.kube.Tracker().Add(st.Node("n1", st.Resources("64", "")).Obj()))
	mustCreate(t, env.vc.Tracker().Add(newQueue("default")))
	mustCreate(t, env.vc.Tracker().Add(newPodGroup("pg1", "", pods)))
	for i := range pods {
		mustCreate(t, env.kube.Tracker().Add(st.Pod(fmt.Sprintf("p%02d", i), "1", "").Group("pg1").Obj()))
	}
	env.kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(clienttesting.CreateAction).GetObject().(*corev1.Binding)
		bound := st.Pod(b.Name, "1", "").Group("pg1").Node(b.Target.Name).ResourceVersion("2").Obj()
		for k, v := range b.Annotations {
			bound.Annotations[k] = v
		}
		return true, nil, env.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), bound, b.Namespace)
	})
	env.sc.Run(ctx)
	if !env.sc.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	job := sessionJob(t, env.sc, "ns/pg1")
	done := make(chan struct{})
	go func() { // another session's worth of reads meanwhile
		defer close(done)
		for range 20 {
			env.sc.Snapshot()
		}
	}()
	for _, task := range job.Tasks {
		task.NodeName = "n1"
		task.BindAnnotations = map[string]string{"assigned": task.Name}
		if err := env.sc.Bind(task); err != nil {
			t.Fatalf("Bind %s: %v", task.Name, err)
		}
	}
	<-done

	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return sessionJob(t, env.sc, "ns/pg1").TaskCount(api.Bound) == pods, nil
	})
	if err != nil {
		t.Fatalf("bound %d of %d pods", sessionJob(t, env.sc, "ns/pg1").TaskCount(api.Bound), pods)
	}
	snap := env.sc.Snapshot()
	if idle := snap.Nodes["n1"].Idle.MilliCPU; idle != 64000-pods*1000 {
		t.Errorf("node idle cpu %v, want %v", idle, 64000-pods*1000)
	}
	for _, task := range snap.Jobs["ns/pg1"].Tasks {
		if task.Pod.Annotations["assigned"] != task.Name {
			t.Errorf("pod %s bound without its annotation: %v", task.Name, task.Pod.Annotations)
		}
	}
}

// The cache counts what it is told once it is applied: the informers' events for what it
// keeps (not another scheduler's pod), a bind, and the bound pod coming back.
func TestChangesCountWhatTheCacheTakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := newTestEnv(t, Options{})
	mustCreate(t, env.kube.Tracker().Add(st.Node("n1", st.Resources("64", "")).Obj()))
	mustCreate(t, env.vc.Tracker().Add(newQueue("default")))
	mustCreate(t, env.vc.Tracker().Add(newPodGroup("pg1", "", 1)))
	env.sc.Run(ctx)
	if !env.sc.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	synced := env.sc.Changes()
	if synced < 3 {
		t.Errorf("%d changes after the first lists of a node, a queue and a PodGroup, want at least 3", synced)
	}
	// The informer delivers in order: once p1 is counted, the other pod has been passed over.
	mustCreate(t, env.kube.Tracker().Add(st.Pod("other", "1", "").SchedulerName("someone-else").Obj()))
	mustCreate(t, env.kube.Tracker().Add(st.Pod("p1", "1", "").Group("pg1").Obj()))
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		job := env.sc.Snapshot().Jobs["ns/pg1"]
		return job != nil && len(job.Tasks) == 1 && env.sc.Changes() > synced, nil
	})
	if err != nil {
		t.Fatalf("the cache has not taken p1 (changes %d)", env.sc.Changes())
	}
	added := env.sc.Changes()
	if added != synced+1 {
		t.Errorf("%d changes for two pods added, one of them another scheduler's; want 1", added-synced)
	}
	task := taskNamed(t, sessionJob(t, env.sc, "ns/pg1"), "p1")
	task.NodeName = "n1"
	if err := env.sc.Bind(task); err != nil {
		t.Fatal(err)
	}
	if env.sc.Changes() != added+1 {
		t.Errorf("%d changes for a bind, want 1", env.sc.Changes()-added)
	}
}
