// Package assignment hands each container the device assignment the
// scheduler made, answering the kubelet's Allocate calls. Kubelet names only fake device IDs, so the vgpu-number
// allocator (VGPU) finds the pod and container being admitted from the
// pods on this node, their assignment annotations and the kubelet's own
// list of the pods it admits (package podresources), hands the container
// its GPUs and HAMi-core limits (environment and mounts), and records on
// the pod that the container was served. The memory and cores servers use
// CountRequired, which refuses a container that asks for vGPU memory or
// cores without a vGPU count, something no allocator would otherwise
// notice.
package assignment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/hook"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// DefaultHookPath is the host directory that holds HAMi-core's library and
// the ld.so.preload file naming it; the device plugin's container mounts it
// at the same path.
const DefaultHookPath = "/usr/local/vgpu"

// DefaultLockDir is the node-wide directory HAMi-core's processes lock in
// while they find their host PID; every vGPU container shares it. The
// device plugin's container mounts the host's /tmp at /tmp.
const DefaultLockDir = "/tmp/vgpulock"

// DefaultSchedulerName is the scheduler whose pods are served unless told
// otherwise: Volcano's.
const DefaultSchedulerName = "volcano"

// Host files under the hook path.
const (
	hostLibrary = hook.Library
	hostPreload = hook.Preload
)

// ContainerCacheRoot is the host directory holding one cache directory per
// vGPU container, "<podUID>_<container>"; the monitor reads the regions
// HAMi-core writes there.
func ContainerCacheRoot(hookPath string) string {
	return filepath.Join(hookPath, "vgpu", "containers")
}

// ContainerOverrideRoot is the host directory holding one directory per
// vGPU container, named as in ContainerCacheRoot, with the file mounted at
// vgpu.OverrideEnvPath. It is apart from the cache directories because the
// container writes in its own: a file there could be rewritten through
// /tmp/vgpu and would no longer hold the limits.
func ContainerOverrideRoot(hookPath string) string {
	return filepath.Join(hookPath, "vgpu", "overrides")
}

// containerDirName names one container's directory under either root. Pod
// UIDs and container names hold no "_", so the name splits back
// unambiguously.
func containerDirName(podUID, container string) string {
	return podUID + "_" + container
}

// ContainerCacheDir is the host cache directory of one container, mounted
// at vgpu.ContainerCachePath.
func ContainerCacheDir(hookPath, podUID, container string) string {
	return filepath.Join(ContainerCacheRoot(hookPath), containerDirName(podUID, container))
}

// hostOverrideFile is the file of one container mounted at
// vgpu.OverrideEnvPath.
func hostOverrideFile(hookPath, podUID, container string) string {
	return filepath.Join(ContainerOverrideRoot(hookPath), containerDirName(podUID, container), "overrideEnv")
}

// GPULister lists the GPUs the node advertises and their health
// (kubelet.Inventory).
type GPULister interface {
	GPUs() []nvml.GPU
}

// Config is what the allocators need to know about the node.
type Config struct {
	// NodeName is this node: only its pods are considered.
	NodeName string
	// Names are the resource names in use.
	Names vgpu.ResourceNames
	// MemoryFactor is how many MiB one vGPU memory unit is; the same factor
	// the memory resource and the node annotation use.
	MemoryFactor int32
	// MemoryScaling is the node's deviceMemoryScaling in force
	// (settings.Config): the register annotation publishes each GPU's memory
	// scaled by it (vgpu.GPUMemory), and the scheduler books a whole GPU or a
	// percentage of that figure, so assignments are checked against it too.
	// 0 means 1.
	MemoryScaling float64
	// ContextReserves are the device ConfigMap's: a vgpu-memory request may
	// book its GPU model's reserve on top (matchRequest).
	ContextReserves vgpu.ContextReserves
	// HookPath is the host directory with HAMi-core; empty means
	// DefaultHookPath.
	HookPath string
	// LockDir is the host lock directory; empty means DefaultLockDir.
	LockDir string
	// GPUs are the node's GPUs: an assigned device must be one of them and
	// healthy.
	GPUs GPULister
	// SchedulerNames are the schedulers whose pods are served; empty means
	// "volcano". A pod scheduled by anyone else never gets vGPUs, whatever
	// its annotations say.
	SchedulerNames []string
	// AllowDisableControl lets a container that sets CUDA_DISABLE_CONTROL run
	// without HAMi-core (upstream's behaviour). Off, such a container is
	// refused: its limits would not hold.
	AllowDisableControl bool
	// EnvFrom is how a vGPU pod's containers may use envFrom, whose keys
	// could set the same variables; empty means vgpu.EnvFromPrefixed.
	EnvFrom vgpu.EnvFromMode
	// Recorder receives Warning Events on pods whose assignment is refused;
	// nil records none.
	Recorder record.EventRecorder
	// KubeletPods tells which pods the kubelet admits and which of their
	// containers hold vGPUs (podresources.Client): only a container the
	// kubelet holds without vGPUs can be the one an Allocate is for
	// (consider). It must list only the pods the kubelet admits,
	// as kubelets from podresources.MinKubelet do. Nil, or when it fails
	// (the socket not mounted), the earliest bound candidate is served
	// (VGPU.candidates).
	KubeletPods KubeletPods
	// Advertised says when the kubelet last received a device list
	// (kubelet.Inventory.LastAdvertised); nil means never. Without
	// KubeletPods, pods bound before then may have been rejected without an
	// Allocate (VGPU.candidates).
	Advertised func() time.Time
}

// KubeletPods lists the kubelet's active pods and, per container, whether
// it holds devices of resource.
type KubeletPods interface {
	Holdings(ctx context.Context, resource string) (podresources.Holdings, error)
}

func (c *Config) complete() error {
	if c.HookPath == "" {
		c.HookPath = DefaultHookPath
	}
	if c.LockDir == "" {
		c.LockDir = DefaultLockDir
	}
	if len(c.SchedulerNames) == 0 {
		c.SchedulerNames = []string{DefaultSchedulerName}
	}
	if c.Recorder == nil {
		c.Recorder = &record.FakeRecorder{}
	}
	if c.Advertised == nil {
		c.Advertised = func() time.Time { return time.Time{} }
	}
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is empty"))
	}
	if c.Names.Count == "" {
		errs = append(errs, errors.New("vGPU count resource name is empty"))
	}
	if c.MemoryFactor < 1 {
		errs = append(errs, fmt.Errorf("memory factor %d: want at least 1", c.MemoryFactor))
	}
	if s := c.MemoryScaling; s != 0 && !(s > 0 && !math.IsInf(s, 1)) {
		errs = append(errs, fmt.Errorf("memory scaling %g: want a number above 0", s))
	}
	if c.GPUs == nil {
		errs = append(errs, errors.New("no GPU lister"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("allocate config: %w", err)
	}
	return nil
}

// gpuMemory is the memory gpu publishes, in units of MemoryFactor MiB: what
// the scheduler books a whole GPU and percentages of.
func (c Config) gpuMemory(gpu nvml.GPU) int32 {
	return vgpu.GPUMemory(gpu.MemoryMiB, c.memoryScaling(), c.MemoryFactor)
}

// gpuMiB is the memory gpu publishes in MiB, not rounded to a unit: the
// limit of a container that books the whole GPU as 0.
func (c Config) gpuMiB(gpu nvml.GPU) int64 {
	return int64(vgpu.GPUMemory(gpu.MemoryMiB, c.memoryScaling(), 1))
}

func (c Config) memoryScaling() float64 {
	if c.MemoryScaling == 0 {
		return 1
	}
	return c.MemoryScaling
}
