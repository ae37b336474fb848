package deviceshare

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Shared is what deviceshare keeps for the life of the scheduler, while a plugin lives for
// one session: the device ConfigMap watch, whose configuration sessions and the cache's
// deriver read, and the vGPU metrics with the series each session close last published. It
// is the plugin's framework.Component: its registry entry owns it and NewBuilder shares it
// with every session, which only reads the configuration in use and publishes the metrics
// when it closes.
type Shared struct {
	devices *devicewatch.Source
	// recorder receives the Events of the cache's deriver; nil drops them.
	recorder record.EventRecorder
	metrics  *vgpuMetrics
}

var (
	_ framework.Component     = (*Shared)(nil)
	_ framework.ResourceOwner = (*Shared)(nil)
)

// NewShared is the state of a scheduler that reads the device configuration from devices and
// records no Events (tests).
func NewShared(devices *devicewatch.Source) *Shared {
	return &Shared{devices: devices, metrics: newVGPUMetrics()}
}

// NewSharedOn is the state of a scheduler of the cluster client reaches: it reads the device
// ConfigMaps through client, and recorder records the Events on rejected ConfigMaps and
// those of the cache's deriver.
func NewSharedOn(client kubernetes.Interface, recorder record.EventRecorder) *Shared {
	s := NewShared(devicewatch.NewSource(client, recorder))
	s.recorder = recorder
	return s
}

// NewStaticShared is the state of a scheduler that reads no ConfigMap and uses the shipped
// device configuration (benchmarks and tests).
func NewStaticShared() *Shared { return NewShared(devicewatch.Static(vgpu.DefaultNvidiaConfig())) }

// Start has the cache derive every node's GPU ledger under the device configuration in use,
// and derive them all again when that configuration changes, so that the ledgers follow its
// resource names. The ConfigMap watches start with the first Configure that names them.
func (s *Shared) Start(_ context.Context, cache framework.ComponentCache) {
	cache.AddDeviceDeriver(NewDeriverFor(s.devices, s.recorder))
	s.devices.OnChange(cache.RederiveDevices)
}

// Collectors are the vGPU metrics, for the scheduler's metrics registry.
func (s *Shared) Collectors() []prometheus.Collector { return []prometheus.Collector{s.metrics} }

// Configure puts in use the device ConfigMap that cfg's deviceshare arguments name (the
// first listing with vGPU scheduling on), waiting for its first read when it is new; its
// watches end with ctx. A configuration without vGPU scheduling leaves the one in use.
// Called at start and after every reload, never from a session; a session opened in
// between runs under the previous ConfigMap, which the cache's ledgers follow too.
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

// OwnedResources are the vGPU resources only deviceshare places, under the names of the
// device configuration in use: the count and the memory, either of which makes a container a
// vGPU request (vgpu.PodRequests). A configuration without vGPU scheduling leaves their pods
// Pending rather than bound without an assignment.
func (s *Shared) OwnedResources() []corev1.ResourceName {
	names := s.devices.InUse().ResourceNames()
	return []corev1.ResourceName{names.Count, names.Memory}
}

// PlacesWith: an entry places vGPU when its arguments turn vGPU scheduling on; a malformed
// one cannot be in force (loading drops the value, which then defaults to off).
func (s *Shared) PlacesWith(args conf.Arguments) bool {
	a, err := parseArguments(args)
	return err == nil && a.vgpuEnable
}
