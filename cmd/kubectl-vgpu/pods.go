package main

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// pendingGPU stands where the GPU of a vGPU not yet assigned would be.
const pendingGPU = "<pending>"

// podVGPU is one vGPU a pod holds, or asks for while it has no assignment; -o json and -o
// yaml print it as is, so its field names are part of the plugin's interface.
type podVGPU struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	// Node is empty while the pod is not bound.
	Node      string `json:"node"`
	Phase     string `json:"phase"`
	Container string `json:"container"`
	// GPU is the assigned device (a GPU UUID, or a MIG instance id), or "<pending>".
	GPU string `json:"gpu"`
	// Index is the GPU's position on the node, or -1 where unknown (pending, or a GPU the
	// node does not advertise).
	Index int `json:"index"`
	// MemoryMiB is what the vGPU books, or asks for; 0 with MemoryPercent set.
	MemoryMiB int64 `json:"memoryMiB"`
	// MemoryPercent is a pending request for a share of a GPU's memory, which becomes MiB
	// only once a GPU is chosen.
	MemoryPercent int32 `json:"memoryPercent,omitempty"`
	Cores         int32 `json:"cores"`
}

// listPodVGPUs lists the vGPUs of the pods of namespace (every namespace when empty) that
// carry an assignment or ask for vGPU resources (under the default resource names), sorted
// by namespace and name.
func listPodVGPUs(ctx context.Context, client kubernetes.Interface, namespace string) ([]podVGPU, []string, error) {
	pods, err := listPods(ctx, client, namespace)
	if err != nil {
		return nil, nil, err
	}
	nodes, warnings, err := listVGPUNodes(ctx, client)
	if err != nil {
		// A user who may list pods but not nodes still sees the assignments, in units.
		warnings = []string{fmt.Sprintf("GPU indexes unknown, memory in vgpu-memory units: %v", err)}
	}
	byName := make(map[string]*vgpuNode, len(nodes))
	for _, n := range nodes {
		byName[n.name] = n
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	var vgpus []podVGPU
	for i := range pods {
		rows, _, err := vgpusOf(&pods[i], byName)
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		vgpus = append(vgpus, rows...)
	}
	return vgpus, warnings, nil
}

// vgpusOf is a pod's rows, its assignment's or what it asks for while it has none, and its
// requests; byName holds the nodes that advertise vGPUs. Assignment entry i belongs to the
// pod's i-th vGPU container (vgpu.PodRequests), which names the container.
func vgpusOf(pod *corev1.Pod, byName map[string]*vgpuNode) ([]podVGPU, []vgpu.ContainerRequest, error) {
	requests, err := vgpu.PodRequests(pod, vgpu.DefaultResourceNames())
	if err != nil {
		return nil, nil, err
	}
	assigned, err := vgpu.DecodePodDevices(pod.Annotations[vgpu.AssignedDevicesAnnotation])
	if err != nil {
		return nil, nil, fmt.Errorf("pod %s/%s: %s: %v", pod.Namespace, pod.Name, vgpu.AssignedDevicesAnnotation, err)
	}
	base := podVGPU{Namespace: pod.Namespace, Pod: pod.Name, Node: pod.Spec.NodeName, Phase: string(pod.Status.Phase), Index: -1}
	if len(assigned) > 0 {
		return assignedVGPUs(base, assigned, requests, byName[pod.Spec.NodeName]), requests, nil
	}
	return pendingVGPUs(base, requests), requests, nil
}

// assignedVGPUs are the rows of a pod's assignment; node is nil when its node is unknown.
func assignedVGPUs(base podVGPU, assigned vgpu.PodDevices, requests []vgpu.ContainerRequest, node *vgpuNode) []podVGPU {
	var rows []podVGPU
	for entry, devices := range assigned {
		for _, d := range devices {
			row := base
			if entry < len(requests) {
				row.Container = requests[entry].ContainerName
			}
			row.GPU = d.UUID
			row.MemoryMiB = int64(d.UsedMemory)
			row.Cores = d.UsedCores
			if node != nil {
				row.Index = node.index(d.PhysicalUUID())
				row.MemoryMiB *= node.mibPerUnit
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// pendingVGPUs are the rows of what a pod without an assignment asks for: one per vGPU.
// Its memory is in vgpu-memory units, which are MiB where the device plugins keep the
// factor at 1; the node that will decide the factor is not chosen yet.
func pendingVGPUs(base podVGPU, requests []vgpu.ContainerRequest) []podVGPU {
	var rows []podVGPU
	for _, r := range requests {
		for range r.Count {
			row := base
			row.Container = r.ContainerName
			row.GPU = pendingGPU
			row.MemoryMiB = int64(r.Memory)
			if r.Memory == 0 {
				row.MemoryPercent = r.MemoryPercentage
			}
			row.Cores = r.Cores
			rows = append(rows, row)
		}
	}
	return rows
}
