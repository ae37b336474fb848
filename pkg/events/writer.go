package events

import (
	"context"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// writer is the broadcaster's sink: it hands each write to one of its workers, chosen by the
// Event's involved object, and returns at once. client-go's broadcaster writes through its
// sink one Event at a time, and while the API server answers slowly its own queue to the
// sink (1,000 Events) fills and it drops what comes next without a word: under a preemption
// wave, half the Warning Evict Events were lost so. Here the API server is written to by
// several workers at once, each keeping one object's Events in order (a repeat is a patch of
// the Event its first occurrence created), and what their queues cannot hold is counted in
// DroppedMetric and logged.
type writer struct {
	api     record.EventSink
	queues  []chan write
	workers sync.WaitGroup
	dropped *prometheus.CounterVec
	// queued counts the writes handed to the workers and not yet made.
	queued atomic.Int64
	// lastLog and unlogged rate-limit the drop log to a line per dropLogEvery.
	lastLog  atomic.Int64
	unlogged atomic.Int64
	// now is the clock writes are timed by.
	now func() time.Time
	// counts is dropped's counts by reason, for the log at close.
	counts map[string]*atomic.Int64
}

// write is one sink call to make.
type write struct {
	event *corev1.Event
	patch []byte    // set: a patch of the Event (a repeat); else a create
	at    time.Time // when it was queued
}

const (
	// writers is how many Event writes are in flight at once.
	writers = 32
	// writerQueue is how many writes each worker holds before the next is dropped.
	writerQueue = 2048
	// dropLogEvery bounds the drop log.
	dropLogEvery = 10 * time.Second
	// normalLagLimit is how long a Normal Event may wait for its write. While the API server
	// is saturated (a burst of thousands of binds on 2 cores), the Scheduled Events queued
	// behind the Bindings reached it up to 46 s after their pods were bound, and each one
	// written late takes the API server's time from the binds still to come: one older than
	// this is dropped and counted instead. Warnings (Unschedulable, Evict) are always written.
	normalLagLimit = 5 * time.Second
)

// DroppedMetric counts Events never written, by reason: dropQueueFull (more were recorded
// than the workers' queues hold), dropLate (a Normal Event that waited past normalLagLimit),
// dropAPIError (the API server refused the write) or dropShutdown (still queued when the
// process had to go).
const DroppedMetric = "volcano_vgpu_events_dropped_total"

const (
	dropQueueFull = "queue full"
	dropLate      = "late"
	dropAPIError  = "API error"
	dropShutdown  = "shutdown"
)

var dropReasons = []string{dropQueueFull, dropLate, dropAPIError, dropShutdown}

func newWriter(api record.EventSink) *writer {
	w := &writer{api: api, dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DroppedMetric, Help: "Kubernetes Events recorded but never written to the API server, by reason.",
	}, []string{"reason"}), now: time.Now, counts: map[string]*atomic.Int64{}}
	// Every series exists from the start, at 0, so that a scrape shows nothing was dropped.
	for _, reason := range dropReasons {
		w.dropped.WithLabelValues(reason)
		w.counts[reason] = &atomic.Int64{}
	}
	for range writers {
		q := make(chan write, writerQueue)
		w.queues = append(w.queues, q)
		w.workers.Add(1)
		go func() {
			defer w.workers.Done()
			for wr := range q {
				if wr.event.Type == corev1.EventTypeNormal && w.now().Sub(wr.at) > normalLagLimit {
					w.drop(dropLate, wr.event, nil)
				} else {
					w.do(wr)
				}
				w.queued.Add(-1)
			}
		}()
	}
	return w
}

// Create queues the Event's creation; the Event is returned as it will be written.
func (w *writer) Create(e *corev1.Event) (*corev1.Event, error) {
	w.enqueue(write{event: e})
	return e, nil
}

// Update is not used by the broadcaster (repeats are patches); it is written at once.
func (w *writer) Update(e *corev1.Event) (*corev1.Event, error) { return w.api.Update(e) }

// Patch queues a repeat's patch of the Event its first occurrence created.
func (w *writer) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	w.enqueue(write{event: e, patch: data})
	return e, nil
}

func (w *writer) enqueue(wr write) {
	wr.at = w.now()
	w.queued.Add(1)
	select {
	case w.queueFor(wr.event) <- wr:
	default:
		w.queued.Add(-1)
		w.drop(dropQueueFull, wr.event, nil)
	}
}

// queueFor is the queue of the Event's involved object: one object's writes stay in order.
func (w *writer) queueFor(e *corev1.Event) chan write {
	h := fnv.New32a()
	_, _ = h.Write([]byte(e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name))
	return w.queues[h.Sum32()%uint32(len(w.queues))]
}

// do makes one write. A patch whose Event is gone (expired, or its create failed) creates it
// whole, as client-go's own sink path does.
func (w *writer) do(wr write) {
	var err error
	if wr.patch != nil {
		_, err = w.api.Patch(wr.event, wr.patch)
	}
	if wr.patch == nil || errors.IsNotFound(err) {
		e := *wr.event
		e.ResourceVersion = ""
		_, err = w.api.Create(&e)
	}
	if err != nil && !errors.IsAlreadyExists(err) {
		w.drop(dropAPIError, wr.event, err)
	}
}

func (w *writer) drop(reason string, e *corev1.Event, err error) {
	w.dropped.WithLabelValues(reason).Inc()
	w.counts[reason].Add(1)
	n := w.unlogged.Add(1)
	now := time.Now().UnixNano()
	last := w.lastLog.Load()
	if now-last < int64(dropLogEvery) || !w.lastLog.CompareAndSwap(last, now) {
		return
	}
	w.unlogged.Add(-n)
	klog.ErrorS(err, "Events dropped", "reason", reason, "dropped", n, "metric", DroppedMetric,
		"last", klog.KRef(e.InvolvedObject.Namespace, e.InvolvedObject.Name), "eventReason", e.Reason)
}

// close writes what is queued and stops the workers, or gives up when ctx ends, counting
// what is left as dropped; then it logs the process's drops by reason, which the rate-limited
// drop log may not have told in full.
func (w *writer) close(ctx context.Context) {
	for _, q := range w.queues {
		close(q)
	}
	done := make(chan struct{})
	go func() { w.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		w.abandon(ctx.Err())
	}
	var total int64
	byReason := []any{"metric", DroppedMetric}
	for _, reason := range dropReasons {
		n := w.counts[reason].Load()
		total += n
		byReason = append(byReason, strings.ReplaceAll(reason, " ", ""), n)
	}
	if total > 0 {
		klog.InfoS("Events dropped in this process's life", byReason...)
	}
}

// abandon counts and logs the writes still queued when the process goes.
func (w *writer) abandon(err error) {
	n := w.queued.Load()
	w.dropped.WithLabelValues(dropShutdown).Add(float64(n))
	w.counts[dropShutdown].Add(n)
	klog.ErrorS(err, "Events still queued at shutdown were not written", "count", n, "metric", DroppedMetric)
}
