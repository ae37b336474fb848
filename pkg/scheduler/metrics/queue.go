package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// resourceGauges are the three gauges upstream splits one queue amount into: cpu in
// millicores, memory in bytes, and every other resource by name in the scheduler's
// milli-units (a vgpu-memory of 3000 MiB reads 3e6), as upstream exposes them.
type resourceGauges struct {
	milliCPU, memory, scalar *prometheus.GaugeVec
}

func newResourceGauges(amount, meaning string) resourceGauges {
	gauge := func(suffix, unit string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(gaugeOpts("queue_"+amount+"_"+suffix, meaning+": "+unit), labels)
	}
	return resourceGauges{
		milliCPU: gauge("milli_cpu", "cpu in millicores", "queue_name"),
		memory:   gauge("memory_bytes", "memory in bytes", "queue_name"),
		scalar:   gauge("scalar_resources", "each other resource in milli-units", "queue_name", "resource"),
	}
}

func (g resourceGauges) set(r Report, queue string, amount *api.Resource) {
	r.Set(g.milliCPU, amount.MilliCPU, queue)
	r.Set(g.memory, amount.Memory, queue)
	for name, value := range amount.ScalarResources {
		r.Set(g.scalar, value, queue, string(name))
	}
}

func (g resourceGauges) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.milliCPU, g.memory, g.scalar}
}

// queueMetrics are the per-queue gauges; published sets them all in one report.
type queueMetrics struct {
	allocated, request, deserved, capacity, realCapacity resourceGauges
	share, weight, overused                              *prometheus.GaugeVec
	published                                            Publisher
}

func newQueueMetrics() queueMetrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(gaugeOpts(name, help), []string{"queue_name"})
	}
	return queueMetrics{
		allocated:    newResourceGauges("allocated", "Resources held by the queue's placed tasks"),
		request:      newResourceGauges("request", "Resources requested by the queue's placed and pending tasks"),
		deserved:     newResourceGauges("deserved", "The queue's deserved share of the cluster"),
		capacity:     newResourceGauges("capacity", "The queue's spec.capability (an unbounded cpu or memory reads as the largest float64)"),
		realCapacity: newResourceGauges("real_capacity", "Most the queue can hold: the cluster less other queues' guarantees, within its capability"),
		share:        gauge("queue_share", "Largest ratio of allocated to deserved over the queue's resources"),
		weight:       gauge("queue_weight", "The queue's weight"),
		overused:     gauge("queue_overused", "1 when the queue holds its deserved share in every resource, else 0"),
	}
}

func (q *queueMetrics) collectors() []prometheus.Collector {
	var c []prometheus.Collector
	for _, g := range []resourceGauges{q.allocated, q.request, q.deserved, q.capacity, q.realCapacity} {
		c = append(c, g.collectors()...)
	}
	return append(c, q.share, q.weight, q.overused)
}

// QueueFigures is one queue as the queue metrics show it. Resources are in the scheduler's
// units (api.Resource), none of them nil.
type QueueFigures struct {
	Name                                                 string
	Allocated, Request, Deserved, Capacity, RealCapacity *api.Resource
	Share                                                float64
	Weight                                               int32
	Overused                                             bool
}

// ReportQueues sets the queue metrics to exactly the given queues, which should be every
// queue of the session: the series of a queue left out (deleted since the last report), and
// of a resource a queue no longer has, are deleted.
func (m *Set) ReportQueues(figures []QueueFigures) {
	if m == nil {
		return
	}
	queues := &m.queues
	queues.published.Publish(func(r Report) {
		for _, q := range figures {
			queues.allocated.set(r, q.Name, q.Allocated)
			queues.request.set(r, q.Name, q.Request)
			queues.deserved.set(r, q.Name, q.Deserved)
			queues.capacity.set(r, q.Name, q.Capacity)
			queues.realCapacity.set(r, q.Name, q.RealCapacity)
			r.Set(queues.share, q.Share, q.Name)
			r.Set(queues.weight, float64(q.Weight), q.Name)
			overused := 0.0
			if q.Overused {
				overused = 1
			}
			r.Set(queues.overused, overused, q.Name)
		}
	})
}
