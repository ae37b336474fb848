package cache

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// podServer stands in for the API server's pods over the fake clientset: lists are answered
// from the fake's objects at the version the test says the API server is at (with their
// field selector and limit applied, as the API server does), and the one watch is fed by the
// test, so that what the watch has brought is the test's to say.
type podServer struct {
	mu      sync.Mutex
	version string
	watch   *apiwatch.FakeWatcher
}

func newPodServer(env *testEnv, version string) *podServer {
	s := &podServer{version: version, watch: apiwatch.NewFakeWithChanSize(16, false)}
	env.kube.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		objs, err := env.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"),
			corev1.SchemeGroupVersion.WithKind("Pod"), "")
		if err != nil {
			return true, nil, err
		}
		list := objs.(*corev1.PodList)
		selector := action.(k8stesting.ListAction).GetListRestrictions().Fields
		list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
			return !selector.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName})
		})
		if limit := action.(k8stesting.ListActionImpl).ListOptions.Limit; limit > 0 && int64(len(list.Items)) > limit {
			list.Items = list.Items[:limit]
		}
		s.mu.Lock()
		list.ResourceVersion = s.version
		s.mu.Unlock()
		return true, list, nil
	})
	env.kube.PrependWatchReactor("pods", func(k8stesting.Action) (bool, apiwatch.Interface, error) {
		return true, s.watch, nil
	})
	return s
}

// at says the API server is at version rv.
func (s *podServer) at(rv int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = strconv.Itoa(rv)
}

// start runs the cache's informers and waits until they have listed.
func (env *testEnv) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env.sc.kubeInformers.Start(ctx.Done())
	env.sc.vcInformers.Start(ctx.Done())
	if !env.sc.WaitForCacheSync(ctx) {
		t.Fatal("informers not synced")
	}
}

// A replica that has just taken the Lease schedules only once its pod watch has passed the
// version the API server was at: the previous leader's bind of a pod this replica holds as
// Pending, and a pod the previous leader created and bound that this replica's watch has not
// brought yet, both reach its cache first, and so do the GPUs they hold.
func TestCatchUpWaitsUntilThePodWatchPassesTheAPIServer(t *testing.T) {
	env := newTestEnv(t, Options{SchedulerNames: []string{"volcano"}})
	pod := func(name, group string, rv int) *st.PodWrapper {
		return st.Pod(name, "1", "1Gi").Group(group).ResourceVersion(strconv.Itoa(rv))
	}
	server := newPodServer(env, "10")
	mustCreate(t, env.kube.Tracker().Add(st.Node("n1", st.Resources("4", "8Gi")).Obj()))
	for _, pg := range []string{"pg1", "pg2"} {
		mustCreate(t, env.vc.Tracker().Add(newPodGroup(pg, "default", 1)))
	}
	mustCreate(t, env.kube.Tracker().Add(pod("pending", "pg1", 10).Obj()))
	env.start(t)

	// While this replica stood by, the previous leader bound the pod it holds as Pending
	// (version 20), created a pod and bound it (21), and the cluster went on writing (30).
	boundByLeader := pod("pending", "pg1", 20).Node("n1").Obj()
	unseen := pod("unseen", "pg2", 21).Node("n1").Obj()
	mustCreate(t, env.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), boundByLeader, "ns"))
	mustCreate(t, env.kube.Tracker().Add(unseen))
	server.at(30)

	caughtUp := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		caughtUp <- env.sc.CatchUp(ctx)
	}()
	stillWaiting := func(after string) {
		t.Helper()
		select {
		case err := <-caughtUp:
			t.Fatalf("CatchUp returned (%v) once the watch had brought %s, before it passed version 30; cache: %q",
				err, after, describeCache(env.sc))
		case <-time.After(300 * time.Millisecond):
		}
	}
	stillWaiting("nothing")
	server.watch.Modify(boundByLeader)
	stillWaiting("the bind of the pod held as Pending")
	server.watch.Add(unseen)
	stillWaiting("the pod it had never seen, at version 21")
	server.watch.Action(apiwatch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "30"}})
	select {
	case err := <-caughtUp:
		if err != nil {
			t.Fatalf("CatchUp once the watch passed version 30: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("CatchUp still waiting 10 s after the watch passed version 30 (at %s)", env.sc.podWatch.at())
	}
	want := []string{
		"job ns/pg1 [pg queue=default] pending=Bound@n1",
		"job ns/pg2 [pg queue=default] unseen=Bound@n1",
		"node n1: idle cpu 2000, tasks pending,unseen",
	}
	if got := describeCache(env.sc); !slices.Equal(got, want) {
		t.Errorf("cache once caught up:\n%s\nwant:\n%s", got, want)
	}
}

// The rules by which watchProgress takes the cache as holding everything up to a version:
// the watch has passed it, and the handler has been given what the watch brought before.
func TestWatchProgress(t *testing.T) {
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}
	event := func(rv string) func(*watchProgress) {
		return func(p *watchProgress) {
			initial := false
			p.handed(apiwatch.Event{Type: apiwatch.Modified, Object: pod(rv)}, &initial)
		}
	}
	bookmark := func(rv string) func(*watchProgress) {
		return func(p *watchProgress) {
			initial := false
			p.handed(apiwatch.Event{Type: apiwatch.Bookmark, Object: pod(rv)}, &initial)
		}
	}
	given := func(rv string) func(*watchProgress) { return func(p *watchProgress) { p.gave(pod(rv)) } }
	listed := func(rv string) func(*watchProgress) { return func(p *watchProgress) { p.listed(rv) } }
	// streamed hands a watch-list: its initial events, then the bookmark that ends them.
	streamed := func(rv string) func(*watchProgress) {
		return func(p *watchProgress) {
			initial := true
			p.handed(apiwatch.Event{Type: apiwatch.Added, Object: pod("5")}, &initial)
			end := pod(rv)
			end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
			p.handed(apiwatch.Event{Type: apiwatch.Bookmark, Object: end}, &initial)
		}
	}
	tests := []struct {
		name    string
		synced  bool
		steps   []func(*watchProgress)
		want    bool
		wantErr bool
	}{
		{name: "the first list at the version, given", synced: true, steps: []func(*watchProgress){listed("30")}, want: true},
		{name: "the first list at the version, not all given", steps: []func(*watchProgress){listed("30")}},
		{name: "the first list before the version", synced: true, steps: []func(*watchProgress){listed("29")}},
		{name: "the first list streamed past the version, given", synced: true, steps: []func(*watchProgress){streamed("31")}, want: true},
		{name: "an event past the version, given", synced: true,
			steps: []func(*watchProgress){listed("10"), event("31"), given("31")}, want: true},
		{name: "an event past the version, not yet given", synced: true,
			steps: []func(*watchProgress){listed("10"), event("20"), given("20"), event("31")}},
		{name: "a bookmark past the version, every event before it given", synced: true,
			steps: []func(*watchProgress){listed("10"), event("20"), given("20"), bookmark("30")}, want: true},
		{name: "a bookmark past the version, an event before it not yet given", synced: true,
			steps: []func(*watchProgress){listed("10"), event("20"), given("19"), bookmark("30")}},
		{name: "a bookmark past the version, the first list not all given",
			steps: []func(*watchProgress){listed("10"), bookmark("30")}},
		{name: "a later list past the version: not before an event after it is given", synced: true,
			steps: []func(*watchProgress){listed("10"), event("20"), given("20"), listed("35"), given("33"), bookmark("36")}},
		{name: "a later list past the version, then an event given", synced: true,
			steps: []func(*watchProgress){listed("10"), listed("35"), event("36"), given("36")}, want: true},
		{name: "versions that are not integers cannot be ordered", synced: true,
			steps: []func(*watchProgress){listed("10"), event("x"), given("x")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &watchProgress{initialSynced: func() bool { return tt.synced }}
			for _, step := range tt.steps {
				step(p)
			}
			got, err := p.caughtUp("30")
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("caughtUp(30) = %v, %v; want %v (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// What the watch hands the reflector is recorded once handed, and a stopped watch hands
// nothing more.
func TestRecordedWatch(t *testing.T) {
	p := &watchProgress{}
	server := apiwatch.NewFakeWithChanSize(2, false)
	w := p.watched(server, false)
	server.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}})
	if e := <-w.ResultChan(); e.Object.(*corev1.Pod).ResourceVersion != "7" {
		t.Fatalf("event handed: %v, want the pod at 7", e)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.at() != "7" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p.at() != "7" {
		t.Fatalf("recorded version %q once the event was handed, want 7", p.at())
	}
	server.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "8"}})
	w.Stop()
	for range w.ResultChan() { // closed once stopped, whether or not it handed 8 first
	}
	if !server.IsStopped() {
		t.Error("the API server's watch is not stopped")
	}
}
