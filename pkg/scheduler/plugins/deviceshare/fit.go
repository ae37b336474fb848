package deviceshare

import (
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// fitter places a pod's vGPU containers on one node's GPUs, as upstream's deviceshare does
// with the fixes of its development branch (docs/protocol.md describes the assignment). Containers are placed in order, each vGPU of a container on a different GPU; a
// later container may share a GPU with an earlier one and sees what it took. Among the GPUs
// that can take a vGPU, the policy picks:
//
//   - binpack: the fullest first: most memory booked, then most vGPUs;
//   - spread: the emptiest first: fewest vGPUs, then least memory booked;
//   - none: the first in the node's list.
//
// Ties go to the GPU listed first. Node scores, once the pod is booked:
//
//   - binpack: the sum over all the node's GPUs of 100 x each one's share of memory booked.
//     For a pod on one GPU of an otherwise idle node that is upstream's device score; counting
//     the GPUs the pod does not use too makes a partly used node beat an idle one when the pod
//     has to open a fresh GPU on either. Upstream scores only the chosen GPUs, so those nodes
//     tie, and the nodeorder plugin's balance scores then send each new GPU's first pod to a
//     new node: binpack touched every node of a 100-node cluster where 26 would do
//     (cmd/vc-scheduler's BenchmarkPacking);
//   - spread: the sum over the chosen GPUs of 100 x each one's share of memory left free, so
//     that an idle GPU anywhere beats doubling up on a node that merely has more free memory.
//
// The fitter keeps scratch space between calls, so that checking a node allocates nothing,
// and uses it only as far as the pod needs: a pod with one vGPU, the common case, needs none.
// It is not safe for concurrent use and needs not be: actions search nodes one at a time.
type fitter struct {
	policy policy
	// assignments gives the devices another task on the node holds, for the pod-group spread
	// filter.
	assignments func(*api.TaskInfo) vgpu.PodDevices

	// Per GPU of the node being checked:
	pending []usage // what the pod's earlier vGPUs took; used when the pod has several
	chosen  []bool  // taken by the container being placed; used when it has several
	grouped []bool  // used by the pod's group; used with the pod-group spread policy
}

// fit places every container of r on the node's GPUs, booked as l says. It returns the
// node's score and, when record is set, the assignment; or the constraint that kept a
// container off the node. l is not changed.
func (f *fitter) fit(r *podRequest, node *api.NodeInfo, l *ledger, record bool) (float64, vgpu.PodDevices, constraint) {
	if int(r.maxCount) > len(l.gpus) {
		return 0, nil, gpuCount
	}
	f.prepare(r, node, l)
	var pd vgpu.PodDevices
	if record {
		pd = make(vgpu.PodDevices, len(r.containers))
	}
	score := f.idleScore(l)
	for ci := range r.containers {
		c := &r.containers[ci]
		if c.Count > 1 {
			clear(f.chosen)
		}
		for range c.Count {
			i, adds, failed := f.pick(r, c, l)
			if i < 0 {
				return 0, nil, failed
			}
			g := &l.gpus[i]
			before := f.booked(r, l, i)
			score += f.gain(g, before, before.plus(adds))
			if record {
				pd[ci] = append(pd[ci], g.sharing.device(g, adds))
			}
			if c.Count > 1 {
				f.chosen[i] = true
			}
			if r.vgpus > 1 {
				f.pending[i] = f.pending[i].plus(adds)
			}
		}
	}
	return score, pd, fits
}

// prepare sizes the scratch space for the node and clears what the pod will use.
func (f *fitter) prepare(r *podRequest, node *api.NodeInfo, l *ledger) {
	n := len(l.gpus)
	if cap(f.pending) < n {
		f.pending, f.chosen, f.grouped = make([]usage, n), make([]bool, n), make([]bool, n)
	}
	f.pending, f.chosen, f.grouped = f.pending[:n], f.chosen[:n], f.grouped[:n]
	if r.vgpus > 1 {
		clear(f.pending)
	}
	if r.groupSpread {
		f.markGroupGPUs(r, node, l)
	}
}

// markGroupGPUs marks the GPUs that other pods of the task's PodGroup use on the node.
func (f *fitter) markGroupGPUs(r *podRequest, node *api.NodeInfo, l *ledger) {
	clear(f.grouped)
	for _, t := range node.Tasks {
		if t.Job != r.task.Job || t.UID == r.task.UID {
			continue
		}
		for _, devices := range f.assignments(t) {
			for _, d := range devices {
				if i := l.index(d.PhysicalUUID()); i >= 0 {
					f.grouped[i] = true
				}
			}
		}
	}
}

// pick chooses the GPU for one vGPU of container c: the first, in the policy's order, of the
// GPUs that pass the filters, can take it and do not already hold one of the container's
// vGPUs. It returns the GPU and what the vGPU books there; without one, -1 and the
// constraint the GPUs got furthest to.
func (f *fitter) pick(r *podRequest, c *vgpu.ContainerRequest, l *ledger) (int, usage, constraint) {
	best, failed := -1, fits
	var bestUsage, bestAdds usage
	for i := range l.gpus {
		if c.Count > 1 && f.chosen[i] {
			continue
		}
		g := &l.gpus[i]
		v := r.filter(g)
		if v == fits && r.groupSpread && f.grouped[i] {
			v = podGroupShared
		}
		if v != fits {
			failed = max(failed, v)
			continue
		}
		u := f.booked(r, l, i)
		adds, v := g.sharing.fit(g, u, c.MemoryOn(g.memory), c.ReserveOn(g.reserve), c.Cores)
		if v != fits {
			failed = max(failed, v)
			continue
		}
		if best < 0 || f.before(u, bestUsage) {
			best, bestUsage, bestAdds = i, u, adds
			if f.policy == policyNone {
				break
			}
		}
	}
	return best, bestAdds, failed
}

// booked is what GPU i holds: the ledger's bookings and the pod's own so far.
func (f *fitter) booked(r *podRequest, l *ledger, i int) usage {
	if r.vgpus > 1 {
		return l.gpus[i].used.plus(f.pending[i])
	}
	return l.gpus[i].used
}

// before says whether a GPU booked as a comes before one booked as b in the policy's order.
func (f *fitter) before(a, b usage) bool {
	switch f.policy {
	case policyBinpack:
		return a.memory > b.memory || (a.memory == b.memory && a.devices > b.devices)
	case policySpread:
		return a.devices < b.devices || (a.devices == b.devices && a.memory < b.memory)
	}
	return false
}

// idleScore is the node's score before the pod: under binpack, every GPU's share of memory
// booked; under the other policies nothing.
func (f *fitter) idleScore(l *ledger) float64 {
	if f.policy != policyBinpack {
		return 0
	}
	var score float64
	for i := range l.gpus {
		if g := &l.gpus[i]; g.memory > 0 {
			score += 100 * float64(g.used.memory) / float64(g.memory)
		}
	}
	return score
}

// gain is what one vGPU on g, booked as before and as after once placed, adds to the node's
// score.
func (f *fitter) gain(g *gpu, before, after usage) float64 {
	if g.memory <= 0 {
		return 0
	}
	switch f.policy {
	case policyBinpack:
		return 100 * float64(after.memory-before.memory) / float64(g.memory)
	case policySpread:
		return 100 * (1 - float64(after.memory)/float64(g.memory))
	}
	return 0
}
