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
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "queue_" + amount + "_" + suffix,
			Help: meaning + ": " + unit,
		}, labels)
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

var (
	queueAllocated    = newResourceGauges("allocated", "Resources held by the queue's placed tasks")
	queueRequest      = newResourceGauges("request", "Resources requested by the queue's placed and pending tasks")
	queueDeserved     = newResourceGauges("deserved", "The queue's deserved share of the cluster")
	queueCapacity     = newResourceGauges("capacity", "The queue's spec.capability (an unbounded cpu or memory reads as the largest float64)")
	queueRealCapacity = newResourceGauges("real_capacity", "Most the queue can hold: the cluster less other queues' guarantees, within its capability")

	queueShare = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "queue_share",
		Help: "Largest ratio of allocated to deserved over the queue's resources",
	}, []string{"queue_name"})
	queueWeight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "queue_weight",
		Help: "The queue's weight",
	}, []string{"queue_name"})
	queueOverused = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem, Name: "queue_overused",
		Help: "1 when the queue holds its deserved share in every resource, else 0",
	}, []string{"queue_name"})

	queueSeries Publisher
)

func init() {
	for _, g := range []resourceGauges{queueAllocated, queueRequest, queueDeserved, queueCapacity, queueRealCapacity} {
		Registry.MustRegister(g.collectors()...)
	}
	Registry.MustRegister(queueShare, queueWeight, queueOverused)
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
func ReportQueues(figures []QueueFigures) {
	queueSeries.Publish(func(r Report) {
		for _, q := range figures {
			queueAllocated.set(r, q.Name, q.Allocated)
			queueRequest.set(r, q.Name, q.Request)
			queueDeserved.set(r, q.Name, q.Deserved)
			queueCapacity.set(r, q.Name, q.Capacity)
			queueRealCapacity.set(r, q.Name, q.RealCapacity)
			r.Set(queueShare, q.Share, q.Name)
			r.Set(queueWeight, float64(q.Weight), q.Name)
			overused := 0.0
			if q.Overused {
				overused = 1
			}
			r.Set(queueOverused, overused, q.Name)
		}
	})
}
