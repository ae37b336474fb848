package deviceshare

import (
	"errors"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// The hand-over of GPUs from victims to a preemptor.
//
// A victim's slices stay booked in the ledger (gpu.used) until its pod is gone: binding fits
// on the ledger and must never over-book a GPU. Choosing victims and pipelining a preemptor,
// though, need the GPUs as they will be, as NodeInfo.FutureIdle gives them CPU and memory.
// future is that view: a scratch copy of the ledger with the slices of the node's releasing
// tasks (evicted in this session or earlier, or terminating) taken off and the promises of
// its pipelined tasks (plugin.promised) put on, so that two preemptors are not promised the
// same slice. A task pipelined onto those slices is bound by a later cycle's allocate, with an
// assignment fitted on the ledger, once the victims are gone.
//
// A releasing pod's bookings do not say which MIG instances it holds, so a GPU in mig mode
// stays booked in the future view until the pod is gone: preemption frees no MIG instance yet.

// future is the node's ledger once its releasing tasks are gone and its pipelined tasks
// placed, in the plugin's scratch space (valid until the next call); nil when neither is on
// the node, the ledger itself being the future then.
func (p *plugin) future(node *api.NodeInfo, l *ledger) *ledger {
	if node.Releasing.IsEmpty() && node.Pipelined.IsEmpty() {
		return nil
	}
	gpus := p.scratch.gpus[:0]
	p.scratch = *l
	p.scratch.lastFit = fitMemo{}
	p.scratch.gpus = append(gpus, l.gpus...)
	f := &p.scratch
	if l.derived != nil && !node.Releasing.IsEmpty() {
		for _, b := range l.derived.bookings {
			if t := node.Tasks[b.task]; t != nil && t.Status == api.Releasing {
				f.release(b)
			}
		}
	}
	if !node.Pipelined.IsEmpty() {
		for uid, t := range node.Tasks {
			if pd, ok := p.promised[uid]; ok && t.Status == api.Pipelined {
				f.book(pd, 1)
			}
		}
	}
	return f
}

// release takes booking b off its GPU, unless the GPU is in mig mode (see above).
func (l *ledger) release(b booking) {
	g := &l.gpus[b.gpu]
	if g.info.Mode == vgpu.ModeMIG {
		return
	}
	g.used.devices--
	g.used.memory -= int64(b.memory)
	g.used.cores -= b.cores
}

// fitsLater says whether r fits the node once its releasing tasks are gone (future), when it
// does not fit now.
func (p *plugin) fitsLater(r *podRequest, node *api.NodeInfo, l *ledger) bool {
	f := p.future(node, l)
	if f == nil {
		return false
	}
	_, _, failed := p.fitter.fit(r, node, f, false)
	return failed == fits
}

// promiseTo fits the pipelined task r on the node's future GPUs and records the promise; the
// error names the constraint that failed.
func (p *plugin) promiseTo(r *podRequest, node *api.NodeInfo, l *ledger) error {
	f := p.future(node, l)
	if f == nil {
		f = l
	}
	_, pd, failed := p.fitter.fit(r, node, f, true)
	if failed != fits {
		return errors.New(p.verdicts.constraints[failed].Reasons[0])
	}
	p.promised[r.task.UID] = pd
	return nil
}
