package deviceshare

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// readings keeps what the deriver read from each pod on a node: its decoded assignment and
// its parsed requests. The cache derives a node again after every change to it, and each
// derivation walks every pod on the node; without this, every bind re-read all of them
// (a node of 80 vGPU pods decoded 80 assignments per bind). A reading holds while the pod's
// resource version, the assignment's text and the resource names are those it was read
// from.
type readings struct {
	mu    sync.Mutex
	byUID map[types.UID]*reading
	// used are the readings asked for since the last sweep; a sweep, once byUID reaches
	// limit, drops the others (pods gone, or replaced by a newer version).
	used  map[types.UID]struct{}
	limit int
}

// minReadingsLimit is the fewest readings kept before a sweep.
const minReadingsLimit = 4096

type reading struct {
	resourceVersion, assignment string
	names                       vgpu.ResourceNames
	devices                     vgpu.PodDevices
	devicesErr                  error
	requests                    []vgpu.ContainerRequest
	requestsErr                 error
}

func newReadings() *readings {
	return &readings{byUID: map[types.UID]*reading{}, used: map[types.UID]struct{}{}, limit: minReadingsLimit}
}

// of is the task's reading under names; ok is false when the task has no assignment. The
// returned values are shared: callers must not change them.
func (r *readings) of(t *api.TaskInfo, names vgpu.ResourceNames) (rd *reading, ok bool) {
	value, ok := assignmentText(t)
	if !ok {
		return nil, false
	}
	if t.Pod == nil {
		return read(t, value, names), true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	uid := t.Pod.UID
	if rd := r.byUID[uid]; rd != nil && rd.resourceVersion == t.Pod.ResourceVersion && rd.assignment == value && rd.names == names {
		r.used[uid] = struct{}{}
		return rd, true
	}
	rd = read(t, value, names)
	r.byUID[uid] = rd
	r.used[uid] = struct{}{}
	if len(r.byUID) >= r.limit {
		for id := range r.byUID {
			if _, ok := r.used[id]; !ok {
				delete(r.byUID, id)
			}
		}
		r.used = map[types.UID]struct{}{}
		r.limit = max(minReadingsLimit, 2*len(r.byUID))
	}
	return rd, true
}

func read(t *api.TaskInfo, value string, names vgpu.ResourceNames) *reading {
	rd := &reading{assignment: value, names: names}
	rd.devices, rd.devicesErr = decodeAssignment(value)
	if t.Pod != nil {
		rd.resourceVersion = t.Pod.ResourceVersion
		rd.requests, rd.requestsErr = vgpu.PodRequests(t.Pod, names)
	}
	return rd
}
