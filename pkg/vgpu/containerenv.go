package vgpu

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The environment of a vGPU container. The device plugin's Allocate answer sets the GPUs and
// HAMi-core's limits through it, and HAMi-core (loaded into every process of the container)
// reads them when CUDA starts. The kubelet lays the pod spec's own env over that answer, so a
// pod author who sets one of these would choose their own slice: they are the control
// variables (IsControlEnv), which only the device plugin may set. The names below are those
// HAMi-core reads at the commit build/Dockerfile.vgpu-device-plugin pins (the others it reads,
// CUDA_VISIBLE_DEVICES, CUDA_TASK_PRIORITY, ACTIVE_OOM_KILLER, RECORD_KERNEL_INTERVAL and
// LIBCUDA_LOG_LEVEL, lift no limit), the NVIDIA container runtime's, and two that device
// plugins act on.
const (
	// EnvVisibleDevices makes the NVIDIA container runtime inject the GPUs.
	EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	// EnvDriverCapabilities chooses the driver libraries and tools the runtime injects.
	EnvDriverCapabilities = "NVIDIA_DRIVER_CAPABILITIES"
	// EnvMemoryLimit limits every device that has no limit of its own (MemoryLimitEnv); a
	// device with neither is reported by HAMi-core as having no memory.
	EnvMemoryLimit = "CUDA_DEVICE_MEMORY_LIMIT"
	// EnvSMLimit is the compute share in percent of every device that has no share of its own
	// (EnvSMLimit + "_<i>", which HAMi-core prefers); 0 means none.
	EnvSMLimit = "CUDA_DEVICE_SM_LIMIT"
	// EnvSharedCache is the file the container's processes share their usage through.
	EnvSharedCache = "CUDA_DEVICE_MEMORY_SHARED_CACHE"
	// EnvOversubscribe lets device memory spill to host memory; upstream's device plugin
	// sets it where deviceMemoryScaling is above 1. The pinned HAMi-core does not read it,
	// other builds do, so it stays reserved.
	EnvOversubscribe = "CUDA_OVERSUBSCRIBE"
	// EnvDisableControl in a container's spec (any value) asks for no HAMi-core: the device
	// plugin leaves the preload out, where the operator allows it. HAMi-core itself does not
	// read it.
	EnvDisableControl = "CUDA_DISABLE_CONTROL"
	// EnvUtilizationPolicy "DISABLE" turns HAMi-core's compute limit off.
	EnvUtilizationPolicy = "GPU_CORE_UTILIZATION_POLICY"
	// EnvRedirect names the library HAMi-core's dlsym hook looks CUDA functions up in:
	// pointed at the driver's libcuda, it hands out functions that enforce nothing. HAMi-core
	// reads it before /overrideEnv, so the file cannot pin it; the Dockerfile's
	// build/hami-core-fixed-library.sh makes HAMi-core ignore it (ContainerLibraryPath always).
	// It stays refused for the HAMi-core builds that still read it.
	EnvRedirect = "CUDA_REDIRECT"
	// EnvPreload loads libraries ahead of those /etc/ld.so.preload names (HAMi-core), which
	// can then shadow its hooks.
	EnvPreload = "LD_PRELOAD"
)

// MemoryLimitEnv is the variable that limits the container's i-th device.
func MemoryLimitEnv(i int) string {
	return EnvMemoryLimit + "_" + strconv.Itoa(i)
}

// SMLimitEnv is the compute share of the container's i-th device. HAMi-core prefers it to
// EnvSMLimit, so an image's own ENV of this name would override a share given only through
// EnvSMLimit: the device plugin sets both.
func SMLimitEnv(i int) string {
	return EnvSMLimit + "_" + strconv.Itoa(i)
}

// OverrideEnv is the file the device plugin mounts at OverrideEnvPath, built from the
// environment its Allocate answer gives a container: the variables HAMi-core reads (the
// control variables but the NVIDIA container runtime's), one KEY=VALUE line each, sorted.
// HAMi-core, built with build/hami-core-override-env.sh, sets them from the file over the
// process's own environment before it reads its limits, so a process that exports another
// limit before its first CUDA call still gets the answer's. The answer always holds a memory
// limit, so the file is never empty (HAMi-core's reader misparses an empty file); its values
// are numbers and paths, never a newline. A variable HAMi-core reads that the answer leaves
// unset is pinned to HAMi-core's default (overrideDefaults), so that the process cannot set
// it either.
func OverrideEnv(envs map[string]string) []byte {
	lines := map[string]string{}
	for k, v := range overrideDefaults {
		lines[k] = v
	}
	for k, v := range envs {
		if IsControlEnv(k, false) && k != EnvVisibleDevices && k != EnvDriverCapabilities {
			lines[k] = v
		}
	}
	keys := slices.Sorted(maps.Keys(lines))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + lines[k] + "\n")
	}
	return []byte(b.String())
}

// overrideDefaults are the values the override file gives what HAMi-core reads and an Allocate
// answer does not set: a process that exported GPU_CORE_UTILIZATION_POLICY=DISABLE would run
// without its compute limit; any value but FORCE or DISABLE is HAMi-core's default policy.
var overrideDefaults = map[string]string{EnvUtilizationPolicy: "DEFAULT"}

// controlEnvNames are the control variables spelled out; the numbered per-device ones are
// matched by numberedControlEnv. The chart's admission policy repeats this list (CEL cannot
// import it); TestChartPolicyListsTheControlVariables keeps the two equal.
var controlEnvNames = []string{
	EnvMemoryLimit, EnvSMLimit, EnvSharedCache, EnvOversubscribe, EnvDisableControl,
	EnvUtilizationPolicy, EnvRedirect, EnvPreload, EnvVisibleDevices, EnvDriverCapabilities,
}

// ControlEnvNames returns the control variables other than the numbered per-device ones
// (NumberedControlEnvPattern).
func ControlEnvNames() []string { return slices.Clone(controlEnvNames) }

// numberedEnvRoots are the control variables HAMi-core also reads per device, with "_<i>".
const numberedEnvRoots = "(" + EnvMemoryLimit + "|" + EnvSMLimit + ")_"

// NumberedControlEnvPattern matches the per-device control variables. Any decimal suffix
// counts, not only those HAMi-core reads (0 to 15): refusing a name it ignores costs nothing.
const NumberedControlEnvPattern = "^" + numberedEnvRoots + "[0-9]+$"

// NumberedPrefixPattern matches an envFrom prefix that a key of digits completes into a
// per-device control variable (EnvFromPrefixSafe).
const NumberedPrefixPattern = "^" + numberedEnvRoots + "[0-9]*$"

var (
	numberedControlEnv = regexp.MustCompile(NumberedControlEnvPattern)
	numberedPrefix     = regexp.MustCompile(NumberedPrefixPattern)
)

// IsControlEnv says whether a container may not set name in a vGPU pod. EnvDisableControl is
// one unless allowDisableControl (vgpu-device-plugin --allow-disable-control).
func IsControlEnv(name string, allowDisableControl bool) bool {
	if name == EnvDisableControl {
		return !allowDisableControl
	}
	return slices.Contains(controlEnvNames, name) || numberedControlEnv.MatchString(name)
}

// EnvFromPrefixSafe says whether no key of an envFrom source with this prefix can make a
// control variable: the prefix is not empty, no control variable starts with it, and no digits
// after it make a per-device one. Keys are the ConfigMap's or Secret's, which neither the
// admission policy nor the device plugin reads. EnvDisableControl counts even where it is
// allowed: one rule for every cluster.
func EnvFromPrefixSafe(prefix string) bool {
	if prefix == "" || numberedPrefix.MatchString(prefix) {
		return false
	}
	return !slices.ContainsFunc(controlEnvNames, func(name string) bool { return strings.HasPrefix(name, prefix) })
}

// EnvFromMode is how a vGPU pod's containers may use envFrom (chart value
// admissionPolicy.envFrom, vgpu-device-plugin --env-from).
type EnvFromMode string

const (
	// EnvFromRefuse refuses every envFrom.
	EnvFromRefuse EnvFromMode = "refuse"
	// EnvFromPrefixed refuses an envFrom whose prefix is not EnvFromPrefixSafe.
	EnvFromPrefixed EnvFromMode = "prefixed"
	// EnvFromAllow checks nothing: a key can set a control variable.
	EnvFromAllow EnvFromMode = "allow"
)

// ParseEnvFromMode reads a mode; empty is EnvFromPrefixed.
func ParseEnvFromMode(text string) (EnvFromMode, error) {
	switch m := EnvFromMode(text); m {
	case "":
		return EnvFromPrefixed, nil
	case EnvFromRefuse, EnvFromPrefixed, EnvFromAllow:
		return m, nil
	}
	return "", fmt.Errorf("envFrom mode %s: want %s, %s or %s", quote(text), EnvFromRefuse, EnvFromPrefixed, EnvFromAllow)
}

// String, Set and Type make a mode a command-line flag (pflag.Value).
func (m *EnvFromMode) String() string { return string(*m) }

// Set parses a flag value.
func (m *EnvFromMode) Set(text string) error {
	parsed, err := ParseEnvFromMode(text)
	if err != nil {
		return err
	}
	*m = parsed
	return nil
}

// Type names the flag's values in its help.
func (m *EnvFromMode) Type() string { return "refuse|prefixed|allow" }

// EnvPolicy is what the environment of a vGPU pod's containers may hold.
type EnvPolicy struct {
	// AllowDisableControl lets a container set EnvDisableControl.
	AllowDisableControl bool
	// EnvFrom is the envFrom rule; empty is EnvFromPrefixed.
	EnvFrom EnvFromMode
}

// ContainerKind says which list of the pod spec a container is in, as messages name it.
type ContainerKind string

// The kinds, for spec.containers, spec.initContainers and spec.ephemeralContainers.
const (
	AppContainer       ContainerKind = "container"
	InitContainer      ContainerKind = "init container"
	EphemeralContainer ContainerKind = "ephemeral container"
)

// EnvRefusal is why a vGPU pod's container environment is refused. The chart's admission
// policy builds the same text in CEL, so a pod author reads the same words from either layer.
type EnvRefusal struct {
	Namespace, Pod string
	Kind           ContainerKind
	Container      string
	// Variable is the control variable the container sets in env; empty when the refusal is
	// about envFrom.
	Variable string
	// Source is the envFrom source, `ConfigMap "<name>"` or `Secret "<name>"`, and Prefix its
	// prefix.
	Source, Prefix string
	// Mode is the envFrom rule that refused it.
	Mode EnvFromMode
}

// The reasons of EnvRefusal's messages.
const (
	controlEnvReason = "a vGPU pod may not set the variables that choose its GPUs and HAMi-core's limits; vgpu-device-plugin sets them from the pod's assignment"
	envFromReason    = "its keys could set the variables that choose a vGPU pod's GPUs and HAMi-core's limits"
)

// containerWho names a container of a pod as refusals do.
func containerWho(namespace, pod string, kind ContainerKind, container string) string {
	return fmt.Sprintf("pod %s/%s %s %q", namespace, pod, kind, container)
}

func (r *EnvRefusal) Error() string {
	who := containerWho(r.Namespace, r.Pod, r.Kind, r.Container)
	switch {
	case r.Variable == EnvDisableControl:
		return who + " sets " + EnvDisableControl + ", which turns HAMi-core's limits off; this cluster does not allow it (vgpu-device-plugin --allow-disable-control)"
	case r.Variable != "":
		return who + " sets " + r.Variable + ": " + controlEnvReason
	case r.Mode == EnvFromRefuse:
		return who + " takes env from " + r.Source + ": " + envFromReason +
			", and this cluster refuses envFrom in vGPU pods (admissionPolicy.envFrom, vgpu-device-plugin --env-from: refuse)"
	}
	prefix := "without a prefix"
	if r.Prefix != "" {
		// Quoted as the admission policy's CEL quotes it: no escapes.
		prefix = `with prefix "` + r.Prefix + `"`
	}
	return who + " takes env from " + r.Source + " " + prefix + ": " + envFromReason +
		`; give it a prefix that no such variable starts with, e.g. "APP_" (admissionPolicy.envFrom, vgpu-device-plugin --env-from: prefixed)`
}

// podContainer is one container of a pod spec, of any kind.
type podContainer struct {
	kind    ContainerKind
	name    string
	env     []corev1.EnvVar
	envFrom []corev1.EnvFromSource
	mounts  []corev1.VolumeMount
}

// podContainers lists a pod's containers in the order the admission policy reads them.
func podContainers(pod *corev1.Pod) []podContainer {
	var all []podContainer
	for _, c := range pod.Spec.Containers {
		all = append(all, podContainer{AppContainer, c.Name, c.Env, c.EnvFrom, c.VolumeMounts})
	}
	for _, c := range pod.Spec.InitContainers {
		all = append(all, podContainer{InitContainer, c.Name, c.Env, c.EnvFrom, c.VolumeMounts})
	}
	for _, c := range pod.Spec.EphemeralContainers {
		all = append(all, podContainer{EphemeralContainer, c.Name, c.Env, c.EnvFrom, c.VolumeMounts})
	}
	return all
}

// CheckPod refuses a vGPU pod any of whose containers sets a control variable in env, or uses
// envFrom against the policy: the first such container, env before envFrom, in the order the
// admission policy finds it. The error is an *EnvRefusal.
func (p EnvPolicy) CheckPod(pod *corev1.Pod) error {
	containers := podContainers(pod)
	for _, c := range containers {
		for _, e := range c.env {
			if IsControlEnv(e.Name, p.AllowDisableControl) {
				return &EnvRefusal{Namespace: pod.Namespace, Pod: pod.Name, Kind: c.kind, Container: c.name, Variable: e.Name}
			}
		}
	}
	mode := p.EnvFrom
	if mode == "" {
		mode = EnvFromPrefixed
	}
	if mode == EnvFromAllow {
		return nil
	}
	for _, c := range containers {
		for _, from := range c.envFrom {
			if mode == EnvFromPrefixed && EnvFromPrefixSafe(from.Prefix) {
				continue
			}
			return &EnvRefusal{Namespace: pod.Namespace, Pod: pod.Name, Kind: c.kind, Container: c.name,
				Source: envFromSource(from), Prefix: from.Prefix, Mode: mode}
		}
	}
	return nil
}

// envFromSource names an envFrom source as messages do.
func envFromSource(from corev1.EnvFromSource) string {
	switch {
	case from.ConfigMapRef != nil:
		return fmt.Sprintf("ConfigMap %q", from.ConfigMapRef.Name)
	case from.SecretRef != nil:
		return fmt.Sprintf("Secret %q", from.SecretRef.Name)
	}
	return "an envFrom source"
}
