package deviceshare

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// queueUsage is what a task holding vGPUs counts in its queue's status.allocated: its
// request with vgpu-memory and vgpu-cores replaced by what it books on the GPUs of its node,
// in milli-units as api.Resource keeps scalars. A container of 2 vGPUs of 3000 MiB each asks
// vgpu-memory 3000 but holds 6000, and one asking a percentage of a GPU's memory asks no
// vgpu-memory at all: 50 % of an 81,920 MiB GPU counts 40,960. The percentage itself still
// counts as asked, as every other resource of the request does.
//
// The context reserve a vGPU books on top of its request (vgpu.ContextReserve) is not counted:
// the queue's vgpu-memory is what its users asked for. A queue capability is written in
// requested memory, and the session's quota checks (proportion, capacity, overcommit) compare
// it with pods' requests; counting reserves here would make status.allocated exceed what those
// checks let the queue hold, and the figure change whenever an operator retunes a reserve.
// The reserve is the cluster's overhead, shown by the vGPU gauges (metrics.go).
//
// A task that books nothing on its node's ledger (no assignment, an unreadable one, or a node
// without usable GPUs) is left to the session: its request counts, as upstream's.
func (p *plugin) queueUsage(nodes map[string]*api.NodeInfo) framework.QueueUsageFn {
	return func(t *api.TaskInfo, total *api.Resource) bool {
		node := nodes[t.NodeName]
		if node == nil {
			return false
		}
		l := ledgerOf(node)
		if l == nil {
			return false
		}
		held, ok := p.bookedBy(t, l)
		if !ok {
			return false
		}
		// The request's other dimensions, added as api.Resource.Add adds them, without a
		// copy of the request per task.
		total.MilliCPU += t.Resreq.MilliCPU
		total.Memory += t.Resreq.Memory
		for name, amount := range t.Resreq.ScalarResources {
			if name != p.names.Memory && name != p.names.Cores {
				total.AddScalar(name, amount)
			}
		}
		total.AddScalar(p.names.Memory, float64(held.memory)*1000)
		total.AddScalar(p.names.Cores, float64(held.cores)*1000)
		return true
	}
}

// bookedBy is what the task books in the node's ledger, its context reserves left out (see
// queueUsage): its placement in this session, else the bookings the deriver found for it. ok
// is false when it books nothing.
func (p *plugin) bookedBy(t *api.TaskInfo, l *ledger) (u usage, ok bool) {
	add := func(b booking) { u = u.plus(usage{devices: 1, memory: int64(b.memory - b.reserve), cores: b.cores}) }
	if placed, ok := p.placed[t.UID]; ok {
		for b := range l.placedBookings(t, placed) {
			add(b)
		}
		return u, u.devices > 0
	}
	if l.derived != nil {
		for _, b := range l.derived.of(t.UID) {
			add(b)
		}
	}
	return u, u.devices > 0
}
