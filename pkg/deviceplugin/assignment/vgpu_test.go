package assignment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

const lockTime = "2026-12-01T10:00:00Z"

func lockedNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        testNode,
		Annotations: map[string]string{vgpu.NodeLockAnnotation: lockTime},
	}}
}

type testEnv struct {
	alloc  *VGPU
	client *fake.Clientset
	hook   string
	lock   string
}

// newTestEnv installs HAMi-core in a temporary hook directory and returns
// an allocator over a fake API server holding objects.
func newTestEnv(t *testing.T, factor int32, objects ...runtime.Object) testEnv {
	t.Helper()
	hook := t.TempDir()
	for _, f := range []string{hostLibrary, hostPreload} {
		if err := os.WriteFile(filepath.Join(hook, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock := filepath.Join(t.TempDir(), "vgpulock")
	client := fake.NewClientset(objects...)
	alloc, err := NewVGPU(client, Config{
		NodeName: testNode, Names: names, MemoryFactor: factor, HookPath: hook, LockDir: lock, GPUs: testGPUs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	alloc.newCacheName = func() string { n++; return fmt.Sprintf("cache-%d", n) }
	return testEnv{alloc: alloc, client: client, hook: hook, lock: lock}
}

func (e testEnv) allocate(count int) (*pluginapi.ContainerAllocateResponse, error) {
	ids := make([]string, count)
	for i := range ids {
		ids[i] = fmt.Sprintf("kubelet-pick-%d", i)
	}
	resp, err := e.alloc.Allocate(context.Background(), &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
	e.alloc.releases.Wait()
	return resp, err
}

func (e testEnv) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod, err := e.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func (e testEnv) nodeLocked(t *testing.T) bool {
	t.Helper()
	node, err := e.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, locked := node.Annotations[vgpu.NodeLockAnnotation]
	return locked
}

// patches returns "resource type body" for each PATCH sent.
func (e testEnv) patches() []string {
	var out []string
	for _, a := range e.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out = append(out, fmt.Sprintf("%s %s %s", a.GetResource().Resource, p.GetPatchType(), p.GetPatch()))
		}
	}
	return out
}

func TestAllocateResponse(t *testing.T) {
	tests := []struct {
		name       string
		factor     int32
		containers []corev1.Container
		devices    vgpu.PodDevices
		count      int
		// allowDisableControl is vgpu-device-plugin --allow-disable-control.
		allowDisableControl bool
		want                func(env testEnv) *pluginapi.ContainerAllocateResponse
	}{
		{
			name:       "one device, memory factor 2, non-vGPU container first",
			factor:     2,
			containers: []corev1.Container{ctr("sidecar", -1, 0, 0), ctr("worker", 1, 2000, 30)},
			devices:    vgpu.PodDevices{{dev(gpuB, 2000, 30)}},
			count:      1,
			want: func(env testEnv) *pluginapi.ContainerAllocateResponse {
				return &pluginapi.ContainerAllocateResponse{
					Envs: map[string]string{
						"NVIDIA_VISIBLE_DEVICES":          gpuB,
						"CUDA_DEVICE_MEMORY_LIMIT_0":      "4000m",
						"CUDA_DEVICE_SM_LIMIT":            "30",
						"CUDA_DEVICE_SM_LIMIT_0":          "30",
						"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/vgpu/cache-1.cache",
					},
					Mounts: []*pluginapi.Mount{
						{ContainerPath: "/usr/local/vgpu/libvgpu.so", HostPath: env.hook + "/libvgpu.so", ReadOnly: true},
						{ContainerPath: "/etc/ld.so.preload", HostPath: env.hook + "/ld.so.preload", ReadOnly: true},
						{ContainerPath: "/tmp/vgpu", HostPath: env.hook + "/vgpu/containers/uid-p_worker"},
						{ContainerPath: "/tmp/vgpulock", HostPath: env.lock},
						{ContainerPath: "/overrideEnv", HostPath: env.hook + "/vgpu/overrides/uid-p_worker/overrideEnv", ReadOnly: true},
					},
				}
			},
		},
		{
			name:       "two devices in assignment order",
			factor:     1,
			containers: []corev1.Container{ctr("worker", 2, 5000, 50)},
			devices:    vgpu.PodDevices{{dev(gpuB, 5000, 50), dev(gpuA, 5000, 50)}},
			count:      2,
			want: func(env testEnv) *pluginapi.ContainerAllocateResponse {
				return &pluginapi.ContainerAllocateResponse{
					Envs: map[string]string{
						"NVIDIA_VISIBLE_DEVICES":          gpuB + "," + gpuA,
						"CUDA_DEVICE_MEMORY_LIMIT_0":      "5000m",
						"CUDA_DEVICE_MEMORY_LIMIT_1":      "5000m",
						"CUDA_DEVICE_SM_LIMIT":            "50",
						"CUDA_DEVICE_SM_LIMIT_0":          "50",
						"CUDA_DEVICE_SM_LIMIT_1":          "50",
						"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/vgpu/cache-1.cache",
					},
					Mounts: []*pluginapi.Mount{
						{ContainerPath: "/usr/local/vgpu/libvgpu.so", HostPath: env.hook + "/libvgpu.so", ReadOnly: true},
						{ContainerPath: "/etc/ld.so.preload", HostPath: env.hook + "/ld.so.preload", ReadOnly: true},
						{ContainerPath: "/tmp/vgpu", HostPath: env.hook + "/vgpu/containers/uid-p_worker"},
						{ContainerPath: "/tmp/vgpulock", HostPath: env.lock},
						{ContainerPath: "/overrideEnv", HostPath: env.hook + "/vgpu/overrides/uid-p_worker/overrideEnv", ReadOnly: true},
					},
				}
			},
		},
		{
			name:                "CUDA_DISABLE_CONTROL, where the operator allows it, leaves out the preload, even with no preload file installed",
			factor:              1,
			allowDisableControl: true,
			containers: []corev1.Container{func() corev1.Container {
				c := ctr("worker", 1, 1000, 0)
				c.Env = []corev1.EnvVar{{Name: "CUDA_DISABLE_CONTROL", Value: "false"}}
				return c
			}()},
			devices: vgpu.PodDevices{{dev(gpuA, 1000, 0)}},
			count:   1,
			want: func(env testEnv) *pluginapi.ContainerAllocateResponse {
				if err := os.Remove(filepath.Join(env.hook, hostPreload)); err != nil {
					t.Fatal(err)
				}
				return &pluginapi.ContainerAllocateResponse{
					Envs: map[string]string{
						"NVIDIA_VISIBLE_DEVICES":          gpuA,
						"CUDA_DEVICE_MEMORY_LIMIT_0":      "1000m",
						"CUDA_DEVICE_SM_LIMIT":            "0",
						"CUDA_DEVICE_SM_LIMIT_0":          "0",
						"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/vgpu/cache-1.cache",
					},
					Mounts: []*pluginapi.Mount{
						{ContainerPath: "/usr/local/vgpu/libvgpu.so", HostPath: env.hook + "/libvgpu.so", ReadOnly: true},
						{ContainerPath: "/tmp/vgpu", HostPath: env.hook + "/vgpu/containers/uid-p_worker"},
						{ContainerPath: "/tmp/vgpulock", HostPath: env.lock},
						{ContainerPath: "/overrideEnv", HostPath: env.hook + "/vgpu/overrides/uid-p_worker/overrideEnv", ReadOnly: true},
					},
				}
			},
		},
		{
			name:       "no memory booked: the whole GPU, never an unset limit",
			factor:     4,
			containers: []corev1.Container{ctr("worker", 1, 0, 0)},
			devices:    vgpu.PodDevices{{dev(gpuA, 0, 0)}},
			count:      1,
			want: func(env testEnv) *pluginapi.ContainerAllocateResponse {
				return &pluginapi.ContainerAllocateResponse{
					Envs: map[string]string{
						"NVIDIA_VISIBLE_DEVICES":          gpuA,
						"CUDA_DEVICE_MEMORY_LIMIT_0":      "143771m",
						"CUDA_DEVICE_SM_LIMIT":            "0",
						"CUDA_DEVICE_SM_LIMIT_0":          "0",
						"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/vgpu/cache-1.cache",
					},
					Mounts: []*pluginapi.Mount{
						{ContainerPath: "/usr/local/vgpu/libvgpu.so", HostPath: env.hook + "/libvgpu.so", ReadOnly: true},
						{ContainerPath: "/etc/ld.so.preload", HostPath: env.hook + "/ld.so.preload", ReadOnly: true},
						{ContainerPath: "/tmp/vgpu", HostPath: env.hook + "/vgpu/containers/uid-p_worker"},
						{ContainerPath: "/tmp/vgpulock", HostPath: env.lock},
						{ContainerPath: "/overrideEnv", HostPath: env.hook + "/vgpu/overrides/uid-p_worker/overrideEnv", ReadOnly: true},
					},
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := assigned("p", 100, tt.containers, tt.devices)
			env := newTestEnv(t, tt.factor, &pod, lockedNode())
			env.alloc.cfg.AllowDisableControl = tt.allowDisableControl
			want := tt.want(env)
			got, err := env.allocate(tt.count)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			for _, dir := range []string{env.hook + "/vgpu/containers/uid-p_worker", env.lock} {
				info, err := os.Stat(dir)
				if err != nil || !info.IsDir() || info.Mode().Perm() != 0o777 {
					t.Errorf("host directory %s: %v, %v; want a directory with mode 0777", dir, info, err)
				}
			}
			checkOverrideFile(t, env.hook+"/vgpu/overrides/uid-p_worker", got.Envs)
		})
	}
}

// checkOverrideFile checks that the override file in dir, which only the
// plugin may write, sets exactly the answer's HAMi-core variables: every
// variable of envs but the container runtime's, one line each.
func checkOverrideFile(t *testing.T, dir string, envs map[string]string) {
	t.Helper()
	file := filepath.Join(dir, "overrideEnv")
	for path, mode := range map[string]os.FileMode{dir: os.ModeDir | 0o755, file: 0o644} {
		if info, err := os.Stat(path); err != nil || info.Mode() != mode {
			t.Errorf("%s: %v, %v; want mode %v", path, info, err, mode)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(envs)
	delete(want, vgpu.EnvVisibleDevices)
	want[vgpu.EnvUtilizationPolicy] = "DEFAULT" // pinned: the answer does not set it
	body, ended := strings.CutSuffix(string(data), "\n")
	if !ended {
		t.Fatalf("override file %q does not end its last line", data)
	}
	got := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if _, again := got[key]; !ok || again {
			t.Fatalf("override file %q: line %q is not a KEY=VALUE line of a new key", data, line)
		}
		got[key] = value
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("override file %q against the answer's environment (-want +got):\n%s", data, diff)
	}
}

// TestAllocateAgainReplacesTheOverrideFile: a container served again (the
// kubelet restarted or lost the answer) gets a new region name, and its
// override file says the same; a container that mounted the old file keeps
// it, since the new one comes by rename.
func TestAllocateAgainReplacesTheOverrideFile(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 1000, 20)}, vgpu.PodDevices{{dev(gpuA, 1000, 20)}})
	env := newTestEnv(t, 1, &pod, lockedNode())
	dir := filepath.Join(ContainerOverrideRoot(env.hook), "uid-p_worker")
	first, err := env.allocate(1)
	if err != nil {
		t.Fatalf("first Allocate: %v", err)
	}
	mounted, err := os.Open(filepath.Join(dir, "overrideEnv"))
	if err != nil {
		t.Fatal(err)
	}
	defer mounted.Close()
	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: podresources.Holdings{
		{Namespace: "ns", Name: "p"}: {"worker": false},
	}}
	again, err := env.allocate(1)
	if err != nil {
		t.Fatalf("Allocate again: %v", err)
	}
	if a, b := first.Envs[vgpu.EnvSharedCache], again.Envs[vgpu.EnvSharedCache]; a == b {
		t.Fatalf("served again with the same region %s, want a new one", a)
	}
	checkOverrideFile(t, dir, again.Envs)
	kept, err := io.ReadAll(mounted)
	if err != nil {
		t.Fatal(err)
	}
	if want := "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + first.Envs[vgpu.EnvSharedCache] + "\n"; !strings.Contains(string(kept), want) {
		t.Errorf("the first container's file now reads %q, want it kept with %q", kept, want)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("override directory holds %v (%v), want the one file", entries, err)
	}
}

func TestAllocateServesContainersInTurn(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{
		ctr("sidecar", -1, 0, 0),
		ctr("first", 1, 2000, 30),
		ctr("second", 2, 3000, 0),
	}, vgpu.PodDevices{
		{dev(gpuA, 2000, 30)},
		{dev(gpuA, 3000, 0), dev(gpuB, 3000, 0)},
	})
	env := newTestEnv(t, 1, &pod, lockedNode())

	first, err := env.allocate(1)
	if err != nil {
		t.Fatalf("first Allocate: %v", err)
	}
	if got := first.Envs["NVIDIA_VISIBLE_DEVICES"]; got != gpuA {
		t.Errorf("first container sees %q, want %q", got, gpuA)
	}
	after := env.pod(t, "p")
	wantRest := ";" + gpuA + ",NVIDIA,3000,0:" + gpuB + ",NVIDIA,3000,0:"
	if got := after.Annotations[vgpu.DevicesToAllocateAnnotation]; got != wantRest {
		t.Errorf("after the first container %s = %q, want %q", vgpu.DevicesToAllocateAnnotation, got, wantRest)
	}
	if got := after.Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseAllocating {
		t.Errorf("after the first container bind phase = %q, want it still allocating", got)
	}
	if !env.nodeLocked(t) {
		t.Error("node lock released before the last container was served")
	}

	second, err := env.allocate(2)
	if err != nil {
		t.Fatalf("second Allocate: %v", err)
	}
	if got, want := second.Envs["NVIDIA_VISIBLE_DEVICES"], gpuA+","+gpuB; got != want {
		t.Errorf("second container sees %q, want %q", got, want)
	}
	if got, want := second.Mounts[2].HostPath, env.hook+"/vgpu/containers/uid-p_second"; got != want {
		t.Errorf("second container's cache dir %q, want %q", got, want)
	}
	if env.nodeLocked(t) {
		t.Error("node lock kept after the last container was served")
	}

	wantPatches := []string{
		`pods application/merge-patch+json {"metadata":{"resourceVersion":"7","annotations":{"volcano.sh/devices-to-allocate":"` + wantRest + `"}}}`,
		`pods application/merge-patch+json {"metadata":{"resourceVersion":"7","annotations":{` +
			`"volcano.sh/bind-phase":"success","volcano.sh/devices-to-allocate":";","volcano.sh/vgpu-time":"18446744073709551615"}}}`,
		`nodes application/json-patch+json [{"op":"test","path":"/metadata/annotations/hamivgpu","value":"` + lockTime + `"},` +
			`{"op":"remove","path":"/metadata/annotations/hamivgpu"}]`,
	}
	if diff := cmp.Diff(wantPatches, env.patches()); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}

	if _, err := env.allocate(1); err == nil || !strings.Contains(err.Error(), "pod ns/p has volcano.sh/bind-phase \"success\"") {
		t.Errorf("a third Allocate: %v, want no pod found, naming the served pod", err)
	}
}

func TestAllocateFailureMarksPodFailed(t *testing.T) {
	tests := []struct {
		name    string
		devices vgpu.PodDevices
		setup   func(env testEnv)
		wantErr string
	}{
		{
			name:    "GPU not on this node",
			devices: vgpu.PodDevices{{dev("GPU-ffffffff-0000-0000-0000-000000000000", 1000, 0)}},
			wantErr: `pod ns/p container "worker", entry 0 in volcano.sh/devices-to-allocate: device 0: GPU GPU-ffffffff-0000-0000-0000-000000000000 is not one of this node's`,
		},
		{
			name:    "MIG instance",
			devices: vgpu.PodDevices{{dev(gpuA+"[1g.10gb-0]", 1000, 0)}},
			wantErr: "GPU " + gpuA + "[1g.10gb-0] is not one of this node's",
		},
		{
			name:    "unhealthy GPU",
			devices: vgpu.PodDevices{{dev(gpuC, 1000, 0)}},
			wantErr: "assigned GPU " + gpuC + " is unhealthy (XID 79)",
		},
		{
			name:    "HAMi-core missing on the host",
			devices: vgpu.PodDevices{{dev(gpuA, 1000, 0)}},
			setup: func(env testEnv) {
				if err := os.Remove(filepath.Join(env.hook, hostLibrary)); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: `pod ns/p container "worker": HAMi-core is not installed on the node`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 1000, 0)}, tt.devices)
			env := newTestEnv(t, 1, &pod, lockedNode())
			if tt.setup != nil {
				tt.setup(env)
			}
			_, err := env.allocate(1)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Allocate: %v, want an error containing %q", err, tt.wantErr)
			}
			after := env.pod(t, "p")
			if got := after.Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseFailed {
				t.Errorf("bind phase %q, want %q", got, vgpu.BindPhaseFailed)
			}
			if got := after.Annotations[vgpu.AssignedTimeAnnotation]; got != vgpu.AssignedTimeReleased {
				t.Errorf("assignment time %q, want the released value", got)
			}
			if got, want := after.Annotations[vgpu.DevicesToAllocateAnnotation], pod.Annotations[vgpu.DevicesToAllocateAnnotation]; got != want {
				t.Errorf("%s changed to %q on failure, want it kept as %q", vgpu.DevicesToAllocateAnnotation, got, want)
			}
			if env.nodeLocked(t) {
				t.Error("node lock kept after a failure")
			}
		})
	}
}

func TestAllocateWithoutTargetWritesNothing(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{ctr("worker", 2, 1000, 0)},
		vgpu.PodDevices{{dev(gpuA, 1000, 0), dev(gpuB, 1000, 0)}})
	env := newTestEnv(t, 1, &pod, lockedNode())
	_, err := env.allocate(1)
	if err == nil || !strings.Contains(err.Error(), "pod ns/p waits for 2 devices in container entry 0, not 1") {
		t.Fatalf("Allocate: %v, want a count mismatch naming the pod", err)
	}
	if got := env.patches(); len(got) != 0 {
		t.Errorf("patches %v, want none", got)
	}
}

func TestAllocateStartsOverOnConflict(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 1000, 0)}, vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
	env := newTestEnv(t, 1, &pod)
	conflicts := 1
	env.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", fmt.Errorf("object was modified"))
		}
		return false, nil, nil
	})
	response, err := env.allocate(1)
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if got := response.Envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"]; got != "/tmp/vgpu/cache-2.cache" {
		t.Errorf("cache file %q, want the second attempt's", got)
	}
	lists := 0
	for _, a := range env.client.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if lists != 2 {
		t.Errorf("%d pod lists, want 2 (one per attempt)", lists)
	}
	if got := env.pod(t, "p").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseSuccess {
		t.Errorf("bind phase %q, want success", got)
	}
}

func TestAllocateKeepsExistingCacheDir(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 1000, 0)}, vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
	env := newTestEnv(t, 1, &pod)
	dir := filepath.Join(ContainerCacheRoot(env.hook), "uid-p_worker")
	inUse := filepath.Join(dir, "running.cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inUse, []byte("region"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := env.allocate(1); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if data, err := os.ReadFile(inUse); err != nil || string(data) != "region" {
		t.Errorf("region file of a running container: %q, %v; want it untouched", data, err)
	}
}

func TestAllocateWithoutNodeLockDoesNotPatchNode(t *testing.T) {
	pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 1000, 0)}, vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
	env := newTestEnv(t, 1, &pod, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}})
	if _, err := env.allocate(1); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	for _, p := range env.patches() {
		if strings.HasPrefix(p, "nodes ") {
			t.Errorf("node patched without a lock to release: %s", p)
		}
	}
}

func TestNewVGPUConfigErrors(t *testing.T) {
	_, err := NewVGPU(fake.NewClientset(), Config{Names: names, MemoryScaling: -1})
	for _, want := range []string{"node name is empty", "memory factor 0", "memory scaling -1", "no GPU lister"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewVGPU: %v, want an error containing %q", err, want)
		}
	}
}

// decoyAndLegit are a pod author's hand-written assignment, assigned
// "earlier", and the honest pod behind it, each waiting for one vGPU.
func decoyAndLegit() (decoy, legit corev1.Pod) {
	decoy = assigned("decoy", 1, []corev1.Container{ctr("worker", 1, 10, 0)}, vgpu.PodDevices{{dev(gpuA, 999999, 0)}})
	legit = assigned("legit", 500, []corev1.Container{ctr("worker", 1, 1000, 30)}, vgpu.PodDevices{{dev(gpuB, 1000, 30)}})
	return decoy, legit
}

const decoyRefusal = "pod ns/decoy container \"worker\", entry 0 in volcano.sh/devices-to-allocate: device 0 books 999999 memory units, the container asks 10"

// wantDecoyRefused checks that the decoy's hand-off was ended with a Warning
// Event saying why.
func wantDecoyRefused(t *testing.T, env testEnv, events *record.FakeRecorder) {
	t.Helper()
	if got := env.pod(t, "decoy").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseFailed {
		t.Errorf("decoy bind phase %q, want %q", got, vgpu.BindPhaseFailed)
	}
	select {
	case e := <-events.Events:
		if want := "Warning " + EventReasonRefused + " " + decoyRefusal; e != want {
			t.Errorf("event %q, want %q", e, want)
		}
	default:
		t.Error("no Event on the refused pod")
	}
}

// With the kubelet's list of its pods, a decoy the kubelet holds too is
// refused with a Warning Event and skipped; the legitimate pod is served.
func TestAllocateSkipsAForgedDecoy(t *testing.T) {
	decoy, legit := decoyAndLegit()
	env := newTestEnv(t, 1, &decoy, &legit, lockedNode())
	env.alloc.cfg.KubeletPods = fakeKubeletPods{holdings: podresources.Holdings{
		{Namespace: "ns", Name: "decoy"}: {"worker": false},
		{Namespace: "ns", Name: "legit"}: {"worker": false},
	}}
	events := record.NewFakeRecorder(10)
	env.alloc.cfg.Recorder = events
	wantServed(t, env, gpuB)
	wantDecoyRefused(t, env, events)
}

// Without the kubelet's list, the refused decoy may be the pod the kubelet
// admits, so its refusal refuses the Allocate: the admitted container never
// starts on the legitimate pod's GPU, and that pod keeps its entry for its
// own Allocate, which the decoy, marked failed, no longer stands before.
func TestAllocateWithoutTheKubeletsListServesNoOtherPodAfterARefusal(t *testing.T) {
	decoy, legit := decoyAndLegit()
	env := newTestEnv(t, 1, &decoy, &legit, lockedNode())
	env.alloc.cfg.KubeletPods = fakeKubeletPods{err: errors.New("connection refused")}
	events := record.NewFakeRecorder(10)
	env.alloc.cfg.Recorder = events
	resp, err := env.allocate(1)
	if err == nil || resp != nil || !strings.HasPrefix(err.Error(), decoyRefusal+"; without the kubelet's list") {
		t.Fatalf("Allocate: %v, %v; want no response and the decoy's refusal", resp, err)
	}
	wantDecoyRefused(t, env, events)
	if got := env.pod(t, "legit").Annotations; got[vgpu.BindPhaseAnnotation] != vgpu.BindPhaseAllocating ||
		got[vgpu.DevicesToAllocateAnnotation] != legit.Annotations[vgpu.DevicesToAllocateAnnotation] {
		t.Errorf("legit pod's annotations %v, want its entry untouched", got)
	}
	wantServed(t, env, gpuB)
}

// A pod whose containers set a variable of their slice themselves (the kubelet would lay it
// over the answer) gets no answer: an error, and a Warning Event naming the variable, for each
// control variable, in an app or an init container. CUDA_DISABLE_CONTROL passes only where the
// operator allows it.
func TestAllocateRefusesControlVariables(t *testing.T) {
	names := append(vgpu.ControlEnvNames(), vgpu.MemoryLimitEnv(0), vgpu.MemoryLimitEnv(1), vgpu.SMLimitEnv(0))
	for _, name := range names {
		for _, kind := range []vgpu.ContainerKind{vgpu.AppContainer, vgpu.InitContainer} {
			t.Run(name+" in the "+string(kind), func(t *testing.T) {
				pod := assigned("p", 100, []corev1.Container{ctr("worker", 1, 1000, 0)}, vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
				set := []corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: name, Value: "0"}}
				container := "worker"
				if kind == vgpu.InitContainer {
					container = "setup"
					pod.Spec.InitContainers = []corev1.Container{{Name: container, Image: "busybox", Env: set}}
				} else {
					pod.Spec.Containers[0].Env = set
				}
				env := newTestEnv(t, 1, &pod, lockedNode())
				events := record.NewFakeRecorder(10)
				env.alloc.cfg.Recorder = events
				resp, err := env.allocate(1)
				want := (&vgpu.EnvRefusal{Namespace: "ns", Pod: "p", Kind: kind, Container: container, Variable: name}).Error()
				if err == nil || resp != nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Allocate: %v, %v; want no response and an error containing %q", resp, err, want)
				}
				if !strings.Contains(want, " sets "+name) {
					t.Errorf("message %q does not name %s", want, name)
				}
				select {
				case e := <-events.Events:
					if e != "Warning "+EventReasonRefused+" "+want {
						t.Errorf("event %q, want %q", e, "Warning "+EventReasonRefused+" "+want)
					}
				default:
					t.Error("no Event on the refused pod")
				}
				if got := env.pod(t, "p").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseFailed {
					t.Errorf("bind phase %q, want %q", got, vgpu.BindPhaseFailed)
				}

				allowing := newTestEnv(t, 1, &pod, lockedNode())
				allowing.alloc.cfg.AllowDisableControl = true
				_, err = allowing.allocate(1)
				if (err == nil) != (name == vgpu.EnvDisableControl) {
					t.Errorf("Allocate with CUDA_DISABLE_CONTROL allowed: %v", err)
				}
			})
		}
	}
}

// envFrom at Allocate, in each mode: a ConfigMap's keys are not read here, so only the prefix
// can tell whether they reach a control variable.
func TestAllocateEnvFrom(t *testing.T) {
	for _, tc := range []struct {
		mode    vgpu.EnvFromMode
		prefix  string
		refused string
	}{
		{mode: "", prefix: "", refused: `takes env from ConfigMap "settings" without a prefix`},
		{mode: vgpu.EnvFromPrefixed, prefix: "APP_"},
		{mode: vgpu.EnvFromPrefixed, prefix: "CUDA_DEVICE_MEMORY_LIMIT_1", refused: `with prefix "CUDA_DEVICE_MEMORY_LIMIT_1"`},
		{mode: vgpu.EnvFromRefuse, prefix: "APP_", refused: "this cluster refuses envFrom in vGPU pods"},
		{mode: vgpu.EnvFromAllow, prefix: ""},
	} {
		t.Run(fmt.Sprintf("%s %q", tc.mode, tc.prefix), func(t *testing.T) {
			c := ctr("worker", 1, 1000, 0)
			c.Env = []corev1.EnvVar{{Name: "HOME", Value: "/root"}}
			c.EnvFrom = []corev1.EnvFromSource{{Prefix: tc.prefix,
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
			pod := assigned("p", 100, []corev1.Container{c}, vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
			env := newTestEnv(t, 1, &pod, lockedNode())
			env.alloc.cfg.EnvFrom = tc.mode
			events := record.NewFakeRecorder(10)
			env.alloc.cfg.Recorder = events
			resp, err := env.allocate(1)
			if tc.refused == "" {
				if err != nil || resp.Envs["NVIDIA_VISIBLE_DEVICES"] != gpuA {
					t.Fatalf("Allocate: %v, %v; want gpu %s served", resp, err, gpuA)
				}
				return
			}
			if err == nil || resp != nil || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("Allocate: %v, %v; want no response and an error containing %q", resp, err, tc.refused)
			}
			select {
			case e := <-events.Events:
				if !strings.HasPrefix(e, "Warning "+EventReasonRefused+" ") || !strings.Contains(e, tc.refused) {
					t.Errorf("event %q, want %s saying %q", e, EventReasonRefused, tc.refused)
				}
			default:
				t.Error("no Event on the refused pod")
			}
		})
	}
}

// A pod whose container mounts a volume over a HAMi-core path (here a ConfigMap file over the
// preload file, with subPath) gets no answer: an error, and a Warning Event naming the pod,
// container, volume and path; ordinary mounts pass.
func TestAllocateRefusesMountsOverHAMiCore(t *testing.T) {
	for _, tc := range []struct {
		path, subPath string
		refused       bool
	}{
		{path: vgpu.ContainerPreloadPath, subPath: "preload", refused: true},
		{path: "/usr/local", refused: true},
		{path: "/etc/myapp"},
		{path: "/tmp"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c := ctr("worker", 1, 1000, 0)
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cfg", MountPath: tc.path, SubPath: tc.subPath}}
			pod := assigned("p", 100, []corev1.Container{c}, vgpu.PodDevices{{dev(gpuA, 1000, 0)}})
			env := newTestEnv(t, 1, &pod, lockedNode())
			events := record.NewFakeRecorder(10)
			env.alloc.cfg.Recorder = events
			resp, err := env.allocate(1)
			if !tc.refused {
				if err != nil || resp.Envs[vgpu.EnvVisibleDevices] != gpuA {
					t.Fatalf("Allocate: %v, %v; want gpu %s served", resp, err, gpuA)
				}
				return
			}
			want := vgpu.CheckMounts(&pod)
			if want == nil || !strings.Contains(want.Error(), `container "worker" mounts volume "cfg" at "`+tc.path+`"`) {
				t.Fatalf("CheckMounts: %v, want a refusal naming the container, volume and path", want)
			}
			if err == nil || resp != nil || !strings.Contains(err.Error(), want.Error()) {
				t.Fatalf("Allocate: %v, %v; want no response and an error containing %q", resp, err, want)
			}
			select {
			case e := <-events.Events:
				if e != "Warning "+EventReasonRefused+" "+want.Error() {
					t.Errorf("event %q, want %q", e, "Warning "+EventReasonRefused+" "+want.Error())
				}
			default:
				t.Error("no Event on the refused pod")
			}
			if got := env.pod(t, "p").Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseFailed {
				t.Errorf("bind phase %q, want %q", got, vgpu.BindPhaseFailed)
			}
		})
	}
}
