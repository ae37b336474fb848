package deviceshare

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// vgpuMetrics are upstream's vGPU gauges, under its names, labels and help texts so that
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
//
// They are a collector rather than gauge vectors: a vector keeps a gauge, its label pairs
// and a hash entry for every series until it is deleted, some 700 bytes a series (131 MB for
// 80,000 pods on 8,000 GPUs, BenchmarkVGPUMetricsMemory), which made them the scheduler's
// largest heap. A session close keeps some 50 bytes per pod and GPU instead (nodeSnapshot),
// and a scrape makes the series from them, for that scrape only.
type vgpuMetrics struct {
	sharedNumber, allocatedMemory, allocatedCores, memoryLimit *prometheus.Desc
	// The per-pod gauges are labelled with the pod's name only, as upstream's: it leaves the
	// namespace out. Two pods of one name in different namespaces on one GPU therefore share
	// a series, which shows their sum.
	podMemory, podCores *prometheus.Desc
	// allocatedReserve and podReserve are the parts of allocatedMemory and podMemory that are
	// context reserve.
	allocatedReserve, podReserve *prometheus.Desc
	// pendingPods and pendingSeconds are ours: per job, its vGPU pods waiting for a node and
	// the age of the oldest, labelled as the e2e job gauges of pkg/scheduler/metrics are.
	pendingPods, pendingSeconds *prometheus.Desc
	// fragmentedMemory is ours: the GPU memory free in parts too small for the largest
	// pending slice (plugin.fragmented), as the last session close found it.
	fragmentedMemory *prometheus.Desc
	fragmented       int64
	// now is the clock the pending ages are read on.
	now func() time.Time

	// mu is held by a session close for the whole of its publishing, and by a scrape only
	// to take the snapshots, which are never changed once published: a scrape of thousands
	// of series does not hold up the scheduler.
	mu sync.Mutex
	// nodes is what the last session close published, node by node. A node's series change
	// only when the cache derives its ledger again or a session places pods on it, so a close
	// replaces the snapshots of those nodes and drops those of nodes gone: 1,000 nodes of 8
	// GPUs in an idle cycle cost a pointer comparison each.
	nodes map[string]*nodeSnapshot
	// scratch gathers a node's bookings for summing, reused from node to node.
	scratch []podSeries
	// pending is what the last session close found waiting; never changed once published.
	pending []pendingJob
}

func newVGPUMetrics() *vgpuMetrics {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("", "volcano", name), help, labels, nil)
	}
	return &vgpuMetrics{
		sharedNumber:    desc("vgpu_device_shared_number", "The number of vgpu tasks sharing this card", "devID", "NodeName"),
		allocatedMemory: desc("vgpu_device_allocated_memory", "The number of vgpu memory allocated in this card", "devID", "NodeName"),
		allocatedCores:  desc("vgpu_device_allocated_cores", "The percentage of gpu compute cores allocated in this card", "devID", "NodeName"),
		memoryLimit:     desc("vgpu_device_memory_limit", "The number of total device memory in this card", "devID", "NodeName"),
		podMemory: desc("vgpu_device_memory_allocation_for_a_certain_pod", "The vgpu device memory allocated for a certain pod",
			"devID", "NodeName", "podName"),
		podCores: desc("vgpu_device_core_allocation_for_a_certain_pod", "The vgpu device core allocated for a certain pod",
			"devID", "NodeName", "podName"),
		allocatedReserve: desc("vgpu_device_allocated_context_reserve",
			"The part of vgpu_device_allocated_memory in this card booked as CUDA context reserve (contextReserves in the device ConfigMap)",
			"devID", "NodeName"),
		podReserve: desc("vgpu_device_context_reserve_for_a_certain_pod",
			"The part of vgpu_device_memory_allocation_for_a_certain_pod booked as CUDA context reserve",
			"devID", "NodeName", "podName"),
		pendingPods: desc("vgpu_job_pending_pods", "Pods of the job asking for vGPU that wait for a node (Pending or Pipelined)",
			"job_name", "queue", "job_namespace"),
		pendingSeconds: desc("vgpu_job_oldest_pending_seconds", "Seconds since the oldest of the job's pods asking for vGPU that wait for a node was created",
			"job_name", "queue", "job_namespace"),
		fragmentedMemory: desc("vgpu_fragmented_memory",
			"GPU memory free on GPUs that cannot hold the largest vGPU slice a waiting pod asks for (what the consolidate action can gather)"),
		now:   time.Now,
		nodes: map[string]*nodeSnapshot{},
	}
}

// nodeSnapshot is one node's series as a session close published them. Nothing changes it
// once published, so a scrape reads it without holding the lock.
type nodeSnapshot struct {
	name string
	gpus []gpuSeries
	// pods has one entry per GPU and pod name: the label set of a per-pod series.
	pods []podSeries
	// derived is the derivation of the ledger they show.
	derived *derivation
	// placed: they show placements of the session, which the binder may not carry out. The
	// cache derives the ledger again once it binds one, but not when a bind fails, so the
	// next close publishes such a node again.
	placed bool
}

// gpuSeries is what a GPU's series show; size is its memory (vgpu_device_memory_limit).
type gpuSeries struct {
	uuid                 string
	devices, cores, size int32
	memory               int64
	// reserve is the context reserve the GPU's bookings hold; hasReserve says whether the
	// GPU shows it: when its model has a reserve, or a booking holds one (the device
	// ConfigMap changed since it was made).
	reserve    int64
	hasReserve bool
}

// podSeries is what one pod name books on one GPU of the node (index gpu), summed over its
// containers and the pods of that name. The sums are int64 so that no sum of the bookings'
// int32s overflows, as none did in the float64 sums of the gauge vectors.
type podSeries struct {
	pod                    string
	memory, cores, reserve int64
	gpu                    int32
}

// publishMetrics sets the vGPU series to the bookings of the nodes' ledgers: every GPU the
// nodes publish, and every pod holding vGPUs on one. The series of nodes left out, or
// without usable GPUs now, go.
func (p *plugin) publishMetrics(nodes map[string]*api.NodeInfo, pending []pendingJob) {
	m := p.shared.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = pending
	m.fragmented = p.fragmented(nodes, pending)
	for name := range m.nodes {
		if node := nodes[name]; node == nil || !hasGPUs(ledgerOf(node)) {
			delete(m.nodes, name)
		}
	}
	for name, node := range nodes {
		l := ledgerOf(node)
		if !hasGPUs(l) {
			continue
		}
		placed := p.placesOn(node)
		if s := m.nodes[name]; s != nil && l.derived != nil && s.derived == l.derived && !s.placed && !placed {
			continue
		}
		m.nodes[name] = p.nodeSnapshot(node, l, placed)
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

// nodeSnapshot is the series of one node: its GPUs' totals from the ledger, and what each
// pod books on each GPU, from the bookings the deriver found and the session's placements,
// which together make those totals. The caller holds m.mu, for the scratch slice.
func (p *plugin) nodeSnapshot(node *api.NodeInfo, l *ledger, placed bool) *nodeSnapshot {
	m := p.shared.metrics
	s := &nodeSnapshot{name: node.Name, gpus: make([]gpuSeries, len(l.gpus)), derived: l.derived, placed: placed}
	for i := range l.gpus {
		g := &l.gpus[i]
		// Upstream counts vGPUs, one per container device, as the tasks sharing the card.
		s.gpus[i] = gpuSeries{uuid: g.info.UUID, devices: g.used.devices, memory: g.used.memory, cores: g.used.cores,
			size: g.memory, hasReserve: g.reserve > 0}
	}
	bookings := m.scratch[:0]
	add := func(b booking) {
		bookings = append(bookings, podSeries{pod: b.pod, gpu: b.gpu, memory: int64(b.memory), cores: int64(b.cores), reserve: int64(b.reserve)})
		// A booking may hold a reserve on a GPU that has none now (the device ConfigMap
		// changed since): the GPU's series then shows it.
		if b.reserve > 0 {
			g := &s.gpus[b.gpu]
			g.reserve += int64(b.reserve)
			g.hasReserve = true
		}
	}
	if l.derived != nil {
		for _, b := range l.derived.bookings {
			add(b)
		}
	}
	if placed {
		for uid, t := range node.Tasks {
			if pl, ok := p.placed[uid]; ok {
				for b := range l.placedBookings(t, pl) {
					add(b)
				}
			}
		}
	}
	s.pods = sumByGPUAndPod(bookings)
	// Drop the names the scratch still points to, so that it keeps no deleted pod's alive.
	clear(bookings)
	m.scratch = bookings[:0]
	return s
}

// sumByGPUAndPod sorts the bookings and sums those of one label set, which a scrape must
// not emit twice: the containers of a pod sharing a GPU, and pods of one name in different
// namespaces. The result is a new slice of exactly the series' length, as it is kept until
// the node changes.
func sumByGPUAndPod(bookings []podSeries) []podSeries {
	if len(bookings) == 0 {
		return nil
	}
	slices.SortFunc(bookings, func(a, b podSeries) int {
		return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.pod, b.pod))
	})
	n := 1
	for i := 1; i < len(bookings); i++ {
		if !sameSeries(bookings[i-1], bookings[i]) {
			n++
		}
	}
	sums := make([]podSeries, 0, n)
	for i, b := range bookings {
		if i > 0 && sameSeries(bookings[i-1], b) {
			last := &sums[len(sums)-1]
			last.memory += b.memory
			last.cores += b.cores
			last.reserve += b.reserve
			continue
		}
		sums = append(sums, b)
	}
	return sums
}

func sameSeries(a, b podSeries) bool { return a.gpu == b.gpu && a.pod == b.pod }

// Describe sends the descriptors of every series Collect may send.
func (m *vgpuMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.sharedNumber, m.allocatedMemory, m.allocatedCores, m.memoryLimit,
		m.podMemory, m.podCores, m.allocatedReserve, m.podReserve, m.pendingPods, m.pendingSeconds, m.fragmentedMemory} {
		ch <- d
	}
}

// Collect sends the series of the snapshots the last session close published.
func (m *vgpuMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	nodes := make([]*nodeSnapshot, 0, len(m.nodes))
	for _, s := range m.nodes {
		nodes = append(nodes, s)
	}
	pending, fragmented := m.pending, m.fragmented
	m.mu.Unlock()
	gauge := func(d *prometheus.Desc, value float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, value, labels...)
	}
	gauge(m.fragmentedMemory, float64(fragmented))
	now := m.now()
	for _, j := range pending {
		gauge(m.pendingPods, float64(j.pods), j.name, j.queue, j.namespace)
		gauge(m.pendingSeconds, max(now.Sub(j.oldest).Seconds(), 0), j.name, j.queue, j.namespace)
	}
	for _, s := range nodes {
		for i := range s.gpus {
			g := &s.gpus[i]
			gauge(m.sharedNumber, float64(g.devices), g.uuid, s.name)
			gauge(m.allocatedMemory, float64(g.memory), g.uuid, s.name)
			gauge(m.allocatedCores, float64(g.cores), g.uuid, s.name)
			gauge(m.memoryLimit, float64(g.size), g.uuid, s.name)
			if g.hasReserve {
				gauge(m.allocatedReserve, float64(g.reserve), g.uuid, s.name)
			}
		}
		for i := range s.pods {
			ps := &s.pods[i]
			uuid := s.gpus[ps.gpu].uuid
			gauge(m.podMemory, float64(ps.memory), uuid, s.name, ps.pod)
			gauge(m.podCores, float64(ps.cores), uuid, s.name, ps.pod)
			if ps.reserve > 0 {
				gauge(m.podReserve, float64(ps.reserve), uuid, s.name, ps.pod)
			}
		}
	}
}
