// Package upstreamtest models, for tests only, how the upstream halves of the vGPU protocol
// read and write it: the Project-HAMi volcano-vgpu-device-plugin's Allocate (releases v1.11.0
// and v1.12.0) and the node and pod reading of upstream vc-scheduler (v1.13 to v1.16). Tests
// run this repository's encoders through these models to show that either half of the
// repository works with the upstream other half (docs/compatibility.md).
//
// The models follow upstream's behaviour on the wire (docs/protocol.md, "Node annotations"
// and "Pod annotations"); they were written from a description of it, not from upstream
// code. Where upstream would panic, a model returns an error.
// They deliberately import nothing of this module: a shared mistake in our protocol package
// must not be able to hide in the model.
//
// testdata/ holds golden Nodes as the upstream device plugins leave them (Nodes).
package upstreamtest

import (
	"fmt"
	"strconv"
	"strings"
)

// Annotation keys, spelled here again on purpose (see the package comment).
const (
	RegisterKey          = "volcano.sh/node-vgpu-register"
	HandshakeKey         = "volcano.sh/node-vgpu-handshake"
	AssignedNodeKey      = "volcano.sh/vgpu-node"
	AssignedTimeKey      = "volcano.sh/vgpu-time"
	AssignedDevicesKey   = "volcano.sh/vgpu-ids-new"
	DevicesToAllocateKey = "volcano.sh/devices-to-allocate"
	BindPhaseKey         = "volcano.sh/bind-phase"
	BindTimeKey          = "volcano.sh/bind-time"
	// Released is the vgpu-time the plugin writes once a pod is done: MaxUint64.
	Released = "18446744073709551615"
)

// Default resource names of the device ConfigMap both upstream halves ship.
const (
	CountResource  = "volcano.sh/vgpu-number"
	MemoryResource = "volcano.sh/vgpu-memory"
	CoresResource  = "volcano.sh/vgpu-cores"
)

// Device is one entry of a pod assignment (vgpu-ids-new, devices-to-allocate) as upstream
// splits it.
type Device struct {
	ID        string
	Type      string
	UsedMem   int32
	UsedCores int32
}

// DecodePodDevices splits an assignment the way both upstream halves do: containers on ";",
// devices on ":", fields on ","; a piece without a comma (the empty piece after the last
// ":") is no device. A device with fewer than four fields, or a number that does not parse,
// is an error. An empty value is a pod without entries.
func DecodePodDevices(value string) ([][]Device, error) {
	if value == "" {
		return nil, nil
	}
	var pd [][]Device
	for c, entry := range strings.Split(value, ";") {
		var devices []Device
		for _, piece := range strings.Split(entry, ":") {
			if !strings.Contains(piece, ",") {
				continue
			}
			f := strings.Split(piece, ",")
			if len(f) < 4 {
				return nil, fmt.Errorf("container %d device %q: %d fields, want 4", c, piece, len(f))
			}
			mem, err := strconv.ParseInt(f[2], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("container %d device %q: memory: %v", c, piece, err)
			}
			cores, err := strconv.ParseInt(f[3], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("container %d device %q: cores: %v", c, piece, err)
			}
			devices = append(devices, Device{ID: f[0], Type: f[1], UsedMem: int32(mem), UsedCores: int32(cores)})
		}
		pd = append(pd, devices)
	}
	return pd, nil
}

// EncodePodDevices writes an assignment back as upstream does: per device
// "id,type,mem,cores:", containers joined with ";".
func EncodePodDevices(pd [][]Device) string {
	entries := make([]string, len(pd))
	for i, devices := range pd {
		var b strings.Builder
		for _, d := range devices {
			fmt.Fprintf(&b, "%s,%s,%d,%d:", d.ID, d.Type, d.UsedMem, d.UsedCores)
		}
		entries[i] = b.String()
	}
	return strings.Join(entries, ";")
}

// NodeGPU is one GPU of a register annotation as upstream schedulers read it.
type NodeGPU struct {
	// Index is the GPU's position in the list: the scheduler's id for it.
	Index  int
	UUID   string
	Count  int32
	Devmem int32
	Type   string
	Health bool
	// Mode is "mig" or "hami-core" (anything else reads as hami-core).
	Mode string
}

// DecodeNodeDevices reads a register annotation the way Volcano v1.12 and later do: split on
// ":", skip pieces without a comma, split on ","; a piece with fewer than six fields rejects
// the whole node. Numbers and the health field that do not parse are errors too.
func DecodeNodeDevices(value string) ([]NodeGPU, error) {
	var gpus []NodeGPU
	for i, piece := range strings.Split(value, ":") {
		if !strings.Contains(piece, ",") {
			continue
		}
		f := strings.Split(piece, ",")
		if len(f) < 6 {
			return nil, fmt.Errorf("GPU %q: %d fields, want 6: the whole node is rejected", piece, len(f))
		}
		count, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("GPU %q: count: %v", piece, err)
		}
		devmem, err := strconv.ParseInt(f[2], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("GPU %q: memory: %v", piece, err)
		}
		health, err := strconv.ParseBool(f[4])
		if err != nil {
			return nil, fmt.Errorf("GPU %q: health: %v", piece, err)
		}
		mode := "hami-core"
		if f[5] == "mig" {
			mode = "mig"
		}
		gpus = append(gpus, NodeGPU{Index: i, UUID: f[0], Count: int32(count), Devmem: int32(devmem), Type: f[3], Health: health, Mode: mode})
	}
	return gpus, nil
}
