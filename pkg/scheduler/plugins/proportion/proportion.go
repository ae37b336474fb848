// Package proportion is the queue plugin of upstream's default configuration: it
// divides the cluster between the queues that have work by weight (water-filling, within each
// queue's real capability and request, never below its guarantee), admits jobs against the
// queues' real capabilities, lets a queue allocate up to its deserved share, orders queues by
// priority then share, and reports queues that hold their share as overused.
//
// For reclaim, a queue may take back resources only up to its deserved share (Preemptive), and
// only from queues above theirs, never below their guarantee (Reclaimable).
package proportion

import (
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota"
)

// PluginName is the plugin's name in the scheduler configuration.
const PluginName = "proportion"

type proportionPlugin struct {
	// ledger is this session's queue accounts, reported as metrics when the session closes.
	ledger *quota.Ledger
}

// ArgumentKeys is empty: the plugin reads no arguments.
var ArgumentKeys = conf.ArgumentKeys{}

// New builds the plugin; it takes no arguments.
func New(conf.Arguments) (framework.Plugin, error) {
	return &proportionPlugin{}, nil
}

func (*proportionPlugin) Name() string { return PluginName }

func (pp *proportionPlugin) OnSessionOpen(ssn *framework.Session) {
	ledger := quota.NewLedger(ssn)
	pp.ledger = ledger
	divideByWeight(ledger)
	for _, q := range ledger.Sorted() {
		klog.V(4).InfoS("Queue accounts", "queue", q.Info.Name, "weight", q.Info.Weight, "deserved", q.Deserved,
			"realCapability", q.RealCapability, "allocated", q.Allocated, "request", q.Request,
			"inqueue", q.Inqueue, "elastic", q.Elastic, "share", q.Share)
	}

	ssn.AddQueueOrderFn(PluginName, ledger.CompareQueues)
	ssn.AddJobEnqueueableFn(PluginName, ledger.JobEnqueueable)
	ssn.AddJobEnqueuedFn(PluginName, ledger.JobEnqueued)
	ssn.AddAllocatableFn(PluginName, ledger.FitsDeserved)
	// Reclaim: a queue takes back only up to its deserved share, from queues above theirs.
	ssn.AddPreemptiveFn(PluginName, ledger.FitsDeserved)
	ssn.AddReclaimableFn(PluginName, ledger.Reclaimable)
	ssn.AddOverusedFn(PluginName, func(queue *api.QueueInfo) bool { return overused(ledger, queue) })
	ssn.AddEventHandler(ledger.EventHandler())
}

// OnSessionClose publishes the queue metrics. A queue with no job deserves nothing here:
// water-filling divides the cluster only between queues that have work.
func (pp *proportionPlugin) OnSessionClose(ssn *framework.Session) {
	pp.ledger.ReportMetrics(ssn.Metrics())
}

// overused: the queue already holds its deserved share in every dimension of Deserved (cpu
// and memory always), so allocate passes it by.
func overused(ledger *quota.Ledger, queue *api.QueueInfo) bool {
	q := ledger.Queues[queue.UID]
	if q == nil {
		return false
	}
	over := q.HoldsDeserved()
	if over {
		klog.V(4).InfoS("Queue holds its deserved share", "queue", q.Info.Name, "deserved", q.Deserved,
			"allocated", q.Allocated, "share", q.Share)
	}
	return over
}
