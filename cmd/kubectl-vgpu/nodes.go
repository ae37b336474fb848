package main

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// gpuBooking is one GPU and what the pods on its node book on it; -o json and -o yaml print
// it as is, so its field names are part of the plugin's interface.
type gpuBooking struct {
	Node    string `json:"node"`
	Index   int    `json:"index"`
	UUID    string `json:"uuid"`
	Type    string `json:"type"`
	Mode    string `json:"mode"`
	Healthy bool   `json:"healthy"`
	// Memory is in MiB: the node's vgpu-memory units times its memory factor.
	MemoryBookedMiB int64 `json:"memoryBookedMiB"`
	MemoryTotalMiB  int64 `json:"memoryTotalMiB"`
	// Cores are percent of the GPU's compute; a pod without a cores limit books 0.
	CoresBooked int64 `json:"coresBooked"`
	CoresTotal  int64 `json:"coresTotal"`
	// Slices are vGPUs: each takes one of the GPU's split slots.
	SlicesUsed  int   `json:"slicesUsed"`
	SlicesSplit int32 `json:"slicesSplit"`
	// Pods are the namespace/name of the pods that book the GPU, sorted.
	Pods []string `json:"pods"`
	// mibPerUnit is the node's (vgpuNode.mibPerUnit), which turns a request into MiB.
	mibPerUnit int64
}

// wholeGPUCores is a GPU's compute in vgpu-cores.
const wholeGPUCores = 100

// listGPUs lists every advertised GPU with what the pods of every namespace book on it
// (bookGPUs).
func listGPUs(ctx context.Context, client kubernetes.Interface) ([]gpuBooking, []string, error) {
	nodes, warnings, err := listVGPUNodes(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	if len(nodes) == 0 {
		return nil, warnings, errNoVGPUNodes
	}
	pods, err := listPods(ctx, client, "")
	if err != nil {
		return nil, nil, err
	}
	gpus, podWarnings := bookGPUs(nodes, pods)
	warnings = append(warnings, podWarnings...)
	sort.Strings(warnings)
	return gpus, warnings, nil
}

// bookGPUs is the ledger: every GPU of nodes with the sum of the assignments of the pods
// that hold their devices (vgpu.HoldsDevices: bound and not finished). A pod whose
// assignment does not decode, or names a GPU its node does not list, is reported and left
// out of the sums.
func bookGPUs(nodes []*vgpuNode, pods []corev1.Pod) ([]gpuBooking, []string) {
	var warnings []string
	type gpuKey struct{ node, uuid string }
	used := map[gpuKey]vgpu.GPUUsage{}
	users := map[gpuKey][]string{}
	byName := make(map[string]*vgpuNode, len(nodes))
	for _, n := range nodes {
		byName[n.name] = n
	}
	for i := range pods {
		pod := &pods[i]
		value, ok := pod.Annotations[vgpu.AssignedDevicesAnnotation]
		if !ok || !vgpu.HoldsDevices(pod) {
			continue
		}
		assigned, err := vgpu.DecodePodDevices(value)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("pod %s/%s on node %s: %s: %v", pod.Namespace, pod.Name, pod.Spec.NodeName, vgpu.AssignedDevicesAnnotation, err))
			continue
		}
		node := byName[pod.Spec.NodeName]
		for uuid, usage := range assigned.UsageByGPU() {
			if node == nil || node.index(uuid) < 0 {
				warnings = append(warnings, fmt.Sprintf("pod %s/%s books GPU %s, which node %s does not advertise", pod.Namespace, pod.Name, uuid, pod.Spec.NodeName))
				continue
			}
			key := gpuKey{pod.Spec.NodeName, uuid}
			used[key] = used[key].Add(usage)
			users[key] = append(users[key], pod.Namespace+"/"+pod.Name)
		}
	}
	var gpus []gpuBooking
	for _, n := range nodes {
		for i, g := range n.gpus {
			key := gpuKey{n.name, g.UUID}
			u := used[key]
			names := append([]string{}, users[key]...) // [] rather than null in json
			sort.Strings(names)
			gpus = append(gpus, gpuBooking{
				Node: n.name, Index: i, UUID: g.UUID, Type: g.Type, Mode: g.Mode, Healthy: g.Healthy,
				MemoryBookedMiB: u.Memory * n.mibPerUnit, MemoryTotalMiB: int64(g.Memory) * n.mibPerUnit,
				CoresBooked: u.Cores, CoresTotal: wholeGPUCores,
				SlicesUsed: u.Devices, SlicesSplit: g.Count,
				Pods: names, mibPerUnit: n.mibPerUnit,
			})
		}
	}
	return gpus, warnings
}
