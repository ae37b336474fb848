package cache

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// Options are the vc-scheduler flags the cache reads.
type Options struct {
	// SchedulerNames (--scheduler-name, repeatable): pods whose spec.schedulerName is one of
	// these are scheduled. The first also names the events' source component.
	// Empty means "volcano".
	SchedulerNames []string
	// DefaultQueue (--default-queue) holds PodGroups that name no queue. The cache creates it.
	// Empty means "default".
	DefaultQueue string
	// NodeSelector (--node-selector, repeatable "key:value"): when set, only nodes carrying at
	// least one of these labels are scheduled onto.
	NodeSelector []string
	// ResyncPeriod (--resync-period) of the informers; 0 never resyncs.
	ResyncPeriod time.Duration
	// PriorityClass (--priority-class): job priorities come from PriorityClasses. When false
	// every job has priority 0.
	PriorityClass bool
	// BindWorkers is the number of bind requests in flight at once; 0 means 128. Upstream
	// sends every bind in its own goroutine; the bound keeps a burst of thousands off the
	// API server. Under load it answers a bind in 150-300 ms, and a cycle hands over a
	// hundred pods or more at once: with 32 workers they waited 1.7 s in the queue on
	// average (bench-e2e, 1,000 nodes), each a pod created and not bound.
	BindWorkers int
	// Recorder receives the cache's Events (Scheduled, FailedScheduling, PodGroup conditions'
	// Events); nil drops them.
	Recorder record.EventRecorder
	// StatusWorkers is the number of PodGroup, Queue and pod-condition writes in flight at
	// once; 0 means 8.
	StatusWorkers int
	// Metrics records the binds (volcano_scheduled_pods_total, the task scheduling latency,
	// failed binds); nil records nothing.
	Metrics *metrics.Set
	// Metadata lists the bound pods a new leader waits for (CatchUp) as object metadata
	// only: the wait reads nothing else of them, and at 50,000 pods whole objects are most
	// of what the list would carry and decode. CatchUp fails without it.
	Metadata metadata.Interface
}

const (
	defaultSchedulerName = "volcano"
	defaultQueueName     = "default"
	defaultBindWorkers   = 128
	defaultStatusWorkers = 8
)

// withDefaults fills the unset options.
func (o Options) withDefaults() Options {
	if len(o.SchedulerNames) == 0 {
		o.SchedulerNames = []string{defaultSchedulerName}
	}
	if o.DefaultQueue == "" {
		o.DefaultQueue = defaultQueueName
	}
	if o.BindWorkers <= 0 {
		o.BindWorkers = defaultBindWorkers
	}
	if o.StatusWorkers <= 0 {
		o.StatusWorkers = defaultStatusWorkers
	}
	if o.Recorder == nil {
		o.Recorder = &record.FakeRecorder{}
	}
	return o
}

// nodeSelector is the parsed --node-selector: the "key:value" labels of which a node needs one.
// An empty selector takes every node.
type nodeSelector sets.Set[string]

// parseNodeSelector checks every entry is "key:value" with a non-empty key.
func parseNodeSelector(entries []string) (nodeSelector, error) {
	sel := sets.New[string]()
	for _, e := range entries {
		key, value, ok := strings.Cut(e, ":")
		if !ok || strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("node selector %q: want key:value", e)
		}
		sel.Insert(strings.TrimSpace(key) + ":" + strings.TrimSpace(value))
	}
	return nodeSelector(sel), nil
}

// matches: the selector is empty or the node carries one of its labels.
func (s nodeSelector) matches(labels map[string]string) bool {
	if len(s) == 0 {
		return true
	}
	for k, v := range labels {
		if sets.Set[string](s).Has(k + ":" + v) {
			return true
		}
	}
	return false
}
