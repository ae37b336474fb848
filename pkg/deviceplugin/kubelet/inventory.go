package kubelet

import (
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// Inventory holds the GPUs the node advertises and tells the ListAndWatch
// streams when they change. The caller decides which GPUs belong in it
// (filtered by the node config, MIG GPUs left out in HAMi-core mode); the
// inventory only follows their health.
type Inventory struct {
	mu   sync.Mutex
	gpus []nvml.GPU
	// changed is closed and replaced on every change: a broadcast that any
	// number of streams can wait on without registering.
	changed chan struct{}
	// advertised is when a device list last reached the kubelet.
	advertised time.Time
}

// NewInventory returns an inventory of gpus, in the order given.
func NewInventory(gpus []nvml.GPU) *Inventory {
	return &Inventory{gpus: slices.Clone(gpus), changed: make(chan struct{})}
}

// GPUs returns a copy of the GPUs and their current health.
func (v *Inventory) GPUs() []nvml.GPU {
	gpus, _ := v.snapshot()
	return gpus
}

// Replace swaps the whole GPU list, e.g. after the node config changed
// which GPUs are registered. Streams are told only if something differs.
func (v *Inventory) Replace(gpus []nvml.GPU) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if slices.Equal(v.gpus, gpus) {
		return
	}
	v.gpus = slices.Clone(gpus)
	v.notifyLocked()
}

// SetHealth applies a health report from nvml.Backend.WatchHealth; pass it
// as the report function. Reports for GPUs outside the inventory are
// logged and dropped.
func (v *Inventory) SetHealth(event nvml.HealthEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	i := slices.IndexFunc(v.gpus, func(g nvml.GPU) bool { return g.UUID == event.UUID })
	if i < 0 {
		klog.InfoS("Health report for a GPU that is not advertised", "gpu", event.UUID, "healthy", event.Healthy, "reason", event.Reason)
		return
	}
	gpu := &v.gpus[i]
	reason := event.Reason
	if event.Healthy {
		reason = ""
	}
	if gpu.Healthy == event.Healthy && gpu.UnhealthyReason == reason {
		return
	}
	gpu.Healthy, gpu.UnhealthyReason = event.Healthy, reason
	klog.InfoS("GPU health changed; updating the advertised devices", "gpu", event.UUID, "healthy", event.Healthy, "reason", reason)
	v.notifyLocked()
}

// snapshot returns a copy of the GPUs and a channel closed at the next
// change after this snapshot.
func (v *Inventory) snapshot() ([]nvml.GPU, <-chan struct{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.gpus), v.changed
}

func (v *Inventory) notifyLocked() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// LastAdvertised says when a ListAndWatch stream last sent the kubelet a
// device list; zero before the first. Until then, and for a moment after,
// the kubelet may have rejected pods for want of healthy devices without
// calling Allocate (assignment.Config.Advertised).
func (v *Inventory) LastAdvertised() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.advertised
}

func (v *Inventory) markAdvertised(at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if at.After(v.advertised) {
		v.advertised = at
	}
}
