package cache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// AddDeviceDeriver registers a deriver and derives the state of the nodes already known.
func (sc *SchedulerCache) AddDeviceDeriver(d framework.DeviceDeriver) {
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
// deriver named name (framework.DeviceDeriver.Claims), as of the last node event.
func (sc *SchedulerCache) NodesClaimedBy(name string) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.claimed[name])
}

// claim records whether d claims node. Called under mu.
func (sc *SchedulerCache) claim(d framework.DeviceDeriver, node *corev1.Node) {
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

// deriveChanged derives the device state of the nodes changed since the last snapshot whose
// object the cache knows; Snapshot clears the set once it has used it. Called under mu.
func (sc *SchedulerCache) deriveChanged() {
	for name := range sc.underived {
		if n := sc.nodes[name]; n != nil && n.Node != nil {
			for _, d := range sc.derivers {
				sc.derive(n, d)
			}
		}
	}
}

// derive stores one deriver's state for the node. Called under mu.
func (sc *SchedulerCache) derive(n *api.NodeInfo, d framework.DeviceDeriver) {
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
