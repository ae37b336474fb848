package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

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

// gatedSink is an API server that answers once open is closed, recording what it was sent.
type gatedSink struct {
	open  chan struct{}
	mu    sync.Mutex
	names []string
	err   error
}

func (s *gatedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	<-s.open
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, e.Name)
	return e, s.err
}
func (s *gatedSink) Update(e *corev1.Event) (*corev1.Event, error) { return e, nil }
func (s *gatedSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.Create(e)
}

// While the API server does not answer, the writer holds what its queue for an object can
// and counts the rest as dropped ("queue full"), never blocking the caller; once it answers,
// what was held is written in the order it was recorded. A write the API server refuses is
// counted too ("API error").
func TestWriterCountsWhatItCannotHold(t *testing.T) {
	sink := &gatedSink{open: make(chan struct{})}
	w := newWriter(sink)
	const extra = 50
	n := writerQueue + 1 + extra // one in flight, a queue full, then the extra
	for i := range n {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%05d", i)},
			InvolvedObject: corev1.ObjectReference{Namespace: "ns", Name: "victim"}}
		if _, err := w.Create(e); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The first is taken by the worker, which then waits on the API server.
			for deadline := time.Now().Add(10 * time.Second); len(w.queueFor(e)) > 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the worker never took the first write")
				}
			}
		}
	}
	if got := testutil.ToFloat64(w.dropped.WithLabelValues(dropQueueFull)); got != extra {
		t.Errorf("dropped %v as queue full, want %d", got, extra)
	}
	close(sink.open)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.close(ctx)
	if len(sink.names) != n-extra || !slices.IsSorted(sink.names) {
		t.Errorf("wrote %d Events (in order: %v), want the first %d in order", len(sink.names), slices.IsSorted(sink.names), n-extra)
	}

	refusing := &gatedSink{open: make(chan struct{}), err: errors.New("namespace ns is terminating")}
	close(refusing.open)
	w = newWriter(refusing)
	_, _ = w.Create(&corev1.Event{InvolvedObject: corev1.ObjectReference{Namespace: "ns", Name: "p"}})
	w.close(ctx)
	if got := testutil.ToFloat64(w.dropped.WithLabelValues(dropAPIError)); got != 1 {
		t.Errorf("dropped %v for an API error, want 1", got)
	}
}

// A Normal Event that waited for its write longer than normalLagLimit is dropped and counted
// ("late"), not written behind its time; a Warning that waited as long is still written.
func TestWriterDropsLateNormalEvents(t *testing.T) {
	sink := &gatedSink{open: make(chan struct{})}
	w := newWriter(sink)
	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var waited atomic.Int64
	w.now = func() time.Time { return base.Add(time.Duration(waited.Load())) }
	event := func(name, typ string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ,
			InvolvedObject: corev1.ObjectReference{Namespace: "ns", Name: "p"}}
	}
	first := event("a-first", corev1.EventTypeWarning)
	_, _ = w.Create(first)
	// The worker takes the first and waits on the API server; the rest queue behind it.
	for deadline := time.Now().Add(10 * time.Second); len(w.queueFor(first)) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never took the first write")
		}
	}
	_, _ = w.Create(event("b-late", corev1.EventTypeNormal))
	_, _ = w.Create(event("c-warning", corev1.EventTypeWarning))
	waited.Store(int64(normalLagLimit + time.Second))
	_, _ = w.Create(event("d-fresh", corev1.EventTypeNormal))
	close(sink.open)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.close(ctx)
	if want := []string{"a-first", "c-warning", "d-fresh"}; !slices.Equal(sink.names, want) {
		t.Errorf("wrote %v, want %v", sink.names, want)
	}
	if got := testutil.ToFloat64(w.dropped.WithLabelValues(dropLate)); got != 1 {
		t.Errorf("dropped %v as late, want 1", got)
	}
}

// Writes still queued, or in flight, when the process must go are counted as dropped
// ("shutdown"), not lost without a word.
func TestWriterCountsWhatShutdownCutsOff(t *testing.T) {
	sink := &gatedSink{open: make(chan struct{})}
	defer close(sink.open)
	w := newWriter(sink)
	const n = 10
	for i := range n {
		_, _ = w.Create(&corev1.Event{InvolvedObject: corev1.ObjectReference{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.close(ctx)
	if got := testutil.ToFloat64(w.dropped.WithLabelValues(dropShutdown)); got != n {
		t.Errorf("dropped %v at shutdown, want %d", got, n)
	}
}
