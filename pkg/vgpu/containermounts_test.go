package vgpu

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mountPod is a vGPU pod whose container "main", init container "setup" and ephemeral
// container "debug" mount volumes as edit sets; every volume is an emptyDir.
func mountPod(edit func(main, setup *corev1.Container, debug *corev1.EphemeralContainer)) *corev1.Pod {
	limits := corev1.ResourceList{DefaultResourceNames().Count: resource.MustParse("1")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			Containers:          []corev1.Container{{Name: "main", Image: "app", Resources: corev1.ResourceRequirements{Limits: limits}}},
			InitContainers:      []corev1.Container{{Name: "setup", Image: "app"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "app"}}},
		},
	}
	if edit != nil {
		edit(&pod.Spec.Containers[0], &pod.Spec.InitContainers[0], &pod.Spec.EphemeralContainers[0])
	}
	for _, c := range podContainers(pod) {
		for _, m := range c.mounts {
			if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
				pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: m.Name,
					VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
		}
	}
	return pod
}

// mountedIn mounts volume "v" at path in the main container, beside an ordinary mount.
func mountedIn(path, subPath string) *corev1.Pod {
	return mountPod(func(m, _ *corev1.Container, _ *corev1.EphemeralContainer) {
		m.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "v", MountPath: path, SubPath: subPath}}
	})
}

// mountCases are mount paths in the main container and the HAMi-core path each is refused
// over ("" for allowed, ".." for a path that climbs).
var mountCases = []struct {
	path, subPath, over string
}{
	// At each path.
	{path: "/etc/ld.so.preload", subPath: "preload", over: ContainerPreloadPath},
	{path: "/usr/local/vgpu/libvgpu.so", subPath: "lib.so", over: ContainerLibraryPath},
	{path: "/usr/local/vgpu", over: ContainerLibraryPath},
	{path: "/overrideEnv", subPath: "override", over: OverrideEnvPath},
	{path: "/tmp/vgpu", over: ContainerCachePath},
	{path: "/tmp/vgpulock", over: ContainerLockPath},
	// Above them.
	{path: "/etc", over: ContainerPreloadPath},
	{path: "/usr/local", over: ContainerLibraryPath},
	{path: "/usr", over: ContainerLibraryPath},
	{path: "/", over: ContainerPreloadPath},
	// Inside them.
	{path: "/usr/local/vgpu/other.so", subPath: "other.so", over: "/usr/local/vgpu"},
	{path: "/tmp/vgpu/x.cache", subPath: "region", over: ContainerCachePath},
	{path: "/tmp/vgpulock/lock", subPath: "lock", over: ContainerLockPath},
	// Spelt otherwise, as the kubelet and the runtime read them.
	{path: "etc/ld.so.preload", over: ContainerPreloadPath},
	{path: "/etc//ld.so.preload", over: ContainerPreloadPath},
	{path: "/etc/./ld.so.preload/", over: ContainerPreloadPath},
	{path: "/etc/", over: ContainerPreloadPath},
	{path: "//", over: ContainerPreloadPath},
	{path: "/data/../etc", over: ".."},
	{path: "/srv/..", over: ".."},
	// Ordinary mounts, /tmp among them.
	{path: "/workspace"},
	{path: "/etc/myapp"},
	{path: "/etc/myapp/config.yaml", subPath: "config.yaml"},
	{path: "/etc/ld.so.preload.d"},
	{path: "/usr/local/vgpux"},
	{path: "/usr/share/models"},
	{path: "/overrideEnv2"},
	{path: "/tmp"},
	{path: "/tmp/vgpu2"},
	{path: "/dev/shm"},
	{path: "models"},
	{path: "/srv/..data"},
}

// wantMountRefusal is the refusal of mountCases' case in the main container.
func wantMountRefusal(path, over string) *MountRefusal {
	if over == ".." {
		over = ""
	}
	return &MountRefusal{Namespace: "ns", Pod: "p", Kind: AppContainer, Container: "main", Volume: "v", MountPath: path, Over: over}
}

// Each HAMi-core path is refused at, inside and (but for the folders in /tmp) above it,
// however it is spelt, with or without a subPath; ordinary mounts pass.
func TestCheckMounts(t *testing.T) {
	for _, tc := range mountCases {
		err := CheckMounts(mountedIn(tc.path, tc.subPath))
		if tc.over == "" {
			if err != nil {
				t.Errorf("mount at %q: %v, want it allowed", tc.path, err)
			}
			continue
		}
		var refusal *MountRefusal
		if !errors.As(err, &refusal) || *refusal != *wantMountRefusal(tc.path, tc.over) {
			t.Errorf("mount at %q: %v, want it refused over %s", tc.path, err, tc.over)
		}
	}
}

// Init and ephemeral containers are read as the app containers, after them.
func TestCheckMountsInEveryContainer(t *testing.T) {
	pod := mountPod(func(_, s *corev1.Container, d *corev1.EphemeralContainer) {
		s.VolumeMounts = []corev1.VolumeMount{{Name: "etc", MountPath: "/etc"}}
		d.VolumeMounts = []corev1.VolumeMount{{Name: "lib", MountPath: "/usr/local/vgpu"}}
	})
	want := &MountRefusal{Namespace: "ns", Pod: "p", Kind: InitContainer, Container: "setup", Volume: "etc", MountPath: "/etc", Over: ContainerPreloadPath}
	var refusal *MountRefusal
	if err := CheckMounts(pod); !errors.As(err, &refusal) || *refusal != *want {
		t.Errorf("CheckMounts: %v, want %v", err, want)
	}
	pod.Spec.InitContainers[0].VolumeMounts = nil
	want = &MountRefusal{Namespace: "ns", Pod: "p", Kind: EphemeralContainer, Container: "debug", Volume: "lib", MountPath: "/usr/local/vgpu", Over: ContainerLibraryPath}
	if err := CheckMounts(pod); !errors.As(err, &refusal) || *refusal != *want {
		t.Errorf("CheckMounts: %v, want %v", err, want)
	}
}

// The messages, word for word: the chart's admission policy builds the same text in CEL
// (TestChartPolicyRefusesTheSameMounts), and docs/bad-input.md quotes them.
func TestMountRefusalMessages(t *testing.T) {
	for _, tc := range []struct {
		refusal *MountRefusal
		want    string
	}{{
		refusal: &MountRefusal{Namespace: "ns", Pod: "p", Kind: AppContainer, Container: "main", Volume: "cfg", MountPath: "/etc/ld.so.preload", Over: ContainerPreloadPath},
		want:    `pod ns/p container "main" mounts volume "cfg" at "/etc/ld.so.preload", over /etc/ld.so.preload: a vGPU pod may not hide or replace the paths that load HAMi-core and carry its limits and usage; vgpu-device-plugin and HAMi-core own them`,
	}, {
		refusal: &MountRefusal{Namespace: "ns", Pod: "p", Kind: InitContainer, Container: "setup", Volume: "root", MountPath: "/usr/local", Over: ContainerLibraryPath},
		want:    `pod ns/p init container "setup" mounts volume "root" at "/usr/local", over /usr/local/vgpu/libvgpu.so: a vGPU pod may not hide or replace the paths that load HAMi-core and carry its limits and usage; vgpu-device-plugin and HAMi-core own them`,
	}, {
		refusal: &MountRefusal{Namespace: "ns", Pod: "p", Kind: EphemeralContainer, Container: "debug", Volume: "v", MountPath: "/data/../etc"},
		want:    `pod ns/p ephemeral container "debug" mounts volume "v" at "/data/../etc", a path with "..": a vGPU pod may not hide or replace the paths that load HAMi-core and carry its limits and usage; vgpu-device-plugin and HAMi-core own them`,
	}} {
		if got := tc.refusal.Error(); got != tc.want {
			t.Errorf("message:\n got %s\nwant %s", got, tc.want)
		}
	}
}

// The chart's admission policy lists the same paths, in the same order, as CheckMounts.
func TestChartPolicyListsTheMountPaths(t *testing.T) {
	policy := readChartPolicy(t)
	for name, want := range map[string][]string{"hamiCorePaths": hamiCorePaths, "hamiCoreFolders": hamiCoreFolders} {
		m := regexp.MustCompile(`- name: ` + name + `\s+expression: "\[([^\]]*)\]"`).FindStringSubmatch(policy)
		if m == nil {
			t.Errorf("%s: no %s list", chartPolicy, name)
			continue
		}
		var chart []string
		for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(m[1], -1) {
			chart = append(chart, q[1])
		}
		if !slices.Equal(chart, want) {
			t.Errorf("%s lists %s\n %q\nGo has\n %q", chartPolicy, name, chart, want)
		}
	}
}

// The chart's admission policy, evaluated by the API server's CEL compiler, refuses on create
// the pods CheckMounts refuses, with the same words, and admits the others; a pod without vGPU
// may mount anything.
func TestChartPolicyRefusesTheSameMounts(t *testing.T) {
	admit := newAdmitter(t, chartPolicyNamed(t, "-vgpu-control-env"))
	for _, tc := range mountCases {
		pod := mountedIn(tc.path, tc.subPath)
		var want []string
		if err := CheckMounts(pod); err != nil {
			want = []string{err.Error()}
		}
		if got := admit.create(t, pod); !slices.Equal(got, want) {
			t.Errorf("mount at %q: the policy says %q, CheckMounts %q", tc.path, got, want)
		}
	}
	pod := mountPod(func(_, s *corev1.Container, d *corev1.EphemeralContainer) {
		s.VolumeMounts = []corev1.VolumeMount{{Name: "etc", MountPath: "/etc"}}
		d.VolumeMounts = []corev1.VolumeMount{{Name: "lib", MountPath: "/usr/local/vgpu"}}
	})
	if got, want := admit.create(t, pod), CheckMounts(pod).Error(); !slices.Equal(got, []string{want}) {
		t.Errorf("mounts in the init and ephemeral containers: the policy says %q, CheckMounts %q", got, want)
	}
	pod = mountedIn("/etc", "")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	if got := admit.create(t, pod); len(got) != 0 {
		t.Errorf("a pod without vGPU that mounts /etc: refused %q", got)
	}
}

const dockerfile = "../../build/Dockerfile.vgpu-device-plugin"

// The image's HAMi-core is built with every build/hami-core-*.sh patch, before build.sh: the
// /overrideEnv file is read before the limits, and CUDA lookups go to HAMi-core's own library
// whatever CUDA_REDIRECT says (docs/gpu-limits-override.md). The library the patched lookup
// opens is the one the device plugin mounts.
func TestDockerfileAppliesTheHAMiCorePatches(t *testing.T) {
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	scripts, err := filepath.Glob("../../build/hami-core-*.sh")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, s := range scripts {
		names = append(names, filepath.Base(s))
	}
	for _, want := range []string{"hami-core-override-env.sh", "hami-core-fixed-library.sh"} {
		if !slices.Contains(names, want) {
			t.Errorf("build/ has no %s (has %q)", want, names)
		}
	}
	build := strings.Index(df, "./build.sh")
	if build < 0 {
		t.Fatalf("%s does not run HAMi-core's build.sh", dockerfile)
	}
	for _, n := range names {
		copyLine := regexp.MustCompile(`(?m)^COPY [^\n]*\bbuild/` + regexp.QuoteMeta(n) + `\b[^\n]* /$`)
		if !copyLine.MatchString(df) {
			t.Errorf("%s does not copy build/%s", dockerfile, n)
		}
		run := strings.Index(df, "sh /"+n+" /hami-core")
		if run < 0 || run > build {
			t.Errorf("%s does not run %s on the source before build.sh", dockerfile, n)
		}
	}
	fixed, err := os.ReadFile("../../build/hami-core-fixed-library.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fixed), `dlopen("`+ContainerLibraryPath+`"`) {
		t.Errorf("hami-core-fixed-library.sh does not keep HAMi-core's lookups in %s, where the plugin mounts it", ContainerLibraryPath)
	}
}
