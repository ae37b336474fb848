package deviceshare

import (
	"cmp"
	"slices"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// pendingJob is one job's vGPU pods that were waiting for a node when a session closed: how
// many, and when the oldest was created (a scrape shows its age then, so that the age grows
// between sessions as the wait does). The chart's dashboard shows them and its alert on pods
// pending too long reads the age; the series of a job go once none of its vGPU pods waits.
type pendingJob struct {
	namespace, name, queue string
	pods                   int
	oldest                 time.Time
}

// pendingJobs are the jobs whose pods asking for vGPU wait for a node: Pending, or Pipelined
// onto resources being released. Sorted by namespace and name, for a steady scrape.
func (p *plugin) pendingJobs(jobs map[api.JobID]*api.JobInfo) []pendingJob {
	var out []pendingJob
	for _, job := range jobs {
		var pj pendingJob
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
			}
		}
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
