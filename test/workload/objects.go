package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// NodeObject is a node of a run: the three vGPU resources in its status and the device plugin's
// register annotation, as our device plugin leaves a node. Callers add what makes it theirs
// (kwok's annotation, labels, taints).
func (w *Workload) NodeObject(name string) *corev1.Node {
	s := w.Node
	devices := make([]vgpu.NodeDevice, s.GPUs)
	for i := range devices {
		devices[i] = vgpu.NodeDevice{UUID: nvml.FakeUUID(name, i), Count: s.Split, Memory: s.GPUMemoryMiB,
			Type: vgpu.DeviceTypeForModel(s.GPUModel), Healthy: true, Mode: vgpu.ModeHAMiCore}
	}
	register, err := vgpu.EncodeNodeDevices(devices)
	if err != nil {
		panic(fmt.Sprintf("workload %s: node %s: %v", w.Name, name, err)) // validate admits only encodable shapes
	}
	gpus := int64(s.GPUs)
	res := corev1.ResourceList{
		corev1.ResourceCPU:         resource.MustParse(s.CPU),
		corev1.ResourceMemory:      resource.MustParse(s.Memory),
		corev1.ResourcePods:        *resource.NewQuantity(int64(s.Pods), resource.DecimalSI),
		vgpu.DefaultCountResource:  *resource.NewQuantity(int64(s.Split)*gpus, resource.DecimalSI),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(int64(s.GPUMemoryMiB)*gpus, resource.DecimalSI),
		vgpu.DefaultCoresResource:  *resource.NewQuantity(100*gpus, resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{vgpu.NodeDevicesAnnotation: register},
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// Job is one PodGroup and its pods (a single pod has a PodGroup of one, as Volcano's
// controller gives it).
type Job struct {
	PodGroup *schedulingv1beta1.PodGroup
	Pods     []*corev1.Pod
}

// Jobs is a run's pods in namespace ns, in creation order: kinds one after another, or in
// turn when the arrival interleaves them.
func (w *Workload) Jobs(ns, schedulerName string, pods int) []Job {
	var perKind [][]Job
	for _, k := range w.kinds(pods) {
		shape := w.Mix[k.shape]
		var jobs []Job
		for j := 0; j < k.pods/shape.Gang; j++ {
			jobs = append(jobs, w.Job(ns, schedulerName, fmt.Sprintf("k%d-%05d", k.shape, j), shape))
		}
		perKind = append(perKind, jobs)
	}
	var out []Job
	if !w.Arrival.Interleave {
		for _, jobs := range perKind {
			out = append(out, jobs...)
		}
		return out
	}
	for i := 0; ; i++ {
		added := false
		for _, jobs := range perKind {
			if i < len(jobs) {
				out, added = append(out, jobs[i]), true
			}
		}
		if !added {
			return out
		}
	}
}

// Job is one job of kind p named name: its PodGroup (minMember p.Gang, the default queue,
// minResources as Volcano's job controller computes them from the pod template) and pods
// name-0 to name-<Gang-1>.
func (w *Workload) Job(ns, schedulerName, name string, p PodShape) Job {
	template := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: asWritten(p)}}}}
	minResources := corev1.ResourceList{}
	minresources.AddScaled(minResources, minresources.PerPod(template), int32(p.Gang))
	job := Job{PodGroup: &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{MinMember: int32(p.Gang), Queue: "default",
			PriorityClassName: p.PriorityClass, MinResources: &minResources},
	}}
	for i := 0; i < p.Gang; i++ {
		job.Pods = append(job.Pods, w.pod(ns, schedulerName, fmt.Sprintf("%s-%d", name, i), name, p))
	}
	return job
}

// asWritten is a container's resources as a user writes them: cpu and memory requests, the
// vGPU resources under limits only.
func asWritten(p PodShape) corev1.ResourceRequirements {
	limits := corev1.ResourceList{
		vgpu.DefaultCountResource:  *resource.NewQuantity(int64(p.VGPUs), resource.DecimalSI),
		vgpu.DefaultMemoryResource: *resource.NewQuantity(p.MemoryMiB, resource.DecimalSI),
	}
	if p.Cores > 0 {
		limits[vgpu.DefaultCoresResource] = *resource.NewQuantity(p.Cores, resource.DecimalSI)
	}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(p.CPU), corev1.ResourceMemory: resource.MustParse(p.Memory)}
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}
}

func (w *Workload) pod(ns, schedulerName, name, group string, p PodShape) *corev1.Pod {
	// The API server defaults a container's missing requests to its limits; the in-process
	// benchmark has no API server, so the requests are written out.
	resources := asWritten(p)
	for r, q := range resources.Limits {
		resources.Requests[r] = q
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: group}},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, PriorityClassName: p.PriorityClass, Containers: []corev1.Container{{Name: "main", Image: "localhost/tiny:v1",
			Resources: resources}}},
	}
}
