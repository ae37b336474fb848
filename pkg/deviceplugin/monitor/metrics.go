package monitor

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// The metrics below keep the upstream vGPU monitor's names, types and
// labels, including the zone="vGPU" label on every
// series, so that existing dashboards and alerts keep working.
const zoneLabel, zoneValue = "zone", "vGPU"

// HostGPUReader reads the node's GPUs' current usage; the device plugin's
// NVML backend is one.
type HostGPUReader interface {
	Usage() ([]nvml.Usage, error)
}

// PodLookup returns the namespace and name of the pod with this UID if it
// still exists on this node. Containers of other pods get no series: their
// cache directories outlive them until someone removes them.
type PodLookup func(podUID string) (namespace, name string, ok bool)

var (
	hostLabels      = []string{"deviceidx", "deviceuuid"}
	containerLabels = []string{"podnamespace", "podname", "ctrname", "vdeviceid", "deviceuuid"}
	zone            = prometheus.Labels{zoneLabel: zoneValue}

	hostMemoryDesc = prometheus.NewDesc("HostGPUMemoryUsage",
		"Device memory in use on the GPU by all processes of the node, in bytes.", hostLabels, zone)
	hostCoreDesc = prometheus.NewDesc("HostCoreUtilization",
		"Utilisation of the GPU by all processes of the node, in percent.", hostLabels, zone)
	containerMemoryUsageDesc = prometheus.NewDesc("vGPU_device_memory_usage_in_bytes",
		"Device memory the container's processes hold on this vGPU, as HAMi-core counts it, in bytes.", containerLabels, zone)
	containerMemoryLimitDesc = prometheus.NewDesc("vGPU_device_memory_limit_in_bytes",
		"Device memory limit of the container on this vGPU, in bytes; 0 means none.", containerLabels, zone)
	containerMemoryDetailDesc = prometheus.NewDesc("Device_memory_desc_of_container",
		"Device memory the container's processes hold on this vGPU, in bytes, with its breakdown in bytes as labels.",
		append(append([]string(nil), containerLabels...), "context", "module", "data", "offset"), zone)
	containerUtilizationDesc = prometheus.NewDesc("Device_utilization_desc_of_container",
		"SM utilisation of the container's processes on this vGPU, in percent.", containerLabels, zone)
	containerLastKernelDesc = prometheus.NewDesc("Device_last_kernel_of_container",
		"Seconds since the container last launched a kernel on this vGPU.", containerLabels, zone)
)

// Collector serves the host GPUs' usage and every running container's
// HAMi-core accounting as Prometheus metrics. It holds no state: each
// scrape reads NVML and the shared regions afresh.
type Collector struct {
	root string
	host HostGPUReader
	pods PodLookup
	now  func() time.Time
	// budget bounds the time one scrape spends reading regions.
	budget time.Duration
	// scanContext gives each scrape's scan its deadline; tests replace it.
	scanContext func(budget time.Duration) (context.Context, context.CancelFunc)
}

// DefaultScrapeBudget is how long one scrape may spend reading the
// containers' regions, well inside Prometheus's default scrape timeout
// (10 s). Regions not read by then are left out of that scrape and logged.
const DefaultScrapeBudget = 5 * time.Second

// maxRefusalLogs bounds the refused entries logged one by one per scrape,
// so that a container full of FIFOs cannot flood the log.
const maxRefusalLogs = 10

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector over the container cache directories
// under root (the host directory the device plugin creates them in,
// "<hook path>/vgpu/containers"). host may be nil: then only the
// per-container metrics are served.
func NewCollector(root string, host HostGPUReader, pods PodLookup) *Collector {
	return &Collector{root: root, host: host, pods: pods, now: time.Now, budget: DefaultScrapeBudget,
		scanContext: func(budget time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), budget)
		}}
}

// Describe sends the descriptors of every metric the Collector serves.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		hostMemoryDesc, hostCoreDesc, containerMemoryUsageDesc, containerMemoryLimitDesc,
		containerMemoryDetailDesc, containerUtilizationDesc, containerLastKernelDesc,
	} {
		ch <- d
	}
}

// Collect reads the current values. What cannot be read is logged and left
// out; the rest is still served.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.collectHost(ch)
	c.collectContainers(ch)
}

func (c *Collector) collectHost(ch chan<- prometheus.Metric) {
	if c.host == nil {
		return
	}
	gpus, err := c.host.Usage()
	if err != nil {
		klog.ErrorS(err, "Cannot read host GPU usage; serving what was read")
	}
	for _, gpu := range gpus {
		labels := []string{strconv.Itoa(gpu.Index), gpu.UUID}
		ch <- prometheus.MustNewConstMetric(hostMemoryDesc, prometheus.GaugeValue, float64(gpu.MemoryUsedBytes), labels...)
		ch <- prometheus.MustNewConstMetric(hostCoreDesc, prometheus.GaugeValue, float64(gpu.UtilizationPercent), labels...)
	}
}

func (c *Collector) collectContainers(ch chan<- prometheus.Metric) {
	ctx, cancel := c.scanContext(c.budget)
	defer cancel()
	scan, err := ScanRootContext(ctx, c.root)
	if err != nil {
		klog.ErrorS(err, "Cannot read container shared regions", "root", c.root)
		return
	}
	for _, problem := range scan.Problems {
		klog.V(2).InfoS("Skipping a container shared region", "reason", problem)
	}
	for i, refused := range scan.Refused {
		if i == maxRefusalLogs {
			klog.InfoS("Refused more entries in container cache directories", "root", c.root, "more", len(scan.Refused)-i)
			break
		}
		klog.InfoS("Refused an entry in a container cache directory", "reason", refused)
	}
	if scan.Unread > 0 {
		klog.InfoS("Scrape time budget spent; regions left unread in this scrape",
			"root", c.root, "budget", c.budget, "unread", scan.Unread)
	}
	now := c.now()
	for _, ctr := range scan.Containers {
		namespace, name, ok := c.pods(ctr.PodUID)
		if !ok {
			continue
		}
		region := ctr.Region
		for _, dev := range region.Devices {
			// A device whose UUID HAMi-core has not written yet is
			// still being set up; its numbers mean nothing.
			if dev.UUID == "" {
				continue
			}
			labels := []string{namespace, name, ctr.Container, strconv.Itoa(dev.Index), dev.UUID}
			gauge := func(desc *prometheus.Desc, value float64) {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value, labels...)
			}
			gauge(containerMemoryUsageDesc, float64(dev.Used.Total))
			gauge(containerMemoryLimitDesc, float64(dev.LimitBytes))
			gauge(containerUtilizationDesc, float64(dev.SMUtil))
			ch <- prometheus.MustNewConstMetric(containerMemoryDetailDesc, prometheus.CounterValue, float64(dev.Used.Total),
				append(labels, formatBytes(dev.Used.Context), formatBytes(dev.Used.Module),
					formatBytes(dev.Used.Data), formatBytes(dev.Used.Offset))...)
			if !region.LastKernel.IsZero() {
				// Whole seconds, as HAMi-core records the time.
				gauge(containerLastKernelDesc, float64(max(now.Unix()-region.LastKernel.Unix(), 0)))
			}
		}
	}
}

func formatBytes(n uint64) string {
	return strconv.FormatUint(n, 10)
}
