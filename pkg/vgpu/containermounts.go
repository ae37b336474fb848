package vgpu

import (
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Paths in a vGPU container. vgpu-device-plugin's Allocate answer mounts them all;
// HAMi-core, loaded into every process through the preload file, reads the last. The
// kubelet passes the pod's own volume mounts to the runtime after the device plugin's, and a
// runtime applies the later of two mounts at one path, so a pod that mounted a volume at one
// of them would choose whether HAMi-core runs and with which limits: CheckMounts refuses it.
const (
	// ContainerPreloadPath is the preload file: ld.so loads the library it names into every
	// dynamically linked process of the container.
	ContainerPreloadPath = "/etc/ld.so.preload"
	// ContainerLibraryPath is HAMi-core's library. The preload file names it, and HAMi-core
	// opens itself again from this path to answer CUDA lookups.
	ContainerLibraryPath = "/usr/local/vgpu/libvgpu.so"
	// ContainerCachePath is the folder of the container's shared region (EnvSharedCache),
	// which the device plugin's monitor reads from the host.
	ContainerCachePath = "/tmp/vgpu"
	// ContainerLockPath is the folder HAMi-core's processes on the node lock in while they
	// find their host PID; every vGPU container shares it.
	ContainerLockPath = "/tmp/vgpulock"
	// OverrideEnvPath is a file of KEY=VALUE lines that HAMi-core sets as environment
	// variables over the process's own (OverrideEnv). At the commit
	// build/Dockerfile.vgpu-device-plugin pins it reads the file only when NVML starts,
	// after it has read the limits: the file then reaches the process's children, not its
	// limits. The Dockerfile's build/hami-core-override-env.sh makes it read the file before
	// the limits, in every process (docs/gpu-limits-override.md).
	OverrideEnvPath = "/overrideEnv"
)

// hamiCorePaths are the paths through which HAMi-core is loaded or given its limits. A
// pod's mount at one, inside one, or at a folder above one is refused: a mount above hides
// it wherever the runtime applies the folder's mount after the file's. The chart's admission
// policy repeats this list and hamiCoreFolders (CEL cannot import them):
// TestChartPolicyListsTheMountPaths keeps them equal, and TestChartPolicyRefusesTheSameMounts
// has the API server's CEL compiler evaluate the policy against CheckMounts.
var hamiCorePaths = []string{ContainerPreloadPath, ContainerLibraryPath, path.Dir(ContainerLibraryPath), OverrideEnvPath}

// hamiCoreFolders are the folders HAMi-core shares with the node: the shared region's and the
// lock's. A mount at or inside one is refused; a mount above them is not: that is /tmp, where
// many pods mount scratch space, and hiding these folders would lose the monitor's view of
// the container and the node-wide lock, not the limits.
var hamiCoreFolders = []string{ContainerCachePath, ContainerLockPath}

// MountRefusal is why a vGPU pod's volume mount is refused. The chart's admission policy
// builds the same text in CEL, so a pod author reads the same words from either layer.
type MountRefusal struct {
	Namespace, Pod string
	Kind           ContainerKind
	Container      string
	// Volume is the mounted volume's name and MountPath where the container mounts it.
	Volume, MountPath string
	// Over is the HAMi-core path the mount would hide or replace; empty when the mount path
	// climbs with "..".
	Over string
}

// mountReason ends MountRefusal's messages.
const mountReason = "a vGPU pod may not hide or replace the paths that load HAMi-core and carry its limits and usage; vgpu-device-plugin and HAMi-core own them"

func (r *MountRefusal) Error() string {
	// Quoted as the admission policy's CEL quotes them: no escapes.
	text := containerWho(r.Namespace, r.Pod, r.Kind, r.Container) + ` mounts volume "` + r.Volume + `" at "` + r.MountPath + `"`
	if r.Over == "" {
		return text + `, a path with "..": ` + mountReason
	}
	return text + ", over " + r.Over + ": " + mountReason
}

// CheckMounts refuses a vGPU pod any of whose containers mounts a volume over a HAMi-core
// path (mountOver): the first such mount, in the order the admission policy finds it. The
// error is a *MountRefusal.
func CheckMounts(pod *corev1.Pod) error {
	for _, c := range podContainers(pod) {
		for _, m := range c.mounts {
			if over, refused := mountOver(m.MountPath); refused {
				return &MountRefusal{Namespace: pod.Namespace, Pod: pod.Name, Kind: c.kind, Container: c.name,
					Volume: m.Name, MountPath: m.MountPath, Over: over}
			}
		}
	}
	return nil
}

// mountOver says whether a mount at mountPath is refused, and which HAMi-core path it would
// hide or replace. The kubelet makes a relative mount path absolute, and the runtime drops
// empty and "." parts, as done here; a path with ".." is refused whatever it reaches, since
// CEL cannot resolve it and no pod needs it.
func mountOver(mountPath string) (over string, refused bool) {
	parts := slices.DeleteFunc(strings.Split(mountPath, "/"), func(p string) bool { return p == "" || p == "." })
	if slices.Contains(parts, "..") {
		return "", true
	}
	at := "/" + strings.Join(parts, "/")
	for _, p := range hamiCorePaths {
		if at == p || inside(at, p) || inside(p, at) {
			return p, true
		}
	}
	for _, p := range hamiCoreFolders {
		if at == p || inside(at, p) {
			return p, true
		}
	}
	return "", false
}

// inside says whether the absolute path p lies below the folder dir.
func inside(p, dir string) bool {
	return p != dir && (dir == "/" || strings.HasPrefix(p, dir+"/"))
}
