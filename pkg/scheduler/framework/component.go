package framework

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
)

// Component is what a plugin keeps for the life of the scheduler, while the plugin itself
// lives for one session: watches, state its sessions share, metric series. The plugin's
// registry entry owns it (PluginSpec.Component), its builder shares it with every session,
// and cmd/vc-scheduler runs every registered component alike, so that a plugin with such
// state needs no code of its own there.
type Component interface {
	// Start attaches the component to the scheduler cache, once the cache is built and
	// before the first configuration is loaded. What it starts ends with ctx, which is how
	// the scheduler stops it.
	Start(ctx context.Context, cache ComponentCache)
	// Configure puts in force what cfg asks of the component: at start, and after every
	// reload of the configuration, never during a session.
	Configure(ctx context.Context, cfg *conf.SchedulerConfiguration)
	// Collectors are the component's metrics, for the registry the binary serves.
	Collectors() []prometheus.Collector
}

// ComponentCache is what a Component may use of the scheduler cache.
type ComponentCache interface {
	// AddDeviceDeriver has the cache derive every node's device state with d.
	AddDeviceDeriver(d DeviceDeriver)
	// RederiveDevices has the device state of every node derived again, for a change that no
	// node or pod event shows.
	RederiveDevices()
	// Informers is the factory of the cache's pod and node informers: informers added to it
	// share them, and the cache starts them and waits for them with its own.
	Informers() informers.SharedInformerFactory
}

// DeviceDeriver derives device state (the deviceshare plugin's GPU ledger) from a node object
// and the pods on it. The cache calls it for a node when either has changed since the node's
// last derivation, once, as the next snapshot is taken, and keeps the result in
// NodeInfo.Devices[Name()], so that every snapshot carries device state consistent with the
// tasks it holds, and a restarted scheduler rebuilds it from the same pods: device usage is
// always derived from pods, never remembered. Deriving at the snapshot rather than at each
// event matters when pods land together: a binpacked node taking 80 pods in a few cycles sees
// some 160 pod events (bound, then started), and each derivation reads all its pods.
//
// Derive runs under the cache mutex: it must be quick and must not call back into the cache.
type DeviceDeriver interface {
	// Name is the key of the state in NodeInfo.Devices.
	Name() string
	// Claims reports whether the node object announces these devices (an annotation look-up,
	// at every node event), so that the cache's NodesClaimedBy answers before any derivation.
	Claims(node *corev1.Node) bool
	// Derive computes the node's state. node is the cache's own object, with the node's full
	// set of tasks (terminated pods excluded) and the previous state in Devices: read it,
	// never change it. nil means the node has none of these devices.
	Derive(node *api.NodeInfo) api.Devices
}
