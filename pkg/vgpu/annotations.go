package vgpu

import (
	"fmt"
	"strconv"
	"time"
)

// Node annotations.
const (
	// NodeDevicesAnnotation holds the node's GPUs as written by the device plugin
	// (EncodeNodeDevices).
	NodeDevicesAnnotation = "volcano.sh/node-vgpu-register"
	// NodeHandshakeAnnotation is the liveness handshake between device plugin and scheduler
	// that Volcano v1.9 to v1.14.2 and v1.15.0 require (see handshake.go).
	NodeHandshakeAnnotation = "volcano.sh/node-vgpu-handshake"
	// NodeLockAnnotation is the node lock the scheduler takes before assigning devices when
	// deviceshare.NodeLockEnable is set, and the device plugin removes after Allocate. The key
	// really has no prefix: upstream uses the device name as the key. Its value is written by
	// NodeLockValue and read by NodeLockHeld (nodelock.go).
	NodeLockAnnotation = "hamivgpu"
	// NodeMemoryFactorAnnotation is the MiB in one unit of vgpu-memory on the node, written
	// by our device plugin next to NodeDevicesAnnotation (FormatMemoryFactor). Units are all
	// the scheduler otherwise sees of a node's memory; it needs MiB only to turn a context
	// reserve (ContextReserve) into units where a device plugin chose the factor itself
	// (gpuMemoryFactor 0). Upstream components neither write nor read it.
	NodeMemoryFactorAnnotation = "volcano.sh/node-vgpu-memory-factor"
)

// Pod annotations written by the scheduler when it assigns devices.
const (
	// AssignedNodeAnnotation is the node the devices were assigned on.
	AssignedNodeAnnotation = "volcano.sh/vgpu-node"
	// AssignedTimeAnnotation is when they were assigned, in Unix seconds. The device plugin
	// serves the oldest pending pod first and sets it to AssignedTimeReleased when done.
	AssignedTimeAnnotation = "volcano.sh/vgpu-time"
	// AssignedDevicesAnnotation is the full assignment (PodDevices.Encode); the scheduler
	// rebuilds its GPU ledgers from it and nobody rewrites it.
	AssignedDevicesAnnotation = "volcano.sh/vgpu-ids-new"
	// DevicesToAllocateAnnotation starts equal to AssignedDevicesAnnotation; the device plugin
	// empties one container entry per Allocate call (PodDevices.EraseContainer).
	DevicesToAllocateAnnotation = "volcano.sh/devices-to-allocate"
	// BindPhaseAnnotation tracks the hand-off: BindPhaseAllocating from the scheduler, then
	// BindPhaseSuccess or BindPhaseFailed from the device plugin.
	BindPhaseAnnotation = "volcano.sh/bind-phase"
	// BindTimeAnnotation is when the scheduler bound the pod, in Unix seconds.
	BindTimeAnnotation = "volcano.sh/bind-time"
)

// Values of BindPhaseAnnotation.
const (
	BindPhaseAllocating = "allocating"
	BindPhaseSuccess    = "success"
	BindPhaseFailed     = "failed"
)

// AssignedTimeReleased is the AssignedTimeAnnotation value the device plugin writes once a pod
// is served (or failed): MaxUint64, so the pod sorts last in every "oldest pending" search.
const AssignedTimeReleased = "18446744073709551615"

// Pod annotations users set to steer device choice.
const (
	// ModeAnnotation pins the pod to nodes whose GPUs run in that mode (ModeHAMiCore, ModeMIG).
	ModeAnnotation = "volcano.sh/vgpu-mode"
	// UseGPUTypeAnnotation is a comma-separated list; a GPU qualifies only if its type contains
	// one of them (case-insensitive).
	UseGPUTypeAnnotation = "nvidia.com/use-gputype"
	// NoUseGPUTypeAnnotation is a comma-separated list of GPU types to avoid; it is consulted
	// only when UseGPUTypeAnnotation is absent.
	NoUseGPUTypeAnnotation = "nvidia.com/nouse-gputype"
	// UseGPUUUIDAnnotation is a comma-separated allow-list of GPU UUIDs (exact match).
	UseGPUUUIDAnnotation = "volcano.sh/vgpu-use-gpuuuid"
	// NoUseGPUUUIDAnnotation is a comma-separated deny-list of GPU UUIDs; it wins over the
	// allow-list.
	NoUseGPUUUIDAnnotation = "volcano.sh/vgpu-nouse-gpuuuid"
	// PodGroupPolicyAnnotation set to PodGroupPolicySpread keeps the pods of one PodGroup on
	// different GPUs.
	PodGroupPolicyAnnotation = "volcano.sh/vgpu-podgroup-policy"
	PodGroupPolicySpread     = "spread"
)

// Sharing modes of a GPU, published per GPU in NodeDevicesAnnotation and set per node in
// config.json.
const (
	// ModeHAMiCore shares a GPU through HAMi-core's memory and compute limits.
	ModeHAMiCore = "hami-core"
	// ModeMIG shares a GPU by partitioning it into MIG instances on demand.
	ModeMIG = "mig"
	// ModeMPS is published by newer upstream plugins; the scheduler treats it like
	// ModeHAMiCore.
	ModeMPS = "mps"
)

// DeviceTypeNVIDIA is the device type in pod assignments. Node GPUs carry
// DeviceTypeForModel(model) instead, which contains it.
const DeviceTypeNVIDIA = "NVIDIA"

// DeviceTypeForModel is the type the device plugin publishes for a GPU whose NVML name is
// model, e.g. "NVIDIA-NVIDIA H200".
func DeviceTypeForModel(model string) string {
	return DeviceTypeNVIDIA + "-" + model
}

// ConfigMaps the two programs read.
const (
	DeviceConfigMapName = "volcano-vgpu-device-config"
	DeviceConfigKey     = "device-config.yaml"
	NodeConfigMapName   = "volcano-vgpu-node-config"
	NodeConfigKey       = "config.json"
	// DefaultConfigNamespace is where both ConfigMaps live unless configured otherwise.
	DefaultConfigNamespace = "kube-system"
	// FallbackConfigNamespace is where the upstream device plugin looks when the device
	// ConfigMap is not in DefaultConfigNamespace.
	FallbackConfigNamespace = "volcano-system"
)

// FormatUnixSeconds renders t the way AssignedTimeAnnotation and BindTimeAnnotation carry it.
func FormatUnixSeconds(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10)
}

// ParseUnixSeconds reads an AssignedTimeAnnotation or BindTimeAnnotation value.
// AssignedTimeReleased parses to math.MaxUint64.
func ParseUnixSeconds(value string) (uint64, error) {
	if !isDigits(value) {
		return 0, fmt.Errorf("unix time %s: want decimal seconds", quote(value))
	}
	seconds, err := strconv.ParseUint(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unix time %s: out of range", quote(value))
	}
	return seconds, nil
}
