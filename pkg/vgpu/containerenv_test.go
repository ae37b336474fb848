package vgpu

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsControlEnv(t *testing.T) {
	control := []string{
		"CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_MEMORY_LIMIT_15", "CUDA_DEVICE_MEMORY_LIMIT_007",
		"CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_SM_LIMIT_1", "CUDA_DEVICE_MEMORY_SHARED_CACHE", "CUDA_OVERSUBSCRIBE",
		"CUDA_DISABLE_CONTROL", "GPU_CORE_UTILIZATION_POLICY", "CUDA_REDIRECT", "LD_PRELOAD",
		"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
	}
	ordinary := []string{
		"", "PATH", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_DEVICE_MEMORY_LIMIT_", "CUDA_DEVICE_MEMORY_LIMIT_X",
		"CUDA_DEVICE_MEMORY_LIMIT0", "CUDA_DEVICE_SM_LIMIT_1a", "cuda_device_sm_limit", "LD_PRELOAD_PATH", "NVIDIA_REQUIRE_CUDA",
		"XCUDA_DEVICE_SM_LIMIT",
	}
	for _, name := range control {
		if !IsControlEnv(name, false) {
			t.Errorf("IsControlEnv(%q) = false, want true", name)
		}
		if allowed := name == EnvDisableControl; IsControlEnv(name, true) == allowed {
			t.Errorf("IsControlEnv(%q) with CUDA_DISABLE_CONTROL allowed = %t, want %t", name, !allowed, allowed)
		}
	}
	for _, name := range ordinary {
		if IsControlEnv(name, false) {
			t.Errorf("IsControlEnv(%q) = true, want false", name)
		}
	}
}

func TestEnvFromPrefixSafe(t *testing.T) {
	unsafe := []string{
		"", "C", "CUDA_", "CUDA_DEVICE_", "CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_",
		"CUDA_DEVICE_MEMORY_LIMIT_1", "CUDA_DEVICE_SM_LIMIT_12", "CUDA_DIS", "G", "LD_", "LD_PRELOAD", "NVIDIA_",
	}
	safe := []string{"APP_", "MY_CUDA_", "CUDA_DEVICE_MEMORY_LIMIT_X", "CUDA_DEVICE_MEMORY_LIMIT_1_", "LD_PRELOAD_", "cuda_", "_"}
	for _, p := range unsafe {
		if EnvFromPrefixSafe(p) {
			t.Errorf("EnvFromPrefixSafe(%q) = true, want false", p)
		}
	}
	for _, p := range safe {
		if !EnvFromPrefixSafe(p) {
			t.Errorf("EnvFromPrefixSafe(%q) = false, want true", p)
		}
	}
}

// No key after a prefix EnvFromPrefixSafe accepts makes a control variable: keys are every
// tail of every control variable and digit strings, prefixes every head of them and more.
func TestEnvFromPrefixSafeHoldsForEveryKey(t *testing.T) {
	names := append(ControlEnvNames(), MemoryLimitEnv(3), SMLimitEnv(12))
	var keys, prefixes []string
	for _, name := range names {
		for i := 0; i <= len(name); i++ {
			keys, prefixes = append(keys, name[i:]), append(prefixes, name[:i], name[:i]+"X")
		}
	}
	for i := range 120 {
		keys = append(keys, strconv.Itoa(i), "_"+strconv.Itoa(i))
	}
	prefixes = append(prefixes, "APP_", "CUDA_DEVICE_MEMORY_LIMIT_X", "LD_PRELOAD_")
	for _, p := range prefixes {
		if !EnvFromPrefixSafe(p) {
			continue
		}
		for _, k := range keys {
			if k != "" && IsControlEnv(p+k, false) {
				t.Errorf("prefix %q is taken as safe, but key %q makes %s", p, k, p+k)
			}
		}
	}
}

func TestParseEnvFromMode(t *testing.T) {
	for text, want := range map[string]EnvFromMode{"": EnvFromPrefixed, "refuse": EnvFromRefuse, "prefixed": EnvFromPrefixed, "allow": EnvFromAllow} {
		if got, err := ParseEnvFromMode(text); err != nil || got != want {
			t.Errorf("ParseEnvFromMode(%q) = %q, %v; want %q", text, got, err, want)
		}
	}
	for _, text := range []string{"Prefixed", "deny", " allow"} {
		if _, err := ParseEnvFromMode(text); err == nil || !strings.Contains(err.Error(), "want refuse, prefixed or allow") {
			t.Errorf("ParseEnvFromMode(%q): %v, want a refusal naming the modes", text, err)
		}
	}
}

// envPod is a pod whose container "main", init container "setup" and ephemeral container
// "debug" are edited by edit.
func envPod(edit func(main, setup *corev1.Container, debug *corev1.EphemeralContainer)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			Containers:          []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "HOME", Value: "/root"}}}},
			InitContainers:      []corev1.Container{{Name: "setup"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
		},
	}
	if edit != nil {
		edit(&pod.Spec.Containers[0], &pod.Spec.InitContainers[0], &pod.Spec.EphemeralContainers[0])
	}
	return pod
}

func setEnv(name string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "OK", Value: "1"}, {Name: name, Value: "0"}}
}

// The messages, word for word: the chart's admission policy builds the same text in CEL
// (TestChartPolicyMessages), and docs/bad-input.md quotes them.
func TestEnvRefusalMessages(t *testing.T) {
	tests := []struct {
		name   string
		policy EnvPolicy
		pod    *corev1.Pod
		want   string
	}{{
		name: "a control variable in a container",
		pod:  envPod(func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) { m.Env = setEnv("CUDA_DEVICE_SM_LIMIT") }),
		want: `pod ns/p container "main" sets CUDA_DEVICE_SM_LIMIT: a vGPU pod may not set the variables that choose its GPUs and HAMi-core's limits; vgpu-device-plugin sets them from the pod's assignment`,
	}, {
		name: "in an init container",
		pod: envPod(func(_, s *corev1.Container, _ *corev1.EphemeralContainer) {
			s.Env = setEnv("CUDA_DEVICE_MEMORY_LIMIT_0")
		}),
		want: `pod ns/p init container "setup" sets CUDA_DEVICE_MEMORY_LIMIT_0: a vGPU pod may not set the variables that choose its GPUs and HAMi-core's limits; vgpu-device-plugin sets them from the pod's assignment`,
	}, {
		name: "in an ephemeral container",
		pod:  envPod(func(_, _ *corev1.Container, d *corev1.EphemeralContainer) { d.Env = setEnv("LD_PRELOAD") }),
		want: `pod ns/p ephemeral container "debug" sets LD_PRELOAD: a vGPU pod may not set the variables that choose its GPUs and HAMi-core's limits; vgpu-device-plugin sets them from the pod's assignment`,
	}, {
		name: "CUDA_DISABLE_CONTROL",
		pod:  envPod(func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) { m.Env = setEnv("CUDA_DISABLE_CONTROL") }),
		want: `pod ns/p container "main" sets CUDA_DISABLE_CONTROL, which turns HAMi-core's limits off; this cluster does not allow it (vgpu-device-plugin --allow-disable-control)`,
	}, {
		name: "envFrom without a prefix",
		pod: envPod(func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) {
			m.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		}),
		want: `pod ns/p container "main" takes env from ConfigMap "settings" without a prefix: its keys could set the variables that choose a vGPU pod's GPUs and HAMi-core's limits; give it a prefix that no such variable starts with, e.g. "APP_" (admissionPolicy.envFrom, vgpu-device-plugin --env-from: prefixed)`,
	}, {
		name: "envFrom with a prefix a digit completes",
		pod: envPod(func(_, s *corev1.Container, _ *corev1.EphemeralContainer) {
			s.EnvFrom = []corev1.EnvFromSource{{Prefix: "CUDA_DEVICE_MEMORY_LIMIT_1", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "limits"}}}}
		}),
		want: `pod ns/p init container "setup" takes env from Secret "limits" with prefix "CUDA_DEVICE_MEMORY_LIMIT_1": its keys could set the variables that choose a vGPU pod's GPUs and HAMi-core's limits; give it a prefix that no such variable starts with, e.g. "APP_" (admissionPolicy.envFrom, vgpu-device-plugin --env-from: prefixed)`,
	}, {
		name:   "envFrom where it is refused",
		policy: EnvPolicy{EnvFrom: EnvFromRefuse},
		pod: envPod(func(_, _ *corev1.Container, d *corev1.EphemeralContainer) {
			d.EnvFrom = []corev1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		}),
		want: `pod ns/p ephemeral container "debug" takes env from ConfigMap "settings": its keys could set the variables that choose a vGPU pod's GPUs and HAMi-core's limits, and this cluster refuses envFrom in vGPU pods (admissionPolicy.envFrom, vgpu-device-plugin --env-from: refuse)`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.CheckPod(tt.pod)
			var refusal *EnvRefusal
			if !errors.As(err, &refusal) {
				t.Fatalf("CheckPod: %v, want an *EnvRefusal", err)
			}
			if err.Error() != tt.want {
				t.Errorf("CheckPod:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// Every control variable is refused in every kind of container; ordinary variables,
// CUDA_DISABLE_CONTROL where allowed, and envFrom as each mode lets it pass.
func TestCheckPod(t *testing.T) {
	names := append(ControlEnvNames(), MemoryLimitEnv(0), MemoryLimitEnv(7), SMLimitEnv(1))
	for _, name := range names {
		for kind, edit := range map[ContainerKind]func(m, s *corev1.Container, d *corev1.EphemeralContainer){
			AppContainer:       func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) { m.Env = setEnv(name) },
			InitContainer:      func(_, s *corev1.Container, _ *corev1.EphemeralContainer) { s.Env = setEnv(name) },
			EphemeralContainer: func(_, _ *corev1.Container, d *corev1.EphemeralContainer) { d.Env = setEnv(name) },
		} {
			err := EnvPolicy{}.CheckPod(envPod(edit))
			var refusal *EnvRefusal
			if !errors.As(err, &refusal) || refusal.Kind != kind || refusal.Variable != name {
				t.Errorf("%s in the %s: %v, want it refused", name, kind, err)
			}
			allowed := EnvPolicy{AllowDisableControl: true}.CheckPod(envPod(edit))
			if (allowed == nil) != (name == EnvDisableControl) {
				t.Errorf("%s in the %s with CUDA_DISABLE_CONTROL allowed: %v", name, kind, allowed)
			}
		}
	}

	from := func(prefix string) func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) {
		return func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) {
			m.EnvFrom = []corev1.EnvFromSource{{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		}
	}
	for _, tc := range []struct {
		mode    EnvFromMode
		prefix  string
		refused bool
	}{
		{mode: "", prefix: "", refused: true},
		{mode: "", prefix: "APP_"},
		{mode: EnvFromPrefixed, prefix: "", refused: true},
		{mode: EnvFromPrefixed, prefix: "CUDA_DEVICE_MEMORY_LIMIT_1", refused: true},
		{mode: EnvFromPrefixed, prefix: "NVIDIA_", refused: true},
		{mode: EnvFromPrefixed, prefix: "APP_"},
		{mode: EnvFromRefuse, prefix: "APP_", refused: true},
		{mode: EnvFromAllow, prefix: ""},
		{mode: EnvFromAllow, prefix: "CUDA_DEVICE_MEMORY_LIMIT_"},
	} {
		err := EnvPolicy{EnvFrom: tc.mode}.CheckPod(envPod(from(tc.prefix)))
		if (err != nil) != tc.refused {
			t.Errorf("envFrom with prefix %q, mode %q: %v, want refused %t", tc.prefix, tc.mode, err, tc.refused)
		}
	}
	if err := (EnvPolicy{}).CheckPod(envPod(nil)); err != nil {
		t.Errorf("ordinary env: %v", err)
	}
}

// The chart's admission policy cannot import the Go list: its CEL repeats it, and this keeps
// the two equal (names, the per-device patterns, the messages).
const chartPolicy = "../../charts/volcano-vgpu/templates/admission-policy.yaml"

func readChartPolicy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(chartPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestChartPolicyListsTheControlVariables(t *testing.T) {
	policy := readChartPolicy(t)
	m := regexp.MustCompile(`(?s)- name: controlVariables\s+expression: >-\s*\[([^\]]*)\]`).FindStringSubmatch(policy)
	if m == nil {
		t.Fatalf("%s: no controlVariables list", chartPolicy)
	}
	var chart []string
	for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(m[1], -1) {
		chart = append(chart, q[1])
	}
	if want := ControlEnvNames(); !slices.Equal(chart, want) {
		t.Errorf("%s lists\n %q\nControlEnvNames is\n %q", chartPolicy, chart, want)
	}
	for _, pattern := range []string{NumberedControlEnvPattern, NumberedPrefixPattern} {
		if !strings.Contains(policy, "matches('"+pattern+"')") {
			t.Errorf("%s does not match names with %s", chartPolicy, pattern)
		}
	}
}

// The policy's CEL builds EnvRefusal's messages from the same pieces.
func TestChartPolicyMessages(t *testing.T) {
	policy := readChartPolicy(t)
	celText := func(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
	refusals := []*EnvRefusal{
		{Variable: "X"}, {Variable: EnvDisableControl},
		{Source: "S", Mode: EnvFromRefuse}, {Source: "S", Mode: EnvFromPrefixed},
	}
	for _, r := range refusals {
		r.Namespace, r.Pod, r.Kind, r.Container = "ns", "p", AppContainer, "c"
		text := r.Error()
		// The text after the variable or the source (and prefix), which the CEL spells out.
		tail := text[strings.Index(text, `"c"`)+len(`"c"`):]
		for _, cut := range []string{" sets X", " sets " + EnvDisableControl, " takes env from S without a prefix", " takes env from S"} {
			if rest, ok := strings.CutPrefix(tail, cut); ok {
				tail = rest
				break
			}
		}
		if !strings.Contains(policy, celText(tail)) {
			t.Errorf("%s does not build the message %q (no %q)", chartPolicy, text, celText(tail))
		}
	}
	for _, kind := range []ContainerKind{AppContainer, InitContainer, EphemeralContainer} {
		if !strings.Contains(policy, `['`+string(kind)+` "' + string(c.name) + '"'`) {
			t.Errorf("%s does not name a %s as messages do", chartPolicy, kind)
		}
	}
}

// The override file holds what HAMi-core reads of an Allocate answer: not the container
// runtime's variables, nor anything that is no control variable; and the compute policy
// pinned to HAMi-core's default, which a process could otherwise turn off.
func TestOverrideEnv(t *testing.T) {
	got := string(OverrideEnv(map[string]string{
		EnvVisibleDevices:     "GPU-a,GPU-b",
		EnvDriverCapabilities: "compute,utility",
		MemoryLimitEnv(1):     "3000m",
		MemoryLimitEnv(0):     "2000m",
		SMLimitEnv(0):         "30",
		SMLimitEnv(1):         "30",
		EnvSMLimit:            "30",
		EnvSharedCache:        "/tmp/vgpu/abc.cache",
		"PATH":                "/usr/bin",
	}))
	want := "CUDA_DEVICE_MEMORY_LIMIT_0=2000m\n" +
		"CUDA_DEVICE_MEMORY_LIMIT_1=3000m\n" +
		"CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu/abc.cache\n" +
		"CUDA_DEVICE_SM_LIMIT=30\n" +
		"CUDA_DEVICE_SM_LIMIT_0=30\n" +
		"CUDA_DEVICE_SM_LIMIT_1=30\n" +
		"GPU_CORE_UTILIZATION_POLICY=DEFAULT\n"
	if got != want {
		t.Errorf("OverrideEnv:\n%s\nwant:\n%s", got, want)
	}
}
