package deviceshare

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// vgpuGauges are upstream's vGPU gauges, under its names, labels and help texts so that
// dashboards built for the stock vc-scheduler keep working. devID is the GPU's UUID. Memory
// is in the units the device plugin publishes (gpuMemoryFactor MiB: MiB on nodes whose
// factor is 1), as upstream shows it.
//
// The memory gauges count what the GPU books, the context reserve (vgpu.ContextReserve)
// included: that is what the card has given away, and what the containers' limits add up to.
// Two gauges of our own, published where there is a reserve, say how much of it is reserve:
// volcano_vgpu_device_allocated_context_reserve per GPU (for every GPU whose model has one) and
// volcano_vgpu_device_context_reserve_for_a_certain_pod per pod holding some.
//
// Upstream moves them by increments as pods come and go, and resets a GPU's totals whenever
// its node's pool is rebuilt. Here every session close sets them from the session's
// ledgers, which the cache derives from the pods' annotations: they read the same after a
// restart, and a GPU, node or pod that is gone loses its series.
type vgpuGauges struct {
	sharedNumber, allocatedMemory, allocatedCores, memoryLimit *prometheus.GaugeVec
	// The per-pod gauges are labelled with the pod's name only, as upstream's: it leaves the
	// namespace out. Two pods of one name in different namespaces on one GPU therefore share
	// a series, which shows their sum.
	podMemory, podCores *prometheus.GaugeVec
	// allocatedReserve and podReserve are the parts of allocatedMemory and podMemory that are
	// context reserve.
	allocatedReserve, podReserve *prometheus.GaugeVec
}

func newVGPUGauges() *vgpuGauges {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "volcano", Name: name, Help: help}, labels)
	}
	return &vgpuGauges{
		sharedNumber:    gauge("vgpu_device_shared_number", "The number of vgpu tasks sharing this card", "devID", "NodeName"),
		allocatedMemory: gauge("vgpu_device_allocated_memory", "The number of vgpu memory allocated in this card", "devID", "NodeName"),
		allocatedCores:  gauge("vgpu_device_allocated_cores", "The percentage of gpu compute cores allocated in this card", "devID", "NodeName"),
		memoryLimit:     gauge("vgpu_device_memory_limit", "The number of total device memory in this card", "devID", "NodeName"),
		podMemory: gauge("vgpu_device_memory_allocation_for_a_certain_pod", "The vgpu device memory allocated for a certain pod",
			"devID", "NodeName", "podName"),
		podCores: gauge("vgpu_device_core_allocation_for_a_certain_pod", "The vgpu device core allocated for a certain pod",
			"devID", "NodeName", "podName"),
		allocatedReserve: gauge("vgpu_device_allocated_context_reserve",
			"The part of vgpu_device_allocated_memory in this card booked as CUDA context reserve (contextReserves in the device ConfigMap)",
			"devID", "NodeName"),
		podReserve: gauge("vgpu_device_context_reserve_for_a_certain_pod",
			"The part of vgpu_device_memory_allocation_for_a_certain_pod booked as CUDA context reserve",
			"devID", "NodeName", "podName"),
	}
}

// collectors are the gauges, for a metrics registry.
func (g *vgpuGauges) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.sharedNumber, g.allocatedMemory, g.allocatedCores, g.memoryLimit, g.podMemory, g.podCores,
		g.allocatedReserve, g.podReserve}
}

// nodeMetrics is what the last session close published, node by node. A node's series
// change only when the cache derives its ledger again or a session places pods on it, so
// a close publishes those nodes and deletes the series of nodes gone: 1,000 nodes of 8 GPUs
// in an idle cycle cost a pointer comparison each, not 32,000 series.
type nodeMetrics struct {
	mu    sync.Mutex
	nodes map[string]*nodeSeries
}

// nodeSeries is one node's published series.
type nodeSeries struct {
	published metrics.Publisher
	// derived is the derivation of the ledger they show.
	derived *derivation
	// placed: they show placements of the session, which the binder may not carry out. The
	// cache derives the ledger again once it binds one, but not when a bind fails, so the
	// next close publishes such a node again.
	placed bool
}

// publishMetrics sets the vGPU gauges to the bookings of the nodes' ledgers: every GPU the
// nodes publish, and every pod holding vGPUs on one. The series of nodes left out, or
// without usable GPUs now, are deleted.
func (p *plugin) publishMetrics(nodes map[string]*api.NodeInfo) {
	published := &p.shared.published
	published.mu.Lock()
	defer published.mu.Unlock()
	for name, s := range published.nodes {
		if node := nodes[name]; node == nil || !hasGPUs(ledgerOf(node)) {
			s.published.Publish(func(metrics.Report) {})
			delete(published.nodes, name)
		}
	}
	for name, node := range nodes {
		l := ledgerOf(node)
		if !hasGPUs(l) {
			continue
		}
		placed := p.placesOn(node)
		s := published.nodes[name]
		if s == nil {
			s = &nodeSeries{}
			published.nodes[name] = s
		} else if l.derived != nil && s.derived == l.derived && !s.placed && !placed {
			continue
		}
		s.published.Publish(func(r metrics.Report) { p.nodeReport(r, node, l) })
		s.derived, s.placed = l.derived, placed
	}
}

// hasGPUs: the ledger lists GPUs; the deriver lists none on a node whose GPUs it cannot use.
func hasGPUs(l *ledger) bool { return l != nil && len(l.gpus) > 0 }

// placesOn: the session placed pods on the node.
func (p *plugin) placesOn(node *api.NodeInfo) bool {
	if len(p.placed) == 0 {
		return false
	}
	for uid := range node.Tasks {
		if _, ok := p.placed[uid]; ok {
			return true
		}
	}
	return false
}

// nodeReport sets the series of one node in r: its GPUs' totals from the ledger, and what
// each pod books on each GPU, from the bookings the deriver found and the session's
// placements, which together make those totals.
func (p *plugin) nodeReport(r metrics.Report, node *api.NodeInfo, l *ledger) {
	gauges := p.shared.gauges
	for i := range l.gpus {
		g := &l.gpus[i]
		// Upstream counts vGPUs, one per container device, as the tasks sharing the card.
		r.Set(gauges.sharedNumber, float64(g.used.devices), g.info.UUID, node.Name)
		r.Set(gauges.allocatedMemory, float64(g.used.memory), g.info.UUID, node.Name)
		r.Set(gauges.allocatedCores, float64(g.used.cores), g.info.UUID, node.Name)
		r.Set(gauges.memoryLimit, float64(g.memory), g.info.UUID, node.Name)
		if g.reserve > 0 {
			r.Set(gauges.allocatedReserve, 0, g.info.UUID, node.Name)
		}
	}
	// Add, not Set: a pod's containers may share a GPU. A booking may hold a reserve on a GPU
	// that has none now (the device ConfigMap changed since): the GPU's series then shows it.
	podSeries := func(b booking) {
		uuid := l.gpus[b.gpu].info.UUID
		r.Add(gauges.podMemory, float64(b.memory), uuid, node.Name, b.pod)
		r.Add(gauges.podCores, float64(b.cores), uuid, node.Name, b.pod)
		if b.reserve > 0 {
			r.Add(gauges.allocatedReserve, float64(b.reserve), uuid, node.Name)
			r.Add(gauges.podReserve, float64(b.reserve), uuid, node.Name, b.pod)
		}
	}
	if l.derived != nil {
		for _, b := range l.derived.bookings {
			podSeries(b)
		}
	}
	if len(p.placed) > 0 {
		for uid, t := range node.Tasks {
			if placed, ok := p.placed[uid]; ok {
				for b := range l.placedBookings(t, placed) {
					podSeries(b)
				}
			}
		}
	}
}
