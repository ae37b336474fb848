package cache

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// TestMain turns off client-go's watch-list streaming for the informer tests: volcano.sh/apis'
// fake clientset predates it and never sends the bookmark that ends the initial list, so a
// reflector over it would wait forever. (The client-go fake opts out by itself.)
func TestMain(m *testing.M) {
	if err := os.Setenv("KUBE_FEATURE_WatchListClient", "false"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// testEnv is a cache over fake clientsets, with its events and clock exposed.
type testEnv struct {
	sc     *SchedulerCache
	kube   *kubefake.Clientset
	vc     *vcfake.Clientset
	events *st.EventLog
	clock  *clocktesting.FakePassiveClock
}

// newTestEnv builds a cache whose informers are not started: tests feed the handlers
// directly, as the informers would.
func newTestEnv(t testing.TB, opts Options) *testEnv {
	t.Helper()
	env := &testEnv{
		kube:   kubefake.NewClientset(),
		vc:     newVolcanoClientset(),
		events: &st.EventLog{},
		clock:  clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
	sc, err := newCache(opts, env.kube, env.vc)
	if err != nil {
		t.Fatalf("newCache: %v", err)
	}
	sc.recorder = env.events
	sc.clock = env.clock
	// Status writes go out at once unless a test is about their delay (TestStatusWriteWaits).
	sc.statusWriteDelay = 0
	env.sc = sc
	return env
}

// newVolcanoClientset is volcano.sh/apis' fake clientset. Its NewClientset (with server-side
// apply) cannot store cluster-scoped Queues, so the simple one it deprecates is used.
func newVolcanoClientset(objs ...runtime.Object) *vcfake.Clientset {
	return vcfake.NewSimpleClientset(objs...) //nolint:staticcheck // see above
}

// add feeds objects to the add handlers, and to the fake API server so that reads and
// writes find them.
func (env *testEnv) add(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			mustCreate(t, env.kube.Tracker().Add(o))
			if env.sc.podWanted(o) {
				env.sc.onPodAdd(o)
			}
		case *corev1.Node:
			mustCreate(t, env.kube.Tracker().Add(o))
			if env.sc.nodeWanted(o) {
				env.sc.onNodeSet(o)
			}
		case *schedulingv1beta1.PodGroup:
			mustCreate(t, env.vc.Tracker().Add(o))
			env.sc.onPodGroupSet(o)
		case *schedulingv1beta1.Queue:
			mustCreate(t, env.vc.Tracker().Add(o))
			env.sc.onQueueSet(o)
		default:
			t.Fatalf("add: unexpected %T", o)
		}
	}
}

func mustCreate(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("fake API server: %v", err)
	}
}

// drainWrites runs every queued status write.
func (env *testEnv) drainWrites(ctx context.Context) {
	for env.sc.writes.queue.Len() > 0 {
		env.sc.writes.processNext(ctx)
	}
}

// describeCache renders the cache's jobs and nodes, sorted, for comparison:
//
//	job ns/pg1 [pg queue=default] p1=Pending p2=Binding@n1
//	node n1: idle cpu 3000, tasks p2
//	node n2 (no object): idle cpu -1000, tasks p3
func describeCache(sc *SchedulerCache) []string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []string
	for id, job := range sc.jobs {
		line := "job " + string(id)
		if job.PodGroup != nil {
			line += " [pg queue=" + string(job.Queue) + "]"
		}
		var tasks []string
		for _, t := range job.Tasks {
			s := t.Name + "=" + t.Status.String()
			if t.NodeName != "" {
				s += "@" + t.NodeName
			}
			tasks = append(tasks, s)
		}
		sort.Strings(tasks)
		out = append(out, strings.TrimSpace(line+" "+strings.Join(tasks, " ")))
	}
	for name, n := range sc.nodes {
		line := "node " + name
		if n.Node == nil {
			line += " (no object)"
		}
		var tasks []string
		for _, t := range n.Tasks {
			tasks = append(tasks, t.Name)
		}
		sort.Strings(tasks)
		if len(tasks) == 0 {
			tasks = []string{"none"}
		}
		out = append(out, fmt.Sprintf("%s: idle cpu %.0f, tasks %s", line, n.Idle.MilliCPU, strings.Join(tasks, ",")))
	}
	sort.Strings(out)
	return out
}

// Object builders, beside st.Pod and st.Node. Everything lives in namespace "ns".

func newPodGroup(name, queue string, minMember int32) *schedulingv1beta1.PodGroup {
	return st.MakePodGroup().Namespace("ns").Name(name).UID("uid-pg-" + name).ResourceVersion("1").
		MinMember(minMember).Queue(queue).Phase(schedulingv1beta1.PodGroupPending).Obj()
}

func newQueue(name string) *schedulingv1beta1.Queue {
	return st.MakeQueue().Name(name).ResourceVersion("1").Weight(1).Obj()
}

// sessionJob is the job as a session holds it: the snapshot's copy.
func sessionJob(t *testing.T, sc *SchedulerCache, id api.JobID) *api.JobInfo {
	t.Helper()
	job := sc.Snapshot().Jobs[id]
	if job == nil {
		t.Fatalf("job %s not in the snapshot", id)
	}
	return job
}

// taskNamed finds a job's task by pod name.
func taskNamed(t *testing.T, job *api.JobInfo, name string) *api.TaskInfo {
	t.Helper()
	for _, task := range job.Tasks {
		if task.Name == name {
			return task
		}
	}
	t.Fatalf("job %s has no task %s", job.UID, name)
	return nil
}
