package deviceshare

import (
	"cmp"
	"slices"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// pendingJob is one job's vGPU pods that were waiting for a node when a session closed: how
// many, and when the oldest was created (a scrape shows its age then, so that the age grows
// between sessions as the wait does). The chart's dashboard shows them and its alert on pods
// pending too long reads the age; the series of a job go once none of its vGPU pods waits.
type pendingJob struct {
	namespace, name, queue string
	pods                   int
	oldest                 time.Time
	// slices are the distinct vGPU requests of its waiting containers, for the
	// fragmentation gauge.
	slices []vgpu.ContainerRequest
}

// sliceKey is what a vGPU request books on a GPU by: its memory, or its share of the GPU's.
type sliceKey struct{ memory, percentage int32 }

// pendingJobs are the jobs whose pods asking for vGPU wait for a node: Pending, or Pipelined
// onto resources being released. Sorted by namespace and name, for a steady scrape.
func (p *plugin) pendingJobs(jobs map[api.JobID]*api.JobInfo) []pendingJob {
	var out []pendingJob
	var seenScratch []sliceKey
	for _, job := range jobs {
		var pj pendingJob
		seen := seenScratch[:0]
		for _, status := range [...]api.TaskStatus{api.Pending, api.Pipelined} {
			for _, t := range job.TaskStatusIndex[status] {
				if t.Pod == nil || t.Resreq.Get(p.names.Count) <= 0 {
					continue
				}
				created := t.Pod.CreationTimestamp.Time
				if pj.pods == 0 || created.Before(pj.oldest) {
					pj.oldest = created
				}
				pj.pods++
				// The pods of a job mostly ask alike: one whose vGPU totals an earlier one
				// asked is not read again.
				key := sliceKey{int32(t.Resreq.Get(p.names.Memory)), int32(t.Resreq.Get(p.names.MemoryPercentage))}
				if slices.Contains(seen, key) {
					continue
				}
				seen = append(seen, key)
				requests, err := vgpu.PodRequests(t.Pod, p.names)
				if err != nil {
					continue
				}
				for _, c := range requests {
					if c.Count > 0 && !slices.ContainsFunc(pj.slices, func(o vgpu.ContainerRequest) bool { return sameSlice(o, c) }) {
						pj.slices = append(pj.slices, c)
					}
				}
			}
		}
		seenScratch = seen
		if pj.pods > 0 {
			pj.namespace, pj.name, pj.queue = job.Namespace, job.Name, string(job.Queue)
			out = append(out, pj)
		}
	}
	slices.SortFunc(out, func(a, b pendingJob) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	return out
}

// sameSlice: the two requests book alike on any GPU.
func sameSlice(a, b vgpu.ContainerRequest) bool {
	return a.Memory == b.Memory && a.MemoryPercentage == b.MemoryPercentage
}

// fragmented is the memory free on the nodes' usable GPUs that cannot hold the largest slice
// one of the pending jobs asks for there (what the consolidate action can gather): a GPU
// counts when it is free in part and too small a part; one that no pending slice fits even
// empty, or nothing waits, counts nothing.
func (p *plugin) fragmented(nodes map[string]*api.NodeInfo, pending []pendingJob) int64 {
	var asks []vgpu.ContainerRequest
	for _, j := range pending {
		for _, c := range j.slices {
			if !slices.ContainsFunc(asks, func(o vgpu.ContainerRequest) bool { return sameSlice(o, c) }) {
				asks = append(asks, c)
			}
		}
	}
	if len(asks) == 0 {
		return 0
	}
	// GPUs of one size and reserve need the same: worked out once for each.
	type size struct{ memory, reserve int32 }
	needs := map[size]int64{}
	var total int64
	for _, node := range nodes {
		l := ledgerOf(node)
		if !hasGPUs(l) || p.unusable(l) != nil {
			continue
		}
		for i := range l.gpus {
			g := &l.gpus[i]
			if !g.healthy || g.info.Mode == vgpu.ModeMIG {
				continue
			}
			need, ok := needs[size{g.memory, g.reserve}]
			if !ok {
				for _, c := range asks {
					if b := int64(c.BookedOn(g.memory, g.reserve)); b <= int64(g.memory) {
						need = max(need, b)
					}
				}
				needs[size{g.memory, g.reserve}] = need
			}
			if free := int64(g.memory) - g.used.memory; free > 0 && free < need {
				total += free
			}
		}
	}
	return total
}
