//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	assign "github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/assignment"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// pluginRun is vgpu-device-plugin running for the real kubelet's node with fake 8 GiB GPUs
// (split 10).
type pluginRun struct {
	cs   kubernetes.Interface
	hook string
	args []string
	gpus []string
	proc *process
}

const pluginMetrics = "127.0.0.1:19394"

// devicePlugin starts the plugin with n GPUs and waits until the kubelet advertises what it
// registered. It serves the pods of the schedulers named, else those the tests bind
// themselves (noScheduler).
func devicePlugin(t *testing.T, cs kubernetes.Interface, n int, schedulers ...string) *pluginRun {
	t.Helper()
	hook := hookDir(t)
	p := &pluginRun{cs: cs, hook: hook, args: []string{"--kubeconfig", programKubeconfig(t, devicePluginAccount), "--node-name", realNode, "--nvml", "fake",
		"--fake-gpus", fmt.Sprintf("%dxNVIDIA GeForce RTX 3070 Ti:8192", n), "--hook-path", hook, "--metrics-address", pluginMetrics,
		"--node-config", filepath.Join(hook, "absent-config.json"), "-v", "2"}}
	if len(schedulers) == 0 {
		schedulers = []string{noScheduler}
	}
	for _, s := range schedulers {
		p.args = append(p.args, "--scheduler-name", s)
	}
	for i := 0; i < n; i++ {
		p.gpus = append(p.gpus, nvml.FakeUUID(realNode, i))
	}
	p.proc = start(t, "vgpu-device-plugin", p.args...)
	p.waitServing(t, 0)
	return p
}

// hookDir is a host directory with stand-ins for HAMi-core's files (the test containers run
// no CUDA).
func hookDir(t *testing.T) string {
	t.Helper()
	hook := t.TempDir()
	for name, content := range map[string]string{"libvgpu.so": "not a real library\n", "ld.so.preload": "/usr/local/vgpu/libvgpu.so\n"} {
		if err := os.WriteFile(filepath.Join(hook, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return hook
}

// restart stops the plugin and starts it again with the same flags and hook directory, as a
// DaemonSet rollout would, and waits until the kubelet advertises its resources again.
func (p *pluginRun) restart(t *testing.T) {
	t.Helper()
	p.proc.stop()
	p.proc = start(t, "vgpu-device-plugin", p.args...)
	p.waitServing(t, 0)
	p.waitSettled(t)
}

// waitSettled waits until the plugin has sent its lists and then been quiet for a second: no
// registration dropped by the kubelet and made again since. Right after a restart the
// kubelet's device manager may drop the new registration while it cleans up after the old
// one, refusing pods ("no healthy devices present") until the plugin registers again
// (pkg/deviceplugin/kubelet Manager.dropOrphans) and the kubelet has its lists.
func (p *pluginRun) waitSettled(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "the plugin settles with the kubelet", func(context.Context) (bool, string, error) {
		var last string
		for _, line := range strings.Split(p.proc.log.String(), "\n") {
			if strings.Contains(line, "Sent device list to kubelet") || strings.Contains(line, "registering again") {
				last = line
			}
		}
		at, err := klogTime(last)
		if err != nil {
			return false, err.Error(), nil
		}
		quiet := time.Since(at)
		return strings.Contains(last, "Sent device list") && quiet > time.Second, fmt.Sprintf("last %q, %s ago", last, quiet), nil
	})
}

// klogTime is the time of a klog line of this machine ("I1206 20:23:00.561438 ...").
func klogTime(line string) (time.Time, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 || len(fields[0]) != 5 {
		return time.Time{}, fmt.Errorf("not a klog line: %q", line)
	}
	now := time.Now()
	at, err := time.ParseInLocation("0102 15:04:05.000000", fields[0][1:]+" "+fields[1], time.Local)
	if err != nil {
		return time.Time{}, err
	}
	return at.AddDate(now.Year(), 0, 0), nil
}

// servedResources is how many device lists the plugin sends the kubelet: vgpu-number,
// vgpu-memory, vgpu-cores and vgpu-memory-percentage.
const servedResources = 4

// waitServing waits until the plugin has sent the kubelet all its device lists since it had
// sent the first `before`, and the node advertises them. The node status alone would not do:
// it keeps showing a stopped plugin's devices for a while, and the kubelet admits vGPU pods
// only once a running plugin has sent its lists.
func (p *pluginRun) waitServing(t *testing.T, before int) {
	t.Helper()
	eventually(t, 60*time.Second, "the plugin sends the kubelet its device lists", func(context.Context) (bool, string, error) {
		return p.sends() >= before+servedResources, tail(p.proc.log.String(), 3), nil
	})
	p.waitAdvertised(t)
}

// sends counts the device lists the plugin has sent the kubelet (logged at -v 2).
func (p *pluginRun) sends() int {
	return strings.Count(p.proc.log.String(), "Sent device list to kubelet")
}

func (p *pluginRun) waitAdvertised(t *testing.T) { t.Helper(); waitAdvertised(t, p.cs, p.gpus) }

// podResourcesSocket is the kubelet's pod-resources API (cluster-up.sh's kubelet root dir).
const podResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// podResources is a client of the kubelet's pod-resources API, closed when the test ends.
func podResources(t *testing.T) podresourcesapi.PodResourcesListerClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+podResourcesSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return podresourcesapi.NewPodResourcesListerClient(conn)
}

// waitKubeletHealthy waits until the kubelet itself counts want healthy devices of each
// resource, as its pod-resources API reports them. The node object is no proof: right after a
// plugin restarts it still shows what the previous one advertised, while the kubelet may not
// yet have taken the new plugin's lists and refuses a pod at admission ("no healthy devices
// present; cannot allocate unhealthy devices volcano.sh/vgpu-memory").
func waitKubeletHealthy(t *testing.T, want map[corev1.ResourceName]int64) {
	t.Helper()
	client := podResources(t)
	eventually(t, 60*time.Second, "the kubelet counts the plugin's devices healthy", func(ctx context.Context) (bool, string, error) {
		got, err := allocatable(ctx, client)
		if err != nil {
			return false, err.Error(), nil
		}
		for name, n := range want {
			if got[name] != n {
				return false, fmt.Sprintf("%v", got), nil
			}
		}
		return true, "", nil
	})
}

// allocatable counts the devices of each resource the kubelet's pod-resources API reports.
func allocatable(ctx context.Context, client podresourcesapi.PodResourcesListerClient) (map[corev1.ResourceName]int64, error) {
	resp, err := client.GetAllocatableResources(ctx, &podresourcesapi.AllocatableResourcesRequest{})
	if err != nil {
		return nil, err
	}
	got := map[corev1.ResourceName]int64{}
	for _, d := range resp.GetDevices() {
		got[corev1.ResourceName(d.GetResourceName())] += int64(len(d.GetDeviceIds()))
	}
	return got, nil
}

// waitNodeFreeOfOtherVGPUPods waits until the kubelet holds vGPU devices for no pod outside
// namespace ns: pods of an earlier test, deleted, stay active in the kubelet until their
// containers are gone, and the devices they hold are not available to this test's pods
// ("requested number of devices unavailable").
func waitNodeFreeOfOtherVGPUPods(t *testing.T, ns string) {
	t.Helper()
	client := podResources(t)
	eventually(t, 120*time.Second, "no other test's pod holds vGPU devices on the real node", func(ctx context.Context) (bool, string, error) {
		resp, err := client.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
		if err != nil {
			return false, err.Error(), nil
		}
		var holders []string
		for _, p := range resp.GetPodResources() {
			if p.GetNamespace() == ns {
				continue
			}
			for _, c := range p.GetContainers() {
				if slices.ContainsFunc(c.GetDevices(), func(d *podresourcesapi.ContainerDevices) bool {
					return strings.HasPrefix(d.GetResourceName(), "volcano.sh/vgpu-")
				}) {
					holders = append(holders, p.GetNamespace()+"/"+p.GetName())
					break
				}
			}
		}
		return len(holders) == 0, strings.Join(holders, ", "), nil
	})
}

// kubeletDevices says how many vgpu-number devices the kubelet counts allocatable and which
// pods hold some, from its pod-resources API: what a refusal at admission is judged against.
func kubeletDevices(t *testing.T) string {
	t.Helper()
	client := podResources(t)
	ctx := context.Background()
	counts, err := allocatable(ctx, client)
	if err != nil {
		return err.Error()
	}
	n := counts[vgpu.DefaultCountResource]
	list, err := client.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		return err.Error()
	}
	var holders []string
	for _, p := range list.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				if d.GetResourceName() == string(vgpu.DefaultCountResource) {
					holders = append(holders, fmt.Sprintf("%s/%s:%v", p.GetNamespace(), p.GetName(), d.GetDeviceIds()))
				}
			}
		}
	}
	return fmt.Sprintf("%d %s allocatable; held by %d: %s", n, vgpu.DefaultCountResource, len(holders), strings.Join(holders, " "))
}

// waitAdvertised waits until the real node advertises these fake 8 GiB GPUs (split 10) in its
// allocatable and its register annotation, and the kubelet counts them healthy.
func waitAdvertised(t *testing.T, cs kubernetes.Interface, gpus []string) {
	t.Helper()
	n := int64(len(gpus))
	want := map[corev1.ResourceName]int64{vgpu.DefaultCountResource: 10 * n, vgpu.DefaultMemoryResource: 8192 * n,
		vgpu.DefaultCoresResource: 100 * n}
	waitKubeletHealthy(t, want)
	eventually(t, 60*time.Second, "kubelet advertises the vGPU resources", func(ctx context.Context) (bool, string, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for name, v := range want {
			q := node.Status.Allocatable[name]
			if q.Value() != v {
				return false, fmt.Sprintf("%s=%s (want %d)", name, q.String(), v), nil
			}
		}
		reg := node.Annotations[vgpu.NodeDevicesAnnotation]
		return strings.Count(reg, ":") == len(gpus) && strings.Contains(reg, gpus[len(gpus)-1]), "register=" + reg, nil
	})
}

// runAssigned creates a pod with one vGPU container, binds it with the assignment of one
// device and waits until it runs with that device's settings.
func runAssigned(t *testing.T, cs kubernetes.Interface, ns, name string, device vgpu.ContainerDevice) *corev1.Pod {
	t.Helper()
	return runAssignedPod(t, cs, podAsking(ns, name, device), device)
}

// runAssignedPod is runAssigned for a pod of podAsking that the test has changed.
func runAssignedPod(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, device vgpu.ContainerDevice) *corev1.Pod {
	t.Helper()
	createBound(t, cs, pod, device)
	got := podPhase(t, cs, pod.Namespace, pod.Name, corev1.PodRunning, 90*time.Second)
	wantLines(t, pod.Name, containerLog(t, cs, pod.Namespace, pod.Name, "main"), "NVIDIA_VISIBLE_DEVICES="+device.UUID,
		fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_0=%dm", device.UsedMemory), fmt.Sprintf("CUDA_DEVICE_SM_LIMIT=%d", device.UsedCores))
	return got
}

// podAsking is a pod whose one container, "main", asks one vGPU with the device's memory and
// cores.
func podAsking(ns, name string, device vgpu.ContainerDevice) *corev1.Pod {
	pod := tinyPod(ns, name, "")
	pod.Spec.Containers = []corev1.Container{vgpuContainer("main", int64(device.UsedMemory), int64(device.UsedCores))}
	return pod
}

// createBound creates the pod, whose one vGPU container asks the device's slice, and binds it
// to the real node with that device assigned, as vc-scheduler would.
func createBound(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, device vgpu.ContainerDevice) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, cs, pod.Namespace, pod.Name, realNode, assignment(vgpu.PodDevices{{device}}))
}

// wantRefusedAtAllocate waits until the device plugin has refused the bound pod at Allocate
// with the message want: a Warning VGPUAssignmentRefused Event that says exactly want, and the
// kubelet's rejection (the pod Failed, its message holding want) before any container was
// made; the pod's hand-off is marked failed.
func wantRefusedAtAllocate(t *testing.T, cs kubernetes.Interface, ns, name, want string) {
	t.Helper()
	waitEvent(t, cs, 60*time.Second, ns, "involvedObject.name="+name+",reason="+assign.EventReasonRefused,
		"a "+assign.EventReasonRefused+" Event on "+name+" saying "+want, func(ev corev1.Event) bool {
			return ev.Type == corev1.EventTypeWarning && ev.Message == want
		})
	failed := podPhase(t, cs, ns, name, corev1.PodFailed, 60*time.Second)
	if !strings.Contains(failed.Status.Message, want) {
		t.Errorf("the kubelet's rejection of %s %q (%s) does not say %q", name, failed.Status.Message, failed.Status.Reason, want)
	}
	for _, s := range failed.Status.ContainerStatuses {
		if s.ContainerID != "" || s.State.Running != nil || s.RestartCount > 0 {
			t.Errorf("%s: container %s was started: %+v", name, s.Name, s)
		}
	}
	if got := failed.Annotations[vgpu.BindPhaseAnnotation]; got != vgpu.BindPhaseFailed {
		t.Errorf("%s: bind-phase %q, want %q", name, got, vgpu.BindPhaseFailed)
	}
}

// vgpuContainer asks for one vGPU with the memory and cores.
func vgpuContainer(name string, memMiB, cores int64) corev1.Container {
	return corev1.Container{Name: name, Image: tinyImage, Args: []string{"printenv"}, ImagePullPolicy: corev1.PullNever,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			vgpu.DefaultCountResource:  resource.MustParse("1"),
			vgpu.DefaultMemoryResource: *resource.NewQuantity(memMiB, resource.DecimalSI),
			vgpu.DefaultCoresResource:  *resource.NewQuantity(cores, resource.DecimalSI),
		}}}
}

// assignment is what vc-scheduler puts in the Binding for the devices.
func assignment(devices vgpu.PodDevices) map[string]string {
	enc, err := devices.Encode()
	if err != nil {
		panic(err)
	}
	now := vgpu.FormatUnixSeconds(time.Now())
	return map[string]string{
		vgpu.AssignedNodeAnnotation: realNode, vgpu.AssignedTimeAnnotation: now, vgpu.BindTimeAnnotation: now,
		vgpu.AssignedDevicesAnnotation: enc, vgpu.DevicesToAllocateAnnotation: enc, vgpu.BindPhaseAnnotation: vgpu.BindPhaseAllocating,
	}
}

// containerLog waits for the container's printenv output.
func containerLog(t *testing.T, cs kubernetes.Interface, ns, pod, container string) string {
	t.Helper()
	var out string
	eventually(t, 30*time.Second, "log of "+pod+"/"+container, func(ctx context.Context) (bool, string, error) {
		b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		out = string(b)
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Contains(out, "mount "), out, nil
	})
	return out
}

func wantLines(t *testing.T, what, log string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		found := false
		for _, got := range strings.Split(log, "\n") {
			if got == l || (strings.HasSuffix(l, "*") && strings.HasPrefix(got, strings.TrimSuffix(l, "*"))) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no line %q in\n%s", what, l, log)
		}
	}
}

// The device plugin registers with the real kubelet, and a pod carrying a scheduler
// assignment starts with HAMi-core's settings: with a non-GPU container first and two vGPU
// containers, each vGPU container gets its own GPU and limits (upstream mixes them up).
func TestDevicePluginAllocatesPerContainer(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	gpus := devicePlugin(t, cs, 2).gpus
	ctx := context.Background()

	pod := tinyPod(ns, "two-vgpu-containers", "")
	pod.Spec.Containers = []corev1.Container{
		{Name: "plain", Image: tinyImage, ImagePullPolicy: corev1.PullNever},
		vgpuContainer("first", 1000, 20),
		vgpuContainer("second", 3000, 50),
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, cs, ns, pod.Name, realNode, assignment(vgpu.PodDevices{
		{{UUID: gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 20}},
		{{UUID: gpus[1], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 3000, UsedCores: 50}},
	}))
	got := podPhase(t, cs, ns, pod.Name, corev1.PodRunning, 90*time.Second)

	// The limits reach the container twice: in its environment and in the read-only file
	// HAMi-core sets over whatever a process exports (docs/gpu-limits-override.md).
	common := hamiCoreLines()
	wantLines(t, "first", containerLog(t, cs, ns, pod.Name, "first"), append(common,
		"NVIDIA_VISIBLE_DEVICES="+gpus[0], "CUDA_DEVICE_MEMORY_LIMIT_0=1000m", "CUDA_DEVICE_SM_LIMIT=20",
		"overrideEnv CUDA_DEVICE_MEMORY_LIMIT_0=1000m", "overrideEnv CUDA_DEVICE_SM_LIMIT=20", "overrideEnv CUDA_DEVICE_SM_LIMIT_0=20")...)
	wantLines(t, "second", containerLog(t, cs, ns, pod.Name, "second"), append(common,
		"NVIDIA_VISIBLE_DEVICES="+gpus[1], "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50",
		"overrideEnv CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "overrideEnv CUDA_DEVICE_SM_LIMIT=50", "overrideEnv CUDA_DEVICE_SM_LIMIT_0=50")...)
	if got.Annotations[vgpu.BindPhaseAnnotation] != vgpu.BindPhaseSuccess {
		t.Errorf("bind-phase = %q, want %q", got.Annotations[vgpu.BindPhaseAnnotation], vgpu.BindPhaseSuccess)
	}
	if got.Annotations[vgpu.DevicesToAllocateAnnotation] != "" && got.Annotations[vgpu.DevicesToAllocateAnnotation] != ";" {
		t.Errorf("devices-to-allocate not consumed: %q", got.Annotations[vgpu.DevicesToAllocateAnnotation])
	}
}

// hamiCoreLines are what tiny printenv shows in every vGPU container the device plugin serves:
// the cache folder's variable, HAMi-core's mounts, and the cache variable in /overrideEnv.
func hamiCoreLines() []string {
	return []string{"CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu/*", "mount /tmp/vgpu rw", "mount /tmp/vgpulock rw",
		"mount /usr/local/vgpu/libvgpu.so ro", "mount /etc/ld.so.preload ro", "mount /overrideEnv ro",
		"overrideEnv CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu/*"}
}

// Where the chart's admission policy is not installed (none is here), the device plugin itself
// refuses a vGPU pod whose container sets a variable of its slice: the Allocate gets an error,
// so the kubelet rejects the pod before any container is made, and the pod carries a
// VGPUAssignmentRefused Event naming the variable.
func TestDevicePluginRefusesControlVariables(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	plugin := devicePlugin(t, cs, 1)

	device := vgpu.ContainerDevice{UUID: plugin.gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 20}
	pod := podAsking(ns, "sets-sm-limit", device)
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: vgpu.EnvSMLimit, Value: "0"}}
	createBound(t, cs, pod, device)
	wantRefusedAtAllocate(t, cs, ns, pod.Name, controlEnvRefusal(ns, pod.Name, vgpu.AppContainer, "main", vgpu.EnvSMLimit))
}

// Where the chart's admission policy is not installed, the device plugin itself refuses a vGPU
// pod that mounts a volume over HAMi-core's paths (vgpu.CheckMounts), as it refuses control
// variables: a ConfigMap file with subPath over the preload file or /overrideEnv, an emptyDir
// over /usr/local (above the library) or at the cache folder. Each is rejected by the kubelet
// before any container is made, with a VGPUAssignmentRefused Event in vgpu.MountRefusal's
// words. A pod with ordinary mounts, one of them beside the cache folder in /tmp, runs with
// HAMi-core's mounts in place.
func TestDevicePluginRefusesMountsOverHAMiCore(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	plugin := devicePlugin(t, cs, 1)
	ctx := context.Background()

	// What a pod author would put there: an empty preload file, which loads no HAMi-core, and
	// a memory limit of the whole GPU and more.
	files := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hami-core-files"}, Data: map[string]string{
		"ld.so.preload": "", "overrideEnv": vgpu.MemoryLimitEnv(0) + "=81920m\n"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, files, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fromConfigMap := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: files.Name}}}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	device := vgpu.ContainerDevice{UUID: plugin.gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 500, UsedCores: 10}
	withMount := func(name string, source corev1.VolumeSource, mounts ...corev1.VolumeMount) *corev1.Pod {
		pod := podAsking(ns, name, device)
		for _, m := range mounts {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: m.Name, VolumeSource: source})
		}
		pod.Spec.Containers[0].VolumeMounts = mounts
		return pod
	}

	for _, tc := range []struct {
		pod    string
		source corev1.VolumeSource
		mount  corev1.VolumeMount
		over   string
	}{
		{"preload-file", fromConfigMap, corev1.VolumeMount{Name: "files", MountPath: vgpu.ContainerPreloadPath, SubPath: "ld.so.preload"}, vgpu.ContainerPreloadPath},
		{"override-env-file", fromConfigMap, corev1.VolumeMount{Name: "files", MountPath: vgpu.OverrideEnvPath, SubPath: "overrideEnv"}, vgpu.OverrideEnvPath},
		{"usr-local", emptyDir, corev1.VolumeMount{Name: "local", MountPath: "/usr/local"}, vgpu.ContainerLibraryPath},
		{"cache-folder", emptyDir, corev1.VolumeMount{Name: "cache", MountPath: vgpu.ContainerCachePath}, vgpu.ContainerCachePath},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			createBound(t, cs, withMount(tc.pod, tc.source, tc.mount), device)
			wantRefusedAtAllocate(t, cs, ns, tc.pod, (&vgpu.MountRefusal{Namespace: ns, Pod: tc.pod, Kind: vgpu.AppContainer,
				Container: "main", Volume: tc.mount.Name, MountPath: tc.mount.MountPath, Over: tc.over}).Error())
		})
	}

	t.Run("ordinary-mounts", func(t *testing.T) {
		pod := runAssignedPod(t, cs, withMount("ordinary-mounts", emptyDir,
			corev1.VolumeMount{Name: "data", MountPath: "/data"}, corev1.VolumeMount{Name: "scratch", MountPath: "/tmp/scratch"}), device)
		wantLines(t, pod.Name, containerLog(t, cs, ns, pod.Name, "main"), append(hamiCoreLines(), "mount /data rw", "mount /tmp/scratch rw",
			fmt.Sprintf("overrideEnv CUDA_DEVICE_MEMORY_LIMIT_0=%dm", device.UsedMemory))...)
	})
}

// What no layer stops, pinned on the real kubelet node (containerd and runc): an image
// whose /etc/ld.so.preload and /overrideEnv are symbolic links into /dev/shm. The runtime
// orders a container's mounts by the depth of the path each names, before it follows links:
// the device plugin's /etc/ld.so.preload (two deep) is bound where the link points,
// /dev/shm/ld.so.preload, before the runtime's own /dev/shm (two deep, listed after it) is
// mounted over that folder. The container runs (neither the policy nor the plugin sees an
// image) and its loader finds no preload file, so no process of it loads HAMi-core; its
// limits file is hidden too. The README lists this beside a statically linked program: only
// a policy on images stops it. Should a runtime start following links first, this test fails
// and the README is to be corrected.
func TestImageSymlinksOverHAMiCore(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	plugin := devicePlugin(t, cs, 1)
	device := vgpu.ContainerDevice{UUID: plugin.gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 500, UsedCores: 10}
	pod := podAsking(ns, "links", device)
	pod.Spec.Containers[0].Image = tinyLinksImage
	createBound(t, cs, pod, device)
	podPhase(t, cs, ns, pod.Name, corev1.PodRunning, 90*time.Second)
	log := containerLog(t, cs, ns, pod.Name, "main")
	wantLines(t, pod.Name, log, "mount /dev/shm/ld.so.preload ro", "mount /dev/shm/overrideEnv ro", "mount /dev/shm rw",
		"preload error: open /etc/ld.so.preload: no such file or directory")
	lines := strings.Split(log, "\n")
	if slices.Index(lines, "mount /dev/shm/ld.so.preload ro") > slices.Index(lines, "mount /dev/shm rw") {
		t.Errorf("the preload file was mounted after /dev/shm, where the container sees it:\n%s", log)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "overrideEnv ") || strings.HasPrefix(l, "preload /") {
			t.Errorf("the container reads HAMi-core's files through the links (%q): the README's claim is out of date", l)
		}
	}
}

// A restarted plugin loses nothing: the same annotation, the same allocatable, running pods
// keep their devices and cache directories, and new pods are served. It also serves the host
// GPU metrics for every GPU.
func TestDevicePluginRestartLosesNothing(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	plugin := devicePlugin(t, cs, 2)
	ctx := context.Background()
	before := runAssigned(t, cs, ns, "before-restart", vgpu.ContainerDevice{UUID: plugin.gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 1000, UsedCores: 20})
	cacheDir := assign.ContainerCacheDir(plugin.hook, string(before.UID), "main")
	node, err := cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	published := node.Annotations[vgpu.NodeDevicesAnnotation]

	plugin.restart(t)

	node, err = cs.CoreV1().Nodes().Get(ctx, realNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Annotations[vgpu.NodeDevicesAnnotation]; got != published {
		t.Errorf("%s changed across the restart:\n before %s\n after  %s", vgpu.NodeDevicesAnnotation, published, got)
	}
	if _, err := os.Stat(cacheDir); err != nil {
		t.Errorf("the running pod's cache directory is gone after the restart: %v", err)
	}
	runAssigned(t, cs, ns, "after-restart", vgpu.ContainerDevice{UUID: plugin.gpus[1], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 3000, UsedCores: 50})
	still, err := cs.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if still.Status.Phase != corev1.PodRunning || still.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("pod started before the restart: phase %s, restarts %d", still.Status.Phase, still.Status.ContainerStatuses[0].RestartCount)
	}

	metrics := scrape(t, "http://"+pluginMetrics+"/metrics")
	for i, uuid := range plugin.gpus {
		for _, name := range []string{"HostGPUMemoryUsage", "HostCoreUtilization"} {
			series := fmt.Sprintf(`%s{deviceidx="%d",deviceuuid="%s",zone="vGPU"} 0`, name, i, uuid)
			if !strings.Contains(metrics, series) {
				t.Errorf("metrics lack %s", series)
			}
		}
	}
}

// After a kubelet restart (it removes every device-plugin socket) the plugin serves and
// registers all its resources again by itself, and new pods get their devices.
func TestDevicePluginReregistersAfterKubeletRestart(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	plugin := devicePlugin(t, cs, 1)
	sent := plugin.sends()
	socket := filepath.Join(pluginapi.DevicePluginPath, "kubelet.sock")

	restarted := time.Now()
	out, err := exec.Command(filepath.Join(repoRoot(), "hack/testbed/kubelet-restart.sh")).CombinedOutput()
	if err != nil {
		t.Fatalf("restart the kubelet: %v\n%s", err, out)
	}
	var socketBack time.Time
	eventually(t, 60*time.Second, "the kubelet re-creates its socket", func(context.Context) (bool, string, error) {
		fi, err := os.Stat(socket)
		if err != nil || !fi.ModTime().After(restarted) {
			return false, fmt.Sprint(err), nil
		}
		socketBack = fi.ModTime()
		return true, "", nil
	})
	eventually(t, 60*time.Second, "the plugin sends the kubelet its device lists again", func(context.Context) (bool, string, error) {
		return plugin.sends() >= sent+servedResources, tail(plugin.proc.log.String(), 3), nil
	})
	t.Logf("serving the kubelet again at most %v after it re-created its socket", time.Since(socketBack).Round(time.Millisecond))
	plugin.waitAdvertised(t)
	runAssigned(t, cs, ns, "after-kubelet-restart", vgpu.ContainerDevice{UUID: plugin.gpus[0], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 2000, UsedCores: 30})
}

// scrape reads a metrics endpoint, retrying until it answers.
func scrape(t *testing.T, url string) string {
	t.Helper()
	var body string
	eventually(t, 30*time.Second, "scrape "+url, func(ctx context.Context) (bool, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error(), nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	return body
}

// Under load: pods are being admitted while the kubelet restarts, and again while the device
// plugin restarts. The plugin serves the kubelet again by itself after each; every pod either
// runs with exactly its own assignment or fails with the reason the kubelet gives (none is
// left pending), and the pods bound once both are back all run.
func TestKubeletAndPluginRestartUnderLoad(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	plugin := devicePlugin(t, cs, 2)
	waitNodeFreeOfOtherVGPUPods(t, ns)
	const perWave = 6
	devices := map[string]vgpu.ContainerDevice{}
	wave := func(prefix string) {
		for i := range perWave {
			name := fmt.Sprintf("%s-%d", prefix, i)
			device := vgpu.ContainerDevice{UUID: plugin.gpus[i%len(plugin.gpus)], Type: vgpu.DeviceTypeNVIDIA, UsedMemory: 500, UsedCores: 5}
			createBound(t, cs, podAsking(ns, name, device), device)
			devices[name] = device
		}
	}

	sent := plugin.sends()
	restarted := make(chan error, 1)
	go func() {
		out, err := exec.Command(filepath.Join(repoRoot(), "hack/testbed/kubelet-restart.sh")).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v\n%s", err, out)
		}
		restarted <- err
	}()
	wave("during-kubelet-restart")
	if err := <-restarted; err != nil {
		t.Fatalf("restart the kubelet: %v", err)
	}
	kubeletBack := time.Now()
	eventually(t, 60*time.Second, "the plugin serves the restarted kubelet", func(context.Context) (bool, string, error) {
		return plugin.sends() >= sent+servedResources, tail(plugin.proc.log.String(), 3), nil
	})
	reregistered := time.Since(kubeletBack)
	wave("during-plugin-restart")
	pluginRestart := time.Now()
	plugin.restart(t)
	t.Logf("re-registered and serving %s after the kubelet was back (polled every 100 ms); the restarted plugin served in %s",
		reregistered.Round(10*time.Millisecond), time.Since(pluginRestart).Round(10*time.Millisecond))
	wave("after-both")

	ran, failed := 0, map[string]string{}
	for name, device := range devices {
		var pod *corev1.Pod
		eventually(t, 120*time.Second, "pod "+name+" runs or fails with a reason", func(ctx context.Context) (bool, string, error) {
			var err error
			if pod, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, "", err
			}
			switch pod.Status.Phase {
			case corev1.PodRunning, corev1.PodSucceeded:
				return true, "", nil
			case corev1.PodFailed:
				return pod.Status.Reason != "", "failed without a reason", nil
			}
			return false, string(pod.Status.Phase), nil
		})
		if pod.Status.Phase == corev1.PodFailed {
			failed[name] = pod.Status.Reason + ": " + pod.Status.Message
			if strings.HasPrefix(name, "after-both") {
				t.Errorf("pod %s, bound once the kubelet and the plugin were back, failed: %s\nthe kubelet now: %s",
					name, failed[name], kubeletDevices(t))
			}
			continue
		}
		ran++
		wantLines(t, name, containerLog(t, cs, ns, name, "main"), "NVIDIA_VISIBLE_DEVICES="+device.UUID,
			fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_0=%dm", device.UsedMemory), fmt.Sprintf("CUDA_DEVICE_SM_LIMIT=%d", device.UsedCores))
	}
	t.Logf("%d of %d pods ran with their own assignment; %d failed with the kubelet's reason: %v", ran, len(devices), len(failed), failed)
}

// The XID health settings reach the binary as upstream's environment variables (the chart's
// devicePlugin.disableHealthChecks and enableHealthChecks set them): XID 48 no longer makes a
// GPU unhealthy, 13 does, and a word that is no XID is reported by name and skipped.
func TestDevicePluginReadsXIDHealthSettings(t *testing.T) {
	cs := client(t)
	t.Setenv("DP_DISABLE_HEALTHCHECKS", "48, bogus")
	t.Setenv("DP_ENABLE_HEALTHCHECKS", "13")
	plugin := devicePlugin(t, cs, 1)
	eventually(t, 30*time.Second, "the plugin logs its XID policy", func(context.Context) (bool, string, error) {
		log := plugin.proc.log.String()
		return strings.Contains(log, `xids="all XIDs are critical except 31,43,45,48,68,109"`) &&
				strings.Contains(log, "XID health settings partly unreadable") && strings.Contains(log, `\"bogus\" is not an XID number`),
			tail(log, 5), nil
	})
}
