package deviceshare

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// Test objects. Everything lives in namespace "ns".

const (
	h200     = "NVIDIA-NVIDIA H200"
	a100     = "NVIDIA-NVIDIA A100-SXM4-80GB"
	testNS   = "ns"
	resCount = vgpu.DefaultCountResource
	resMem   = vgpu.DefaultMemoryResource
	resCores = vgpu.DefaultCoresResource
	resPct   = vgpu.DefaultMemoryPercentageResource
)

// uuid is the UUID of test GPU i.
func uuid(i int) string { return fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i) }

// gpuSpec is one GPU of a test node.
type gpuSpec struct {
	split, memory int32
	typ, mode     string
	unhealthy     bool
}

// gpus is n GPUs of the same kind, hami-core and healthy.
func gpus(n int, split, memory int32, typ string) []gpuSpec {
	specs := make([]gpuSpec, n)
	for i := range specs {
		specs[i] = gpuSpec{split: split, memory: memory, typ: typ, mode: vgpu.ModeHAMiCore}
	}
	return specs
}

// registerValue encodes the GPUs, numbered from first, as the device plugin publishes them.
func registerValue(first int, specs []gpuSpec) string {
	devices := make([]vgpu.NodeDevice, len(specs))
	for i, s := range specs {
		devices[i] = vgpu.NodeDevice{UUID: uuid(first + i), Count: s.split, Memory: s.memory, Type: s.typ, Healthy: !s.unhealthy, Mode: s.mode}
	}
	value, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		panic(err)
	}
	return value
}

// gpuNode is a node publishing the GPUs, numbered from first, with the matching allocatable
// (as the device plugin advertises it), 64 CPUs and 110 pods.
func gpuNode(name string, first int, specs []gpuSpec) *corev1.Node {
	var count, memory int64
	for _, s := range specs {
		count += int64(s.split)
		memory += int64(s.memory)
	}
	list := st.Resources("64", "", "pods", "110")
	list[resCount] = *resource.NewQuantity(count, resource.DecimalSI)
	list[resMem] = *resource.NewQuantity(memory, resource.DecimalSI)
	list[resCores] = *resource.NewQuantity(100*int64(len(specs)), resource.DecimalSI)
	return st.MakeNode().Name(name).Annotation(vgpu.NodeDevicesAnnotation, registerValue(first, specs)).
		Allocatable(list).Capacity(list).Obj()
}

// ctr is a container whose limits (and, as the API server defaults them, requests) are
// "resource=quantity" pairs.
func ctr(name string, limits ...string) corev1.Container {
	list := corev1.ResourceList{}
	for _, pair := range limits {
		k, v, _ := strings.Cut(pair, "=")
		list[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: list, Requests: list.DeepCopy()}}
}

// vgpuCtr is a container asking for count vGPUs of memory MiB and cores percent each; 0
// leaves the resource out.
func vgpuCtr(name string, count, memory, cores int) corev1.Container {
	limits := []string{fmt.Sprintf("%s=%d", resCount, count), "cpu=100m"}
	if memory > 0 {
		limits = append(limits, fmt.Sprintf("%s=%d", resMem, memory))
	}
	if cores > 0 {
		limits = append(limits, fmt.Sprintf("%s=%d", resCores, cores))
	}
	return ctr(name, limits...)
}

// pod is a pending pod of PodGroup group with the containers.
func pod(name, group string, containers ...corev1.Container) *corev1.Pod {
	return st.MakePod().Namespace(testNS).UID("uid-" + name).Name(name).Group(group).SchedulerName("volcano").
		Containers(containers...).Obj()
}

// annotated adds annotations to the pod.
func annotated(p *corev1.Pod, kv ...string) *corev1.Pod {
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

// runningWith makes the pod run on node with the assignment, as the API server shows a pod
// bound with our Binding.
func runningWith(p *corev1.Pod, node, assignment string) *corev1.Pod {
	asking(p, assignment)
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return annotated(p, vgpu.AssignedNodeAnnotation, node, vgpu.AssignedDevicesAnnotation, assignment,
		vgpu.DevicesToAllocateAnnotation, "", vgpu.BindPhaseAnnotation, vgpu.BindPhaseSuccess)
}

// asking gives a pod without containers one vGPU container per assignment entry, asking
// exactly what the entry books (the ledger books no more than a pod asks).
func asking(p *corev1.Pod, assignment string) {
	if len(p.Spec.Containers) > 0 {
		return
	}
	pd, _ := vgpu.DecodePodDevices(assignment) // an unreadable one stays unread, with no containers
	for i, devices := range pd {
		if len(devices) > 0 {
			d := devices[0]
			p.Spec.Containers = append(p.Spec.Containers, vgpuCtr(fmt.Sprintf("c%d", i), len(devices), int(d.UsedMemory), int(d.UsedCores)))
		}
	}
}

// nodeInfo is the node with the pods on it, and its ledger derived as the cache would.
func nodeInfo(node *corev1.Node, pods ...*corev1.Pod) *api.NodeInfo {
	n := api.NewNodeInfo(node)
	for _, p := range pods {
		n.AddTask(api.NewTaskInfo(p))
	}
	if d := NewDeriverFor(defaultDevices, nil).Derive(n); d != nil {
		n.Devices = map[string]api.Devices{PluginName: d}
	}
	return n
}

// usageOf renders a ledger's bookings, GPU by GPU: "0:2/3000/30 1:0/0/0".
func usageOf(l *ledger) string {
	parts := make([]string, len(l.gpus))
	for i, g := range l.gpus {
		parts[i] = fmt.Sprintf("%d:%d/%d/%d", i, g.used.devices, g.used.memory, g.used.cores)
	}
	return strings.Join(parts, " ")
}

// defaultDevices serves the shipped device configuration, as the scheduler does without a
// device ConfigMap.
var defaultDevices = devicewatch.Static(vgpu.DefaultNvidiaConfig())

// testShared is the state the plugins of the tests share: the shipped device configuration
// and gauges of their own (restartMetrics makes new ones).
var testShared = NewShared(defaultDevices)

// newPlugin builds the plugin with the shipped device configuration.
func newPlugin(args conf.Arguments) (framework.Plugin, error) {
	return NewBuilder(testShared)(args)
}
