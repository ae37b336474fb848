package deviceshare

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/metrics"
)

// Upstream's vGPU gauges (reference spec 5.13), under its names, labels and help texts so
// that dashboards built for the stock vc-scheduler keep working. devID is the GPU's UUID.
// Memory is in the units the device plugin publishes (gpuMemoryFactor MiB: MiB on nodes
// whose factor is 1), as upstream shows it.
//
// Upstream moves them by increments as pods come and go, and resets a GPU's totals whenever
// its node's pool is rebuilt. Here every session close sets them from the session's
// ledgers, which the cache derives from the pods' annotations: they read the same after a
// restart, and a GPU, node or pod that is gone loses its series.
var (
	vgpuSharedNumber = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "volcano", Name: "vgpu_device_shared_number",
		Help: "The number of vgpu tasks sharing this card",
	}, []string{"devID", "NodeName"})
	vgpuAllocatedMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "volcano", Name: "vgpu_device_allocated_memory",
		Help: "The number of vgpu memory allocated in this card",
	}, []string{"devID", "NodeName"})
	vgpuAllocatedCores = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "volcano", Name: "vgpu_device_allocated_cores",
		Help: "The percentage of gpu compute cores allocated in this card",
	}, []string{"devID", "NodeName"})
	vgpuMemoryLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "volcano", Name: "vgpu_device_memory_limit",
		Help: "The number of total device memory in this card",
	}, []string{"devID", "NodeName"})
	// The per-pod gauges are labelled with the pod's name only, as upstream's: it leaves the
	// namespace out. Two pods of one name in different namespaces on one GPU therefore share
	// a series, which shows their sum.
	vgpuPodMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "volcano", Name: "vgpu_device_memory_allocation_for_a_certain_pod",
		Help: "The vgpu device memory allocated for a certain pod",
	}, []string{"devID", "NodeName", "podName"})
	vgpuPodCores = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "volcano", Name: "vgpu_device_core_allocation_for_a_certain_pod",
		Help: "The vgpu device core allocated for a certain pod",
	}, []string{"devID", "NodeName", "podName"})

	// vgpuNodes outlives the plugin, which is built for one session.
	vgpuNodes = nodeMetrics{nodes: map[string]*nodeSeries{}}
)

func init() {
	metrics.Registry.MustRegister(vgpuSharedNumber, vgpuAllocatedMemory, vgpuAllocatedCores, vgpuMemoryLimit,
		vgpuPodMemory, vgpuPodCores)
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
	vgpuNodes.mu.Lock()
	defer vgpuNodes.mu.Unlock()
	for name, s := range vgpuNodes.nodes {
		if node := nodes[name]; node == nil || !hasGPUs(ledgerOf(node)) {
			s.published.Publish(func(metrics.Report) {})
			delete(vgpuNodes.nodes, name)
		}
	}
	for name, node := range nodes {
		l := ledgerOf(node)
		if !hasGPUs(l) {
			continue
		}
		placed := p.placesOn(node)
		s := vgpuNodes.nodes[name]
		if s == nil {
			s = &nodeSeries{}
			vgpuNodes.nodes[name] = s
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
	for i := range l.gpus {
		g := &l.gpus[i]
		// Upstream counts vGPUs, one per container device, as the tasks sharing the card.
		r.Set(vgpuSharedNumber, float64(g.used.devices), g.info.UUID, node.Name)
		r.Set(vgpuAllocatedMemory, float64(g.used.memory), g.info.UUID, node.Name)
		r.Set(vgpuAllocatedCores, float64(g.used.cores), g.info.UUID, node.Name)
		r.Set(vgpuMemoryLimit, float64(g.memory), g.info.UUID, node.Name)
	}
	// Add, not Set: a pod's containers may share a GPU.
	podSeries := func(gpu int, pod string, memory, cores int32) {
		r.Add(vgpuPodMemory, float64(memory), l.gpus[gpu].info.UUID, node.Name, pod)
		r.Add(vgpuPodCores, float64(cores), l.gpus[gpu].info.UUID, node.Name, pod)
	}
	if l.derived != nil {
		for _, b := range l.derived.bookings {
			podSeries(b.gpu, b.pod, b.memory, b.cores)
		}
	}
	if len(p.placed) > 0 {
		for uid, t := range node.Tasks {
			for i, d := range l.held(p.placed[uid]) {
				podSeries(i, t.Name, d.UsedMemory, d.UsedCores)
			}
		}
	}
}
