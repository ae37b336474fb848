package deviceshare

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// podRequest is what a task asks of a node's GPUs, worked out once per task so that the
// per-node checks only compare numbers and strings already prepared.
type podRequest struct {
	// shape names what the request asks of GPUs within the session (fitMemo); never 0 once
	// the plugin has numbered it (see plugin.shapeOf).
	shape uint64
	task  *api.TaskInfo
	// containers are the vGPU requests in container order (vgpu.PodRequests); entry i of the
	// assignment belongs to entry i here.
	containers []vgpu.ContainerRequest
	// maxCount is the most vGPUs one container asks for; 0 when the pod wants no GPU.
	maxCount int32
	// vgpus is the number of vGPUs of all containers.
	vgpus int32

	// useTypes and noUseTypes are the upper-cased type filters; noUseTypes only when
	// useTypes is empty, as upstream.
	useTypes, noUseTypes []string
	useUUIDs, noUseUUIDs []string
	// wantsMIG and wantsHAMiCore: the GPU mode the pod pins (vgpu.ModeAnnotation); neither
	// for any.
	wantsMIG, wantsHAMiCore bool
	// groupSpread keeps the pod off GPUs other pods of its PodGroup use.
	groupSpread bool
	// filtered: some type or UUID filter is set.
	filtered bool

	// err says why the pod's requests or annotations cannot be read: no node can take it.
	err error
}

// newPodRequest reads the task's vGPU requests and device annotations.
func newPodRequest(task *api.TaskInfo, names vgpu.ResourceNames) *podRequest {
	r := &podRequest{task: task}
	pod := task.Pod
	if pod == nil {
		return r
	}
	r.containers, r.err = vgpu.PodRequests(pod, names)
	for _, c := range r.containers {
		r.maxCount = max(r.maxCount, c.Count)
		r.vgpus += c.Count
	}
	if !r.wantsGPUs() || r.err != nil {
		return r
	}
	switch mode := pod.Annotations[vgpu.ModeAnnotation]; mode {
	case "":
	case vgpu.ModeHAMiCore:
		r.wantsHAMiCore = true
	case vgpu.ModeMIG:
		r.wantsMIG = true
	default:
		r.err = fmt.Errorf("pod %s: %s %q: want %q or %q", task.Key(), vgpu.ModeAnnotation, mode, vgpu.ModeHAMiCore, vgpu.ModeMIG)
	}
	r.useTypes = annotationList(pod.Annotations[vgpu.UseGPUTypeAnnotation], strings.ToUpper)
	if len(r.useTypes) == 0 {
		r.noUseTypes = annotationList(pod.Annotations[vgpu.NoUseGPUTypeAnnotation], strings.ToUpper)
	}
	r.useUUIDs = annotationList(pod.Annotations[vgpu.UseGPUUUIDAnnotation], nil)
	r.noUseUUIDs = annotationList(pod.Annotations[vgpu.NoUseGPUUUIDAnnotation], nil)
	r.groupSpread = pod.Annotations[vgpu.PodGroupPolicyAnnotation] == vgpu.PodGroupPolicySpread
	r.filtered = r.wantsMIG || r.wantsHAMiCore || len(r.useTypes)+len(r.noUseTypes)+len(r.useUUIDs)+len(r.noUseUUIDs) > 0
	return r
}

// appendShapeKey appends to dst everything of the request that fitting it to GPUs reads
// (besides the group of a pod-group spread request): requests with equal keys fit every
// node alike. Filter items are length-prefixed, so that no item can pass for two.
func (r *podRequest) appendShapeKey(dst []byte) []byte {
	for _, c := range r.containers {
		for _, v := range [...]int32{c.Count, c.Memory, c.MemoryPercentage, c.Cores} {
			dst = strconv.AppendInt(dst, int64(v), 10)
			dst = append(dst, ',')
		}
		dst = append(dst, ';')
	}
	for _, list := range [...][]string{r.useTypes, r.noUseTypes, r.useUUIDs, r.noUseUUIDs} {
		for _, item := range list {
			dst = strconv.AppendInt(dst, int64(len(item)), 10)
			dst = append(dst, ':')
			dst = append(dst, item...)
		}
		dst = append(dst, ';')
	}
	return strconv.AppendBool(strconv.AppendBool(dst, r.wantsMIG), r.wantsHAMiCore)
}

// wantsGPUs: some container asks for at least one vGPU.
func (r *podRequest) wantsGPUs() bool { return r.maxCount > 0 }

// annotationList splits a comma-separated annotation, trimming blanks and dropping empty
// items (an empty list filters nothing), each item passed through normalize when given.
func annotationList(value string, normalize func(string) string) []string {
	var list []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if normalize != nil {
			item = normalize(item)
		}
		list = append(list, item)
	}
	return list
}

// filter is the first constraint the GPU fails whatever its usage, or fits. The common case,
// a shared and healthy GPU and a pod without filters, is decided inline.
func (r *podRequest) filter(g *gpu) constraint {
	if g.sharing != nil && g.healthy && !r.filtered {
		return fits
	}
	return r.filterGPU(g)
}

func (r *podRequest) filterGPU(g *gpu) constraint {
	switch {
	case r.wantsMIG && g.info.Mode != vgpu.ModeMIG, r.wantsHAMiCore && g.info.Mode == vgpu.ModeMIG:
		// Upstream compares the pod's mode with the node's (its last GPU's); each GPU's is
		// the same on nodes the device plugin sets up, which run all GPUs in one mode. mps
		// GPUs are shared as hami-core.
		return modeNotWanted
	case g.sharing == nil:
		return migGeometryUnknown
	case !g.healthy:
		return unhealthy
	case len(r.useTypes) > 0 && !containsAny(g.info.upperType, r.useTypes):
		return typeNotWanted
	case len(r.noUseTypes) > 0 && containsAny(g.info.upperType, r.noUseTypes):
		return typeAvoided
	case slices.Contains(r.noUseUUIDs, g.info.UUID):
		return uuidAvoided
	case len(r.useUUIDs) > 0 && !slices.Contains(r.useUUIDs, g.info.UUID):
		return uuidNotWanted
	}
	return fits
}

// containsAny: some item is a substring of text.
func containsAny(text string, items []string) bool {
	for _, item := range items {
		if strings.Contains(text, item) {
			return true
		}
	}
	return false
}
