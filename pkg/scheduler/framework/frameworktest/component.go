package frameworktest

import (
	"context"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

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

// Starter is what the scheduler starts on its cache: a framework.Component, or a source a
// component is built on.
type Starter interface {
	Start(ctx context.Context, cache framework.ComponentCache)
}

// StartOn starts c as the scheduler starts its components, on an informer factory over a fake
// API server holding objs. It returns the factory and the context that ends its watches when
// the test does.
func StartOn(t testing.TB, c Starter, objs ...runtime.Object) (informers.SharedInformerFactory, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	c.Start(ctx, &ComponentCache{Factory: factory})
	return factory, ctx
}
