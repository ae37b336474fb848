package cache

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// listAsTheAPIServer makes the fake's pod lists apply their field selectors, as the API
// server does (the fake ignores them), and answer at version rv. listed, when not nil, gets
// each list's field selector once it is answered. The cache lists the bound pods as metadata
// only, as the binary's does, through a metadata client that answers from the same pods.
func listAsTheAPIServer(env *testEnv, rv string, listed chan<- string) {
	list := func(action k8stesting.Action) (*corev1.PodList, error) {
		objs, err := env.kube.Tracker().List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), "")
		if err != nil {
			return nil, err
		}
		selector := action.(k8stesting.ListAction).GetListRestrictions().Fields
		list := objs.(*corev1.PodList)
		list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
			return !selector.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName,
				"spec.schedulerName": p.Spec.SchedulerName, "status.phase": string(p.Status.Phase)})
		})
		list.ResourceVersion = rv
		if listed != nil {
			listed <- selector.String()
		}
		return list, nil
	}
	env.kube.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pods, err := list(action)
		return true, pods, err
	})
	meta := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	meta.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pods, err := list(action)
		if err != nil {
			return true, nil, err
		}
		// The fake's List takes a metav1.List of PartialObjectMetadata, as its tracker holds.
		out := &metav1.List{ListMeta: pods.ListMeta}
		for _, p := range pods.Items {
			item := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: p.ObjectMeta}
			out.Items = append(out.Items, runtime.RawExtension{Object: item})
		}
		return true, out, nil
	})
	env.sc.meta = meta
}

// catchUpInBackground runs CatchUp until ctx ends; its error comes on the channel.
func catchUpInBackground(ctx context.Context, env *testEnv) <-chan error {
	done := make(chan error, 1)
	go func() { done <- env.sc.CatchUp(ctx) }()
	return done
}

// A replica that has just taken the Lease waits until its pod watch has brought the binds the
// previous leader made before the handover; pods still unbound, and pods created after the
// list, do not hold it back.
func TestCatchUpWaitsForTheBindsTheWatchHasNotBrought(t *testing.T) {
	env := newTestEnv(t, Options{SchedulerNames: []string{"volcano"}})
	pod := func(name, rv string) *st.PodWrapper {
		return st.Pod(name, "1", "").Group("pg1").ResourceVersion(rv)
	}
	env.add(t, st.Node("n1", st.Resources("4", "")).Obj(), newPodGroup("pg1", "default", 1),
		pod("bound-elsewhere", "10").Obj(), pod("still-pending", "11").Obj())
	// The previous leader bound one pod at version 20; this replica's watch has not said so.
	bound := pod("bound-elsewhere", "20").Node("n1").Obj()
	mustCreate(t, env.kube.Tracker().Update(podsResource, bound, "ns"))
	// The lists are read at version 30; a pod created after them is Pending in the cache only.
	listAsTheAPIServer(env, "30", nil)
	env.sc.onPodAdd(pod("created-later", "31").Obj())

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := env.sc.CatchUp(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CatchUp before the watch brought the bind = %v, want it still waiting when its context ends", err)
	}

	env.sc.onPodUpdate(nil, bound)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.sc.CatchUp(ctx); err != nil {
		t.Fatalf("CatchUp once the watch brought the bind: %v", err)
	}
}

// A pod the previous leader created and bound in its last moments, which this replica's pod
// watch has not brought at all (the cache has never held it): the new leader waits for it,
// though the API server says it exists when asked, and goes on once the watch brings it. Bound
// pods of another scheduler and finished pods, brought or not, are not waited for: they hold
// no device this scheduler handed out.
func TestCatchUpWaitsForABoundPodTheWatchHasNotBrought(t *testing.T) {
	env := newTestEnv(t, Options{SchedulerNames: []string{"volcano"}})
	env.add(t, st.Node("n1", st.Resources("8", "")).Obj(), newPodGroup("pg1", "default", 1),
		st.Pod("bound-before", "1", "").Group("pg1").ResourceVersion("5").Node("n1").Obj())
	unseen := st.Pod("created-and-bound", "1", "").Group("pg1").ResourceVersion("20").Node("n1").Obj()
	for _, p := range []*corev1.Pod{unseen,
		st.Pod("other-scheduler", "1", "").SchedulerName("default-scheduler").ResourceVersion("21").Node("n1").Obj(),
		st.Pod("finished", "1", "").Group("pg1").ResourceVersion("22").Node("n1").Phase(corev1.PodSucceeded).Obj(),
	} {
		mustCreate(t, env.kube.Tracker().Add(p))
	}
	listAsTheAPIServer(env, "30", nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := catchUpInBackground(ctx, env)
	// Past the time a missing pod is looked up: the API server has it, so the wait goes on.
	select {
	case err := <-done:
		t.Fatalf("CatchUp returned (%v) with ns/created-and-bound, bound at version 20, never brought by the watch: its cpu looks idle", err)
	case <-time.After(catchUpConfirm + 300*time.Millisecond):
	}
	if !gotPod(env, "created-and-bound") {
		t.Errorf("CatchUp never asked the API server for ns/created-and-bound, missing from the cache")
	}
	env.sc.onPodAdd(unseen)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("CatchUp once the watch brought the pod: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CatchUp still waiting 5 s after the watch brought ns/created-and-bound")
	}
}

// A bound pod listed that is deleted before the pod watch brings it (the watch brings its add
// and delete together, or re-lists without it), or deleted and created again under its name:
// the cache will never hold it at the version listed, and the new leader does not wait for it
// once the API server says it is gone. It is looked up, not overlooked.
func TestCatchUpDoesNotWaitForABoundPodDeletedMeanwhile(t *testing.T) {
	for _, recreated := range []bool{false, true} {
		t.Run("recreated="+strconv.FormatBool(recreated), func(t *testing.T) {
			env := newTestEnv(t, Options{SchedulerNames: []string{"volcano"}})
			env.add(t, st.Node("n1", st.Resources("8", "")).Obj(), newPodGroup("pg1", "default", 1))
			mustCreate(t, env.kube.Tracker().Add(st.Pod("gone", "1", "").Group("pg1").ResourceVersion("20").Node("n1").Obj()))
			listed := make(chan string, 2)
			listAsTheAPIServer(env, "30", listed)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			done := catchUpInBackground(ctx, env)
			for _, what := range []string{"the unbound pods", "the bound ones, with ns/gone"} {
				select {
				case <-listed:
				case <-time.After(5 * time.Second):
					t.Fatalf("CatchUp did not list %s", what)
				}
			}
			mustCreate(t, env.kube.Tracker().Delete(podsResource, "ns", "gone"))
			if recreated {
				mustCreate(t, env.kube.Tracker().Add(st.Pod("gone", "1", "").UID("uid-gone-2").ResourceVersion("40").Obj()))
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("CatchUp: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("CatchUp still waiting 5 s after ns/gone was deleted, for a version of it the watch will never bring")
			}
			t.Logf("CatchUp took %v", time.Since(start).Round(time.Millisecond))
			if !gotPod(env, "gone") {
				t.Errorf("CatchUp never asked the API server for ns/gone, listed bound and missing from the cache")
			}
		})
	}
}

// A quiet pod watch: every pod is in the cache as listed, and no pod changes while the API
// server's version runs far ahead (Leases, nodes and Events move it, not the pod watch). The
// new leader goes on at once: the barrier is each listed pod's own version, never a version
// only the watch's next bookmark (about a minute) would reach.
func TestCatchUpReturnsPromptlyOnAQuietPodWatch(t *testing.T) {
	env := newTestEnv(t, Options{SchedulerNames: []string{"volcano"}})
	env.add(t, st.Node("n1", st.Resources("8", "")).Obj(), newPodGroup("pg1", "default", 1),
		st.Pod("running-1", "1", "").Group("pg1").ResourceVersion("10").Node("n1").Obj(),
		st.Pod("running-2", "1", "").Group("pg1").ResourceVersion("11").Node("n1").Obj(),
		st.Pod("other-scheduler", "1", "").SchedulerName("default-scheduler").ResourceVersion("12").Node("n1").Obj(),
		st.Pod("pending", "1", "").Group("pg1").ResourceVersion("13").Obj())
	listAsTheAPIServer(env, "7688", nil)
	heartbeats, stopNodes := context.WithCancel(context.Background())
	defer stopNodes()
	go func() { // the node's heartbeats go on; the cache's pod versions stay where they were
		for rv := 4; heartbeats.Err() == nil; rv++ {
			n := st.Node("n1", st.Resources("8", "")).Obj()
			n.ResourceVersion = strconv.Itoa(rv)
			env.sc.onNodeSet(n)
			time.Sleep(time.Millisecond)
		}
	}()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.sc.CatchUp(ctx); err != nil {
		t.Fatalf("CatchUp on a quiet pod watch: %v", err)
	}
	if took := time.Since(start); took > catchUpConfirm {
		t.Errorf("CatchUp on a quiet pod watch took %v, want it at once (no pod to wait for)", took)
	}
}

// gotPod reports whether the fake API server was asked for pod ns/name.
func gotPod(env *testEnv, name string) bool {
	return slices.ContainsFunc(env.kube.Actions(), func(a k8stesting.Action) bool {
		g, ok := a.(k8stesting.GetAction)
		return ok && a.GetResource() == podsResource && g.GetNamespace() == "ns" && g.GetName() == name
	})
}
