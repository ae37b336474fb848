package cache

import "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"

// DeviceDeriver derives device state (the deviceshare plugin's GPU ledger) from a node object
// and the pods on it. The cache calls it whenever either changes and keeps the result in
// NodeInfo.Devices[Name()], so that every snapshot carries device state consistent with the
// tasks it holds, and a restarted scheduler rebuilds it from the same pods: device usage is
// always derived from pods, never remembered.
//
// Derive runs under the cache mutex: it must be quick and must not call back into the cache.
type DeviceDeriver interface {
	// Name is the key of the state in NodeInfo.Devices.
	Name() string
	// Derive computes the node's state. node is the cache's own object, with the node's full
	// set of tasks (terminated pods excluded) and the previous state in Devices: read it,
	// never change it. nil means the node has none of these devices.
	Derive(node *api.NodeInfo) api.Devices
}

// AddDeviceDeriver registers a deriver and derives the state of the nodes already known.
func (sc *SchedulerCache) AddDeviceDeriver(d DeviceDeriver) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.derivers = append(sc.derivers, d)
	for _, n := range sc.nodes {
		if n.Node != nil {
			sc.derive(n, d)
		}
	}
}

// RederiveDevices derives the device state of every node again, for a change that no node
// or pod event shows: the device configuration renaming the vGPU resources.
func (sc *SchedulerCache) RederiveDevices() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for name := range sc.nodes {
		sc.nodeChanged(name)
	}
}

// nodeChanged re-derives the device state of a node whose object the cache knows. Called
// under mu after the node object or any task on it changed.
func (sc *SchedulerCache) nodeChanged(name string) {
	n := sc.nodes[name]
	if n == nil || n.Node == nil {
		return
	}
	for _, d := range sc.derivers {
		sc.derive(n, d)
	}
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
