package assignment

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// containerResponse is what the container gets for its devices: the GPUs,
// HAMi-core's limits, and the mounts that load HAMi-core, give it its
// shared region and set its limits over the container's own environment
// (prepareHost writes that file from the answer's). cacheName names the region file; a new one per Allocate,
// because HAMi-core keeps the limits of the first process that created a
// region, so a file left from an earlier container with the same
// directory would impose that container's limits.
func containerResponse(cfg Config, podUID string, container *corev1.Container, devices vgpu.ContainerDevices, gpus []nvml.GPU, cacheName string) (*pluginapi.ContainerAllocateResponse, error) {
	envs := make(map[string]string, 2*len(devices)+3)
	uuids := make([]string, 0, len(devices))
	for i, d := range devices {
		gpu, err := assignedGPU(cfg.NodeName, d, gpus)
		if err != nil {
			return nil, fmt.Errorf("container %q device %d: %w", container.Name, i, err)
		}
		uuids = append(uuids, d.UUID)
		envs[vgpu.MemoryLimitEnv(i)] = memoryLimit(d, gpu, cfg)
		envs[vgpu.SMLimitEnv(i)] = strconv.Itoa(int(d.UsedCores))
	}
	envs[vgpu.EnvVisibleDevices] = strings.Join(uuids, ",")
	envs[vgpu.EnvSMLimit] = strconv.Itoa(int(devices[0].UsedCores))
	envs[vgpu.EnvSharedCache] = vgpu.ContainerCachePath + "/" + cacheName + ".cache"

	mounts := []*pluginapi.Mount{{
		ContainerPath: vgpu.ContainerLibraryPath,
		HostPath:      filepath.Join(cfg.HookPath, hostLibrary),
		ReadOnly:      true,
	}}
	if !disablesControl(container) {
		mounts = append(mounts, &pluginapi.Mount{
			ContainerPath: vgpu.ContainerPreloadPath,
			HostPath:      filepath.Join(cfg.HookPath, hostPreload),
			ReadOnly:      true,
		})
	}
	mounts = append(mounts,
		&pluginapi.Mount{ContainerPath: vgpu.ContainerCachePath, HostPath: ContainerCacheDir(cfg.HookPath, podUID, container.Name)},
		&pluginapi.Mount{ContainerPath: vgpu.ContainerLockPath, HostPath: cfg.LockDir},
		&pluginapi.Mount{ContainerPath: vgpu.OverrideEnvPath, HostPath: hostOverrideFile(cfg.HookPath, podUID, container.Name), ReadOnly: true},
	)
	return &pluginapi.ContainerAllocateResponse{Envs: envs, Mounts: mounts}, nil
}

// assignedGPU finds the GPU a device was assigned on. A device that is not
// one of the node's GPUs (an assignment made for other hardware, or a MIG
// instance, which this plugin does not hand out) or a GPU that has turned
// unhealthy since it was assigned is refused rather than handed over.
func assignedGPU(node string, d vgpu.ContainerDevice, gpus []nvml.GPU) (nvml.GPU, error) {
	i := slices.IndexFunc(gpus, func(g nvml.GPU) bool { return g.UUID == d.UUID })
	if i < 0 {
		return nvml.GPU{}, fmt.Errorf("assigned GPU %s is not one of the GPUs node %s advertises", d.UUID, node)
	}
	gpu := gpus[i]
	if !gpu.Healthy {
		return nvml.GPU{}, fmt.Errorf("assigned GPU %s is unhealthy (%s)", d.UUID, gpu.UnhealthyReason)
	}
	return gpu, nil
}

// memoryLimit is the device's HAMi-core limit in MiB. An assignment that
// books no memory gets the whole GPU as the node publishes it (its memory
// times deviceMemoryScaling): with no limit at all HAMi-core would report
// the device as having none.
func memoryLimit(d vgpu.ContainerDevice, gpu nvml.GPU, cfg Config) string {
	mib := int64(d.UsedMemory) * int64(cfg.MemoryFactor)
	if mib == 0 {
		mib = cfg.gpuMiB(gpu)
	}
	return strconv.FormatInt(mib, 10) + "m"
}

// disablesControl says whether the container asks to run without HAMi-core
// (vgpu.EnvDisableControl); Allocate serves it only where the operator allows
// that (vgpu.EnvPolicy).
func disablesControl(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == vgpu.EnvDisableControl })
}

// prepareHost checks that HAMi-core is installed and creates the
// directories the mounts need: a missing cache directory makes every CUDA
// process in the container exit (or crash). The container's directory is
// created if missing and never emptied: it may be in use by a running
// container of the same pod and name (a restart), and its old region file
// is harmless, since the new one gets a new name. Both directories are
// world-writable because the container's processes may run as any user:
// the image's USER is unknown here and runAsUser optional, and user
// namespaces map container uids to other host uids. No sticky bit either:
// HAMi-core opens the region with O_CREAT from every process, and with
// fs.protected_regular (on by default under systemd) such an open of a file
// another uid created in a world-writable sticky directory fails (EACCES),
// so a container running processes as two users would lose its limits. The
// only writers of the cache directory are the container's own processes;
// what they plant there (FIFOs, links) is the monitor's to refuse, and it
// reads the directory as hostile input.
//
// Last it writes the container's override file (vgpu.OverrideEnv of envs,
// the answer's environment) under a new name and renames it into place: a
// running container of the same pod and name keeps the file it mounted,
// whose limits and region name match its environment. The file and its
// directory are the plugin's, readable by every user and writable by none
// of the container's.
func prepareHost(cfg Config, podUID string, container *corev1.Container, envs map[string]string) error {
	required := []string{filepath.Join(cfg.HookPath, hostLibrary)}
	if !disablesControl(container) {
		required = append(required, filepath.Join(cfg.HookPath, hostPreload))
	}
	for _, path := range required {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("HAMi-core is not installed on the node: %w", err)
		}
	}
	for _, dir := range []string{ContainerCacheDir(cfg.HookPath, podUID, container.Name), cfg.LockDir} {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return fmt.Errorf("make %s writable for every user: %w", dir, err)
		}
	}
	return writeOverrideFile(hostOverrideFile(cfg.HookPath, podUID, container.Name), vgpu.OverrideEnv(envs))
}

// writeOverrideFile puts content at path, world-readable, replacing what
// was there in one rename.
func writeOverrideFile(path string, content []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("make %s readable for every user: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".overrideEnv-*")
	if err != nil {
		return fmt.Errorf("write the override file in %s: %w", dir, err)
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write the override file %s: %w", path, err)
	}
	return nil
}
