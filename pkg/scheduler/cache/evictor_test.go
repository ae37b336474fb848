package cache

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// An accepted eviction counts the pod as Releasing at once (an update in between does not
// make it Running again); the worker then marks it DisruptionTarget=True, tells why in a
// Warning Evict event, and deletes it with its own grace period, for that pod's UID only.
func TestEvictMarksThenDeletes(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj())
	var deletes []metav1.DeleteOptions
	env.kube.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		deletes = append(deletes, a.(clienttesting.DeleteActionImpl).DeleteOptions)
		return false, nil, nil
	})
	task := taskNamed(t, sessionJob(t, env.sc, "ns/pg1"), "p1")
	if err := env.sc.Evict(task, "preempted by ns/high"); err != nil {
		t.Fatalf("Evict: %v", err)
	}
	want := []string{"job ns/pg1 [pg queue=default] p1=Releasing@n1", "node n1: idle cpu 3000, tasks p1"}
	if got := describeCache(env.sc); !reflect.DeepEqual(got, want) {
		t.Errorf("cache after Evict:\n got  %q\n want %q", got, want)
	}
	if err := env.sc.Evict(task, "again"); err == nil {
		t.Errorf("a second Evict of a Releasing pod was accepted")
	}
	// An informer update (a label, say) before the delete keeps it Releasing.
	env.sc.onPodUpdate(nil, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).ResourceVersion("2").Obj())
	if got := describeCache(env.sc); !reflect.DeepEqual(got, want) {
		t.Errorf("cache after an update:\n got  %q\n want %q", got, want)
	}

	env.sc.processNextEvict(ctx)
	if _, err := env.kube.CoreV1().Pods("ns").Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod after the eviction: err %v, want NotFound", err)
	}
	if len(deletes) != 1 || deletes[0].Preconditions == nil || *deletes[0].Preconditions.UID != "uid-p1" || deletes[0].GracePeriodSeconds != nil {
		t.Errorf("delete options %+v, want the pod's UID as precondition and its own grace period", deletes)
	}
	if got, want := env.events.Take(), []string{"Pod ns/p1 Warning Evict: Pod is evicted, because of preempted by ns/high"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	var patched *corev1.PodCondition
	for _, a := range env.kube.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetSubresource() == "status" {
			var body struct {
				Status struct{ Conditions []corev1.PodCondition } `json:"status"`
			}
			if err := json.Unmarshal(p.GetPatch(), &body); err != nil || len(body.Status.Conditions) != 1 {
				t.Fatalf("status patch %s: %v", p.GetPatch(), err)
			}
			patched = &body.Status.Conditions[0]
		}
	}
	if patched == nil || patched.Type != corev1.DisruptionTarget || patched.Status != corev1.ConditionTrue ||
		patched.Reason != "PreemptionByScheduler" || patched.Message != "preempted by ns/high" {
		t.Errorf("condition patched %+v, want DisruptionTarget=True PreemptionByScheduler", patched)
	}
}

// A delete the API server refuses gives the pod back the status it shows: Running again, for
// a later cycle to decide.
func TestEvictFailureRestoresThePod(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj())
	env.kube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	task := taskNamed(t, sessionJob(t, env.sc, "ns/pg1"), "p1")
	if err := env.sc.Evict(task, "reclaimed"); err != nil {
		t.Fatalf("Evict: %v", err)
	}
	env.sc.processNextEvict(ctx)
	want := []string{"job ns/pg1 [pg queue=default] p1=Running@n1", "node n1: idle cpu 3000, tasks p1"}
	if got := describeCache(env.sc); !reflect.DeepEqual(got, want) {
		t.Errorf("cache after a failed eviction:\n got  %q\n want %q", got, want)
	}
	if len(env.sc.evicting) != 0 {
		t.Errorf("the failed eviction is still remembered: %v", env.sc.evicting)
	}
}

// Only a pod running (or bound) where the cache holds it can be evicted.
func TestEvictRefusesAPodNotRunning(t *testing.T) {
	env := bindEnv(t, st.Pod("p1", "1", "").Group("pg1").Obj())
	task := taskNamed(t, sessionJob(t, env.sc, "ns/pg1"), "p1")
	if err := env.sc.Evict(task, "x"); err == nil {
		t.Errorf("a pending pod's eviction was accepted")
	}
	gone := &api.TaskInfo{UID: "uid-none", Namespace: "ns", Name: "none"}
	if err := env.sc.Evict(gone, "x"); err == nil {
		t.Errorf("an unknown pod's eviction was accepted")
	}
}
