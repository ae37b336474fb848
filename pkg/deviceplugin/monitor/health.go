package monitor

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// Names of the device plugin's health metrics: the chart's dashboard and alerts read them.
const (
	GPUHealthyMetricName = "vgpu_device_plugin_gpu_healthy"
	XIDErrorsMetricName  = "vgpu_device_plugin_xid_errors_total"
)

var gpuHealthyDesc = prometheus.NewDesc(GPUHealthyMetricName,
	"1 while the GPU is advertised to the kubelet as healthy, 0 once a critical XID or an NVML failure made it unhealthy (until the plugin restarts); reason says why.",
	append(append([]string(nil), hostLabels...), "reason"), nil)

// HealthCollector serves the health of the GPUs the plugin advertises, as the kubelet is told
// it: gpus is the inventory's current list.
type HealthCollector struct {
	gpus func() []nvml.GPU
}

var _ prometheus.Collector = (*HealthCollector)(nil)

// NewHealthCollector returns a collector over gpus.
func NewHealthCollector(gpus func() []nvml.GPU) *HealthCollector {
	return &HealthCollector{gpus: gpus}
}

// Describe sends the health gauge's descriptor.
func (c *HealthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- gpuHealthyDesc }

// Collect sends one series per advertised GPU.
func (c *HealthCollector) Collect(ch chan<- prometheus.Metric) {
	for _, gpu := range c.gpus() {
		healthy := 0.0
		if gpu.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(gpuHealthyDesc, prometheus.GaugeValue, healthy,
			strconv.Itoa(gpu.Index), gpu.UUID, gpu.UnhealthyReason)
	}
}

// XIDCounter counts the XID events NVML reports per GPU, critical or not (the XID numbers are
// in the plugin's log). The GPUs it is told to Include have their series from the start, at
// 0, so that a scrape shows that none happened.
type XIDCounter struct {
	vec *prometheus.CounterVec
}

// NewXIDCounter returns a counter without series.
func NewXIDCounter() *XIDCounter {
	return &XIDCounter{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: XIDErrorsMetricName,
		Help: "XID events NVML reported for the GPU since the plugin started, critical or not; deviceuuid is empty for events NVML could not place.",
	}, []string{"deviceuuid"})}
}

// Include gives each of gpus its series, at 0 until an XID is seen.
func (c *XIDCounter) Include(gpus []nvml.GPU) {
	for _, gpu := range gpus {
		c.vec.WithLabelValues(gpu.UUID)
	}
}

// Seen counts one XID event; it is nvml.Options.XIDSeen.
func (c *XIDCounter) Seen(uuid string, _ uint64) { c.vec.WithLabelValues(uuid).Inc() }

// Collector is the counter, for the plugin's registry.
func (c *XIDCounter) Collector() prometheus.Collector { return c.vec }
