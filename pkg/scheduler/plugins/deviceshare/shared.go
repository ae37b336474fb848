package deviceshare

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Shared is what deviceshare keeps for the life of the scheduler, while a plugin lives for
// one session: the device ConfigMap watch, whose configuration sessions and the cache's
// deriver read, and the vGPU metrics with the series each session close last published.
// cmd/vc-scheduler builds one, registers Collectors, adds Deriver to the cache, calls
// Configure with every configuration it loads, and hands it to NewBuilder. A session only
// reads the configuration in use and publishes the metrics when it closes.
type Shared struct {
	devices *devicewatch.Source
	metrics *vgpuMetrics
}

// NewShared is the state of a scheduler that reads the device configuration from devices.
func NewShared(devices *devicewatch.Source) *Shared {
	return &Shared{devices: devices, metrics: newVGPUMetrics()}
}

// NewStaticShared is the state of a scheduler that reads no ConfigMap and uses the shipped
// device configuration (benchmarks and tests).
func NewStaticShared() *Shared { return NewShared(devicewatch.Static(vgpu.DefaultNvidiaConfig())) }

// Collectors are the vGPU metrics, for the scheduler's metrics registry.
func (s *Shared) Collectors() []prometheus.Collector { return []prometheus.Collector{s.metrics} }

// Deriver is the cache's deriver of the GPU ledgers, under the configuration in use.
func (s *Shared) Deriver(recorder record.EventRecorder) *Deriver {
	return NewDeriverFor(s.devices, recorder)
}

// Configure puts in use the device ConfigMap that cfg's deviceshare arguments name (the
// first listing with vGPU scheduling on), waiting for its first read when it is new. A
// configuration without vGPU scheduling leaves the one in use. Called at start and after
// every reload, never from a session; a session opened in between runs under the previous
// ConfigMap, which the cache's ledgers follow too.
func (s *Shared) Configure(ctx context.Context, cfg *conf.SchedulerConfiguration) {
	for _, tier := range cfg.Tiers {
		for _, opt := range tier.Plugins {
			if opt.Name != PluginName {
				continue
			}
			a, err := parseArguments(opt.Arguments)
			if err != nil {
				// Validation rejects such a configuration before it is loaded.
				klog.ErrorS(err, "Ignoring deviceshare arguments", "plugin", PluginName)
				continue
			}
			if a.vgpuEnable {
				s.devices.Select(ctx, a.deviceConfig)
				return
			}
		}
	}
}

// OnChange sets the function called after the device configuration in use changed: the
// cache's RederiveDevices, so that its ledgers follow the new names.
func (s *Shared) OnChange(f func()) { s.devices.OnChange(f) }
