//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// gpuNode adds a kwok node with GPUs of memMiB each, split ways, that only this env's
// scheduler sees; it returns the GPUs as the node annotation lists them. The node's
// allocatable vgpu-number is split x gpus, as the device plugin advertises it, unless
// advertised is above 0.
func (e *schedulerEnv) gpuNode(name string, gpus int, split, memMiB int32, advertised int64) []vgpu.NodeDevice {
	e.t.Helper()
	return e.modelNode(name, "NVIDIA GeForce RTX 3070 Ti", gpus, split, memMiB, advertised, true)
}

// modelNode is gpuNode for GPUs of a model; untainted, it takes pods that do not tolerate
// kwok's taint, such as the tutorials' manifests.
func (e *schedulerEnv) modelNode(name, model string, gpus int, split, memMiB int32, advertised int64, tainted bool) []vgpu.NodeDevice {
	e.t.Helper()
	devices := make([]vgpu.NodeDevice, gpus)
	for i := range devices {
		devices[i] = vgpu.NodeDevice{UUID: nvml.FakeUUID(e.name+"-"+name, i), Count: split, Memory: memMiB,
			Type: "NVIDIA-" + model, Healthy: true, Mode: vgpu.ModeHAMiCore}
	}
	register, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		e.t.Fatal(err)
	}
	number := int64(split) * int64(gpus)
	if advertised > 0 {
		number = advertised
	}
	n := kwokNode(e.name+"-"+name, register, number, int64(memMiB)*int64(gpus), 100*int64(gpus))
	n.Labels[envLabel] = e.name
	if !tainted {
		n.Spec.Taints = nil
	}
	if _, err := e.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create node %s: %v", n.Name, err)
	}
	e.t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	return devices
}

// vgpuGang creates a PodGroup of pods pods, all needed, each asking for one vGPU.
func (e *schedulerEnv) vgpuGang(name, queue string, pods int, memMiB, cores int64) {
	e.t.Helper()
	e.vgpuGangOfClass(name, queue, "", pods, pods, memMiB, cores)
}

// vgpuGangOfClass is vgpuGang with a priority class for the PodGroup and its pods ("" for
// none) and min of its pods needed; each mutate changes every pod before it is created.
func (e *schedulerEnv) vgpuGangOfClass(name, queue, class string, min, pods int, memMiB, cores int64, mutate ...func(*corev1.Pod)) {
	e.t.Helper()
	e.gangWith(name, queue, class, min, pods, "", nil, nil, func(_ int, pod *corev1.Pod) {
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			vgpu.DefaultCountResource:  resource.MustParse("1"),
			vgpu.DefaultMemoryResource: *resource.NewQuantity(memMiB, resource.DecimalSI),
			vgpu.DefaultCoresResource:  *resource.NewQuantity(cores, resource.DecimalSI),
		}
		for _, m := range mutate {
			m(pod)
		}
	})
}

// gpuBooking is what the bound pods' assignments book on one GPU.
type gpuBooking struct{ pods, memory, cores int32 }

// checkLedger rebuilds every GPU's booking from the bound pods' annotations, as a restarted
// scheduler does, and reports each pod whose assignment is missing or names a GPU of another
// node, and each GPU booked past its split count, memory or 100 cores.
func (e *schedulerEnv) checkLedger(ctx context.Context, nodes map[string][]vgpu.NodeDevice) (bound int, problems []string, err error) {
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, nil, err
	}
	bound, problems = ledgerProblems(pods.Items, nodes)
	return bound, problems, nil
}

// asksVGPU: the pod asks for vGPUs under the shipped resource names, or carries an assignment
// anyway (which the ledger then counts).
func asksVGPU(pod *corev1.Pod) bool {
	requests, err := vgpu.PodRequests(pod, vgpu.DefaultResourceNames())
	return err != nil || len(requests) > 0 || pod.Annotations[vgpu.AssignedDevicesAnnotation] != ""
}

// ledgerProblems is checkLedger's judgement of the pods given: a pod bound and not yet gone
// from the API server holds its slices, terminating or not, until its phase says all its
// containers have stopped (Succeeded or Failed), when the kubelet frees its devices too.
func ledgerProblems(pods []corev1.Pod, nodes map[string][]vgpu.NodeDevice) (bound int, problems []string) {
	booked := map[string]*gpuBooking{}
	for _, p := range pods {
		if !vgpu.HoldsDevices(&p) || !asksVGPU(&p) {
			continue
		}
		bound++
		assigned, err := vgpu.DecodePodDevices(p.Annotations[vgpu.AssignedDevicesAnnotation])
		if err != nil || len(assigned) != 1 || len(assigned[0]) != 1 {
			problems = append(problems, fmt.Sprintf("pod %s on %s: assignment %q (%v)", p.Name, p.Spec.NodeName, p.Annotations[vgpu.AssignedDevicesAnnotation], err))
			continue
		}
		d := assigned[0][0]
		key := p.Spec.NodeName + "/" + d.UUID
		if booked[key] == nil {
			booked[key] = &gpuBooking{}
		}
		booked[key].pods++
		booked[key].memory += d.UsedMemory
		booked[key].cores += d.UsedCores
	}
	for node, devices := range nodes {
		for _, gpu := range devices {
			b := booked[node+"/"+gpu.UUID]
			delete(booked, node+"/"+gpu.UUID)
			if b != nil && (b.pods > gpu.Count || b.memory > gpu.Memory || b.cores > 100) {
				problems = append(problems, fmt.Sprintf("GPU %s of %s double-booked: %d pods, %d MiB, %d cores (has %d slots, %d MiB)",
					gpu.UUID, node, b.pods, b.memory, b.cores, gpu.Count, gpu.Memory))
			}
		}
	}
	for key := range booked {
		problems = append(problems, "pods booked on "+key+", which is not a GPU of that node")
	}
	return bound, problems
}

// The scheduler is killed (SIGKILL) 20 times (100 in make chaos) while gangs arrive, each time
// just as it starts binding or at a random point: no GPU slot is ever booked twice, and once it
// is left running every pod is bound and no gang is bound in part.
// The demand fills the GPUs exactly (4 pods of 2000 MiB on each 8192 MiB GPU split 4), so a
// slot booked twice would overflow a GPU and a slot lost to a restart would leave a pod
// Pending.
func TestSchedulerKillsNeverDoubleBook(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{}
	for _, name := range []string{"gpu-a", "gpu-b", "gpu-c"} {
		nodes[e.name+"-"+name] = e.gpuNode(name, 2, 4, 8192, 0)
	}
	const gangs, gangSize = 8, 3
	kills := chaosRounds(20, 100)
	every := kills / gangs // a new gang every this many kills
	queue := e.queue("chaos", nil)
	seed := seedConf(t)

	check := func(when string) int {
		t.Helper()
		bound, problems, err := e.checkLedger(ctx, nodes)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", when, p)
		}
		return bound
	}
	midBind := 0
	for kill := 1; kill <= kills; kill++ {
		if n := (kill-1)/every + 1; (kill-1)%every == 0 && n <= gangs {
			e.vgpuGang(fmt.Sprintf("gang-%02d", n), queue, gangSize, 2000, 20)
		}
		before := check(fmt.Sprintf("before start %d", kill))
		sched, _ := e.scheduler(seed)
		// Kill it as soon as it has bound something (mid-gang, most likely), or at a random
		// point of its first cycles.
		deadline := time.Now().Add(time.Duration(300+rand.IntN(2700)) * time.Millisecond)
		for time.Now().Before(deadline) {
			bound, _, err := e.boundPods(ctx, "gang-")
			if err != nil {
				t.Fatal(err)
			}
			if bound > before {
				midBind++
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		sched.kill()
		check(fmt.Sprintf("after kill %d", kill))
	}
	t.Logf("%d of %d kills came just after the scheduler had bound something", midBind, kills)
	e.scheduler(seed)
	e.waitBound("gang-", gangs*gangSize, 120*time.Second)
	if bound := check("at the end"); bound != gangs*gangSize {
		t.Errorf("%d pods bound at the end, want %d", bound, gangs*gangSize)
	}
	if partial, err := e.gangsWhole(ctx, "gang-"); err != nil || len(partial) > 0 {
		t.Errorf("gangs partly bound: %v %v", partial, err)
	}
}

// With deviceshare.NodeLockEnable the binds of vGPU pods to one node wait for the device
// plugin to release the node lock: the first pod is bound and locks the node, the second
// stays Pending with the lock's message until the lock is released, then is bound.
func TestNodeLockSerialisesBinds(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	e.gpuNode("locked", 1, 4, 8192, 0)
	node := e.name + "-locked"
	queue := e.queue("lock", nil)
	seed := seedConf(t)
	conf := strings.Replace(seed, "deviceshare.SchedulePolicy: binpack", "deviceshare.SchedulePolicy: binpack\n      deviceshare.NodeLockEnable: true", 1)
	if conf == seed {
		t.Fatal("the seed configuration has no deviceshare.SchedulePolicy line to extend")
	}
	e.scheduler(conf)
	e.vgpuGang("first", queue, 1, 1000, 10)
	e.waitBound("first-", 1, 60*time.Second)
	e.vgpuGang("second", queue, 1, 1000, 10)

	const refused = "node %s locked for %s/second-0 hamivgpu lockname node %s has been locked within 5 minutes"
	want := fmt.Sprintf(refused, node, e.ns, node)
	waitEvent(t, e.cs, 60*time.Second, e.ns, "involvedObject.name=second-0", "second-0 refused for the lock",
		func(ev corev1.Event) bool { return strings.Contains(ev.Message, want) })
	if b, _, _ := e.boundPods(ctx, "second-"); b != 0 {
		t.Fatalf("second-0 bound while the node was locked")
	}

	// What the device plugin does once it has served first-0.
	patch := []byte(`{"metadata":{"annotations":{"` + vgpu.NodeLockAnnotation + `":null}}}`)
	if _, err := e.cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitBound("second-", 1, 60*time.Second)
	n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, held := n.Annotations[vgpu.NodeLockAnnotation]; !held {
		t.Errorf("second-0 was bound without taking the node lock")
	}
}

// 10 GPUs split 2 take 20 one-vGPU pods and refuse the 21st with the slot constraint. The
// nodes advertise more vgpu-number than they have slots (a device plugin configured with
// another split), so that the GPU ledger, not the kubelet's count, has to refuse it.
func TestSplitTwoTakesTwentyPods(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	for i := range 5 {
		e.gpuNode(fmt.Sprintf("split-%d", i), 2, 2, 8192, 100)
	}
	queue := e.queue("split", nil)
	seed := seedConf(t)
	e.scheduler(seed)
	for i := range 20 {
		e.vgpuGang(fmt.Sprintf("fits-%02d", i), queue, 1, 1000, 10)
	}
	e.waitBound("fits-", 20, 60*time.Second)
	e.vgpuGang("extra", queue, 1, 1000, 10)
	const reason = "no free vGPU slot on the GPU (deviceSplitCount)"
	waitEvent(t, e.cs, 60*time.Second, e.ns, "involvedObject.name=extra-0", "extra-0 refused for want of a slot",
		func(ev corev1.Event) bool {
			return ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, reason)
		})
	if b, _, _ := e.boundPods(ctx, "extra-"); b != 0 {
		t.Errorf("the 21st pod was bound")
	}
	nodes := map[string][]vgpu.NodeDevice{}
	list, err := e.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: envLabel + "=" + e.name})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		devices, err := vgpu.DecodeNodeDevices(n.Annotations[vgpu.NodeDevicesAnnotation])
		if err != nil {
			t.Fatal(err)
		}
		nodes[n.Name] = devices
	}
	if bound, problems, err := e.checkLedger(ctx, nodes); err != nil || len(problems) > 0 || bound != 20 {
		t.Errorf("ledger: %d bound, problems %v, err %v", bound, problems, err)
	}
}

// A pod that asks for no vGPU, put on a GPU node with a hand-written assignment booking the
// whole GPU (where the admission policy is not installed), books nothing: the scheduler still
// places the pods that ask, and says on the forged pod what it did not book.
func TestForgedAssignmentBooksNothing(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	gpus := e.gpuNode("forged", 1, 2, 8192, 0)
	e.scheduler(seedConf(t))
	forged := tinyPod(e.ns, "forged", "")
	forged.Spec.NodeName = e.name + "-forged"
	forged.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists}}
	forged.Annotations = map[string]string{
		vgpu.AssignedNodeAnnotation:    forged.Spec.NodeName,
		vgpu.AssignedDevicesAnnotation: gpus[0].UUID + ",NVIDIA,8192,100:;" + gpus[0].UUID + ",NVIDIA,8192,100:",
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	queue := e.queue("forged", nil)
	e.vgpuGang("honest", queue, 2, 4000, 50)
	e.waitBound("honest-", 2, 60*time.Second)
	waitEvent(t, e.cs, 30*time.Second, e.ns, "involvedObject.name=forged", "the forged pod told what was not booked",
		func(ev corev1.Event) bool {
			return ev.Reason == "VGPUAssignmentNotBooked" && strings.Contains(ev.Message, "nothing booked: no container requests volcano.sh/vgpu-number")
		})
}
