package quota

import (
	"math"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// ReportMetrics publishes upstream's queue metrics (volcano_queue_*) into m for every queue
// of the session, from the accounts as they stand: the plugins call it when the session
// closes, so the figures include the cycle's placements. An idle queue holds nothing and so
// is never overused; a queue that left the cluster loses its series.
func (l *Ledger) ReportMetrics(m *metrics.Set) {
	figures := make([]metrics.QueueFigures, 0, len(l.Queues)+len(l.Idle))
	for _, q := range l.Sorted() {
		figures = append(figures, q.figures(q.HoldsDeserved()))
	}
	for _, q := range l.Idle {
		figures = append(figures, q.figures(false))
	}
	m.ReportQueues(figures)
}

func (q *Queue) figures(overused bool) metrics.QueueFigures {
	capacity := q.Capability
	if capacity == nil {
		// No spec.capability: cpu and memory are unbounded, shown as newQueue stores an
		// unbounded dimension (and as upstream shows it).
		capacity = &api.Resource{MilliCPU: math.MaxFloat64, Memory: math.MaxFloat64}
	}
	return metrics.QueueFigures{
		Name:         q.Info.Name,
		Allocated:    q.Allocated,
		Request:      q.Request,
		Deserved:     q.Deserved,
		Capacity:     capacity,
		RealCapacity: q.RealCapability,
		Share:        q.Share,
		Weight:       q.Info.Weight,
		Overused:     overused,
	}
}
