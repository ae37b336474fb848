package monitor

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A PodIndex finds the pods of its node by UID, and watches only those.
func TestPodIndex(t *testing.T) {
	t.Setenv("KUBE_FEATURE_WatchListClient", "false") // the fake clientset sends no bookmark
	pod := func(name, uid, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	client := kubefake.NewClientset(pod("here", "uid-here", "n1"), pod("there", "uid-there", "n2"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	index := NewPodIndex(client, "n1")
	index.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ns, name, ok := index.Lookup("uid-here"); ok {
			if ns != "ns" || name != "here" {
				t.Errorf("Lookup(uid-here) = %s/%s, want ns/here", ns, name)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pod of the node never found")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The fake clientset ignores field selectors, so the test checks the one asked for.
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			if got := l.GetListRestrictions().Fields.String(); got != "spec.nodeName=n1" {
				t.Errorf("pods listed with field selector %q, want spec.nodeName=n1", got)
			}
		}
	}
	if _, _, ok := index.Lookup("uid-none"); ok {
		t.Error("found a pod that does not exist")
	}
}

// Active is false for pods that are gone or finished: their containers
// never run again, so their cache directories may go.
func TestPodIndexActive(t *testing.T) {
	t.Setenv("KUBE_FEATURE_WatchListClient", "false")
	pod := func(uid string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: phase}}
	}
	client := kubefake.NewClientset(pod("running", corev1.PodRunning), pod("pending", corev1.PodPending),
		pod("done", corev1.PodSucceeded), pod("failed", corev1.PodFailed))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	index := NewPodIndex(client, "n1")
	if index.HasSynced() {
		t.Error("synced before it started")
	}
	index.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for !index.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("pod index never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for uid, want := range map[string]bool{"running": true, "pending": true, "done": false, "failed": false, "none": false} {
		if got := index.Active(uid); got != want {
			t.Errorf("Active(%s) = %v, want %v", uid, got, want)
		}
	}
}
