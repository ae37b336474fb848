package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Every Event recorded before Shutdown reaches the API (here a fake clientset: what is under
// test is the ordering inside the process), and the drain marker never does.
func TestShutdownWritesEveryQueuedEvent(t *testing.T) {
	kube := fake.NewClientset()
	p, err := New(kube, "volcano")
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	const n = 200
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), UID: "u"}}
		p.Recorder().Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned ns/p%d to n1", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.Shutdown(ctx)
	if ctx.Err() != nil {
		t.Fatal("Shutdown waited until its deadline")
	}
	list, err := kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("%d Events written before shutdown returned, want %d", len(list.Items), n)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == drainKind {
			t.Fatalf("the drain marker reached the API: %v", e.InvolvedObject)
		}
	}
}
