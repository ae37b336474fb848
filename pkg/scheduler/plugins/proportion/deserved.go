package proportion

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota"
)

// divideByWeight sets every queue's Deserved by water-filling. In each round, every
// queue not yet satisfied receives the cluster still undivided in proportion to its weight;
// the result is cut to the queue's real capability (a dimension it does not cap stays
// unbounded) and to its request (a dimension it does not request drops to zero), then raised
// to its guarantee. A queue is satisfied once its deserved covers its request or stops
// growing; what a queue could not use goes back to be divided again in the next round. The
// rounds end when nothing is left to divide or a round changed nothing.
//
// Every queue of a round divides the same undivided amount, so the result does not depend on
// the order queues are visited in.
func divideByWeight(l *quota.Ledger) {
	queues := l.Sorted()
	undivided := l.Total.Clone()
	satisfied := make(map[api.QueueID]bool, len(queues))
	for {
		var weights int64
		for _, q := range queues {
			if !satisfied[q.Info.UID] {
				weights += int64(q.Info.Weight)
			}
		}
		if weights == 0 {
			return
		}
		pool := undivided.Clone()
		for _, q := range queues {
			if satisfied[q.Info.UID] {
				continue
			}
			before := q.Deserved.Clone()
			q.Deserved.Add(pool.Clone().Multi(float64(q.Info.Weight) / float64(weights)))
			q.Deserved.MinDimension(q.RealCapability, api.MissingAsInfinity)
			q.Deserved.MinDimension(q.Request, api.MissingAsZero)
			if q.Request.LessEqual(q.Deserved, api.MissingAsZero) || quota.Equal(q.Deserved, before) {
				satisfied[q.Info.UID] = true
			}
			q.Deserved = quota.Max(q.Deserved, q.Guarantee)
			q.UpdateShare()
			undivided.Sub(q.Deserved).Add(before)
		}
		if undivided.IsEmpty() || quota.Equal(undivided, pool) {
			return
		}
	}
}
