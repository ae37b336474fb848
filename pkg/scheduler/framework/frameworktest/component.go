package frameworktest

import (
	"sync/atomic"

	"k8s.io/client-go/informers"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// ComponentCache is a framework.ComponentCache for starting a component without a scheduler
// cache: it hands out Factory and keeps what the component asks of the cache.
type ComponentCache struct {
	Factory informers.SharedInformerFactory
	// Derivers are the device derivers added, in order.
	Derivers []framework.DeviceDeriver
	// Rederived counts the requests to derive every node's devices again, which may come
	// from a component's watches.
	Rederived atomic.Int32
}

var _ framework.ComponentCache = (*ComponentCache)(nil)

// AddDeviceDeriver keeps d in Derivers.
func (c *ComponentCache) AddDeviceDeriver(d framework.DeviceDeriver) {
	c.Derivers = append(c.Derivers, d)
}

// RederiveDevices counts in Rederived.
func (c *ComponentCache) RederiveDevices() { c.Rederived.Add(1) }

// Informers returns Factory.
func (c *ComponentCache) Informers() informers.SharedInformerFactory { return c.Factory }
