package upstreamtest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PluginRelease is an upstream device plugin release whose vgpu-number Allocate is modelled.
type PluginRelease string

const (
	// PluginV1_11 is the classic tree: the pod is the oldest one assigned to the node.
	PluginV1_11 PluginRelease = "v1.11.0"
	// PluginV1_12 is the rebased tree: the pod must also have, summed over all its
	// containers, exactly as many devices left to allocate as kubelet asks for.
	PluginV1_12 PluginRelease = "v1.12.0"
)

// PluginReleases are the releases modelled, oldest first.
var PluginReleases = []PluginRelease{PluginV1_11, PluginV1_12}

// Served is what one upstream Allocate call did.
type Served struct {
	// Pod is the pod chosen, "namespace/name".
	Pod string
	// Container is the name of the container upstream believes it serves:
	// pod.Spec.Containers[i] for the i-th assignment entry. Kubelet applies the response to
	// the container it admits, whatever this says; upstream uses this one's name for the
	// cache directory and its env for the CUDA_DISABLE_CONTROL check.
	Container string
	// CacheDir is the per-container cache directory name, "<pod UID>_<container>".
	CacheDir string
	// Env is the response's environment (without the per-call random cache file name).
	Env map[string]string
	// Preload says whether /etc/ld.so.preload is mounted (HAMi-core active).
	Preload bool
}

// ErrNoPod is returned when no pod qualifies ("cannot get valid pod" upstream).
var ErrNoPod = errors.New("upstream plugin: no valid pod")

// Allocate models one kubelet Allocate call with n device IDs on the vgpu-number server of
// node, with memory factor factor. pods are the cluster's pods; the chosen pod's annotations
// are changed in place as upstream's PATCHes would change them (devices-to-allocate, and at
// the end bind-phase and vgpu-time). On an error after a pod was chosen the pod is marked
// failed, as upstream does. Only hami-core mode is modelled.
func (r PluginRelease) Allocate(pods []*corev1.Pod, node string, n int, factor int32) (Served, error) {
	pod, err := r.pickPod(pods, node, n)
	if err != nil {
		return Served{}, err
	}
	served, err := r.serve(pod, n, factor)
	if err != nil {
		pod.Annotations[BindPhaseKey] = "failed"
		pod.Annotations[AssignedTimeKey] = Released
		return served, err
	}
	return served, nil
}

// pickPod: the pods assigned to node (vgpu-node), no check of phase or bind phase; the one
// with the smallest vgpu-time (missing or unreadable counts as MaxUint64), the first listed
// on a tie. v1.12 first drops the pods whose devices-to-allocate does not hold exactly n
// devices in total. (v1.11 also starts its search from the first pod of the whole list even
// when it is on another node; callers pass only this node's pods, which hides that bug.)
func (r PluginRelease) pickPod(pods []*corev1.Pod, node string, n int) (*corev1.Pod, error) {
	var oldest *corev1.Pod
	var oldestTime uint64
	for _, p := range pods {
		if p.Annotations[AssignedNodeKey] != node {
			continue
		}
		if r == PluginV1_12 {
			pd, err := DecodePodDevices(p.Annotations[DevicesToAllocateKey])
			if err != nil {
				continue
			}
			total := 0
			for _, devices := range pd {
				total += len(devices)
			}
			if total != n {
				continue
			}
		}
		t, err := strconv.ParseUint(p.Annotations[AssignedTimeKey], 10, 64)
		if err != nil {
			t = math.MaxUint64
		}
		if oldest == nil || t < oldestTime {
			oldest, oldestTime = p, t
		}
	}
	if oldest == nil {
		return nil, fmt.Errorf("%w for %d devices on node %s", ErrNoPod, n, node)
	}
	return oldest, nil
}

func (r PluginRelease) serve(pod *corev1.Pod, n int, factor int32) (Served, error) {
	served := Served{Pod: pod.Namespace + "/" + pod.Name}
	pd, err := DecodePodDevices(pod.Annotations[DevicesToAllocateKey])
	if err != nil {
		return served, err
	}
	// The next request: the first entry holding devices of type NVIDIA; its position in the
	// annotation indexes pod.Spec.Containers.
	idx := -1
	var devices []Device
	for i, entry := range pd {
		for _, d := range entry {
			if d.Type == "NVIDIA" {
				devices = append(devices, d)
			}
		}
		if len(devices) > 0 {
			idx = i
			break
		}
	}
	if idx < 0 {
		return served, errors.New("upstream plugin: no container entry with NVIDIA devices left")
	}
	if idx >= len(pod.Spec.Containers) {
		return served, fmt.Errorf("upstream plugin: entry %d but the pod has %d containers (index out of range)", idx, len(pod.Spec.Containers))
	}
	ctr := &pod.Spec.Containers[idx]
	served.Container = ctr.Name
	served.CacheDir = string(pod.UID) + "_" + ctr.Name
	if len(devices) != n {
		return served, fmt.Errorf("upstream plugin: device number not matched: entry %d has %d, kubelet asks %d", idx, len(devices), n)
	}
	ids := make([]string, len(devices))
	served.Env = map[string]string{"CUDA_DEVICE_SM_LIMIT": strconv.Itoa(int(devices[0].UsedCores))}
	for i, d := range devices {
		ids[i] = d.ID
		served.Env[fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_%d", i)] = fmt.Sprintf("%dm", int64(d.UsedMem)*int64(factor))
	}
	served.Env["NVIDIA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
	served.Preload = true
	for _, e := range ctr.Env {
		if e.Name == "CUDA_DISABLE_CONTROL" {
			served.Preload = false
		}
	}

	// Erase the entry's NVIDIA devices and write the rest back.
	var kept []Device
	for _, d := range pd[idx] {
		if d.Type != "NVIDIA" {
			kept = append(kept, d)
		}
	}
	pd[idx] = kept
	rest := EncodePodDevices(pd)
	pod.Annotations[DevicesToAllocateKey] = rest
	// Done once no device of any entry remains.
	if !strings.Contains(rest, "GPU") {
		pod.Annotations[BindPhaseKey] = "success"
		pod.Annotations[AssignedTimeKey] = Released
	}
	return served, nil
}
