package cache

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

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
	mustCreate(t, env.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), bound, "ns"))
	// The list is read at version 30, with its field selector applied as the API server
	// does (the fake ignores field selectors); a pod created after it is Pending in the
	// cache only.
	env.kube.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		objs, err := env.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"),
			corev1.SchemeGroupVersion.WithKind("Pod"), "")
		if err != nil {
			return true, nil, err
		}
		selector := action.(k8stesting.ListAction).GetListRestrictions().Fields
		list := objs.(*corev1.PodList)
		list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
			return !selector.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName})
		})
		list.ResourceVersion = "30"
		return true, list, nil
	})
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
