// Package events delivers the programs' Kubernetes Events (core/v1, as upstream Volcano's,
// aggregated and rate-limited per object by client-go's correlator, as kube-scheduler's are),
// several writes at once (writer.go), and drains them at shutdown: every Event recorded
// before Shutdown is written to the API server, or given up on, before the process goes.
//
// A bare client-go broadcaster cannot promise that: its Shutdown cancels the goroutine that
// writes to the API server while Events are still queued for it, and Events recorded after
// it are dropped with "broadcaster already stopped".
package events

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
)

// Pipe owns the process's Event broadcaster.
type Pipe struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	sink        *markerSink
	writer      *writer
}

// New builds a pipe that writes through kube, with component as the Events' source. It can
// record Events on core objects and on Volcano's (PodGroups, Queues). Nothing is written
// until Start.
func New(kube kubernetes.Interface, component string) (*Pipe, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("event scheme: %w", err)
	}
	if err := vcscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("event scheme: %w", err)
	}
	b := record.NewBroadcaster()
	w := newWriter(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return &Pipe{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme, corev1.EventSource{Component: component}),
		sink:        &markerSink{EventSink: w, seen: map[string]chan struct{}{}},
		writer:      w,
	}, nil
}

// Collectors are the pipe's metrics: DroppedMetric.
func (p *Pipe) Collectors() []prometheus.Collector { return []prometheus.Collector{p.writer.dropped} }

// Recorder records Events on objects.
func (p *Pipe) Recorder() record.EventRecorder { return p.recorder }

// Start writes recorded Events to the API server (and logs them at -v 4).
func (p *Pipe) Start() {
	p.broadcaster.StartRecordingToSink(p.sink)
	p.broadcaster.StartStructuredLogging(4)
}

// Shutdown waits until every Event recorded so far has been written or given up on, or ctx
// ends, then stops the broadcaster. Call it once nothing records any more.
//
// Events reach the sink one at a time, in order, from the broadcaster's sink goroutine, so a
// marker recorded last reaches it only after all the others are queued for the writer, which
// then writes what it holds. The sink swallows the marker; it never reaches the API server.
func (p *Pipe) Shutdown(ctx context.Context) {
	name := "volcano-vgpu-drain-" + string(uuid.NewUUID())
	reached := p.sink.expect(name)
	p.recorder.Event(&corev1.ObjectReference{Kind: drainKind, Namespace: metav1.NamespaceDefault, Name: name},
		corev1.EventTypeNormal, drainKind, "all Events before this one are written")
	select {
	case <-reached:
		p.writer.close(ctx)
	case <-ctx.Done():
		// Those still in the broadcaster's queue are not counted: it does not say how many.
		p.writer.abandon(ctx.Err())
	}
	p.broadcaster.Shutdown()
}

// drainKind marks the drain markers' involved object.
const drainKind = "EventDrain"

// markerSink is the API server's Event sink, except for drain markers, which it reports
// instead of writing.
type markerSink struct {
	record.EventSink
	mu   sync.Mutex
	seen map[string]chan struct{}
}

func (s *markerSink) expect(name string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.seen[name] = ch
	return ch
}

func (s *markerSink) Create(e *corev1.Event) (*corev1.Event, error) {
	if e.InvolvedObject.Kind == drainKind {
		s.mu.Lock()
		defer s.mu.Unlock()
		if ch, ok := s.seen[e.InvolvedObject.Name]; ok {
			close(ch)
			delete(s.seen, e.InvolvedObject.Name)
		}
		return e, nil
	}
	return s.EventSink.Create(e)
}
