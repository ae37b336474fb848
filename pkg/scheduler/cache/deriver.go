package cache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

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
	// at every node event), so that NodesClaimedBy answers before any derivation.
	Claims(node *corev1.Node) bool
	// Derive computes the node's state. node is the cache's own object, with the node's full
	// set of tasks (terminated pods excluded) and the previous state in Devices: read it,
	// never change it. nil means the node has none of these devices.
	Derive(node *api.NodeInfo) api.Devices
}

// AddDeviceDeriver registers a deriver and derives the state of the nodes already known.
func (sc *SchedulerCache) AddDeviceDeriver(d DeviceDeriver) {
	defer sc.changed()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.derivers = append(sc.derivers, d)
	for _, n := range sc.nodes {
		if n.Node != nil {
			sc.derive(n, d)
			sc.claim(d, n.Node)
		}
	}
}

// NodesClaimedBy is how many nodes in the scheduler's view announce the devices of the
// deriver named name (DeviceDeriver.Claims), as of the last node event.
func (sc *SchedulerCache) NodesClaimedBy(name string) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.claimed[name])
}

// claim records whether d claims node. Called under mu.
func (sc *SchedulerCache) claim(d DeviceDeriver, node *corev1.Node) {
	nodes := sc.claimed[d.Name()]
	if nodes == nil {
		nodes = map[string]struct{}{}
		sc.claimed[d.Name()] = nodes
	}
	if d.Claims(node) {
		nodes[node.Name] = struct{}{}
	} else {
		delete(nodes, node.Name)
	}
}

// RederiveDevices has the device state of every node derived again, for a change that no
// node or pod event shows: the device configuration renaming the vGPU resources.
func (sc *SchedulerCache) RederiveDevices() {
	defer sc.changed()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for name := range sc.nodes {
		sc.nodeChanged(name)
	}
}

// nodeChanged marks a node's device state for derivation at the next snapshot. Called under
// mu after the node object or any task on it changed.
func (sc *SchedulerCache) nodeChanged(name string) {
	sc.underived[name] = struct{}{}
}

// deriveChanged derives the device state of the nodes changed since the last call whose
// object the cache knows. Called under mu.
func (sc *SchedulerCache) deriveChanged() {
	for name := range sc.underived {
		if n := sc.nodes[name]; n != nil && n.Node != nil {
			for _, d := range sc.derivers {
				sc.derive(n, d)
			}
		}
	}
	clear(sc.underived)
}

// derive stores one deriver's state for the node. Called under mu.
func (sc *SchedulerCache) derive(n *api.NodeInfo, d DeviceDeriver) {
	devices := d.Derive(n)
	if devices == nil {
		delete(n.Devices, d.Name())
		return
	}
	if n.Devices == nil {
		n.Devices = map[string]api.Devices{}
	}
	n.Devices[d.Name()] = devices
}
