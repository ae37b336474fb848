// Package capacity is the queue plugin that replaces proportion where queues declare their
// share themselves: a queue deserves its spec.deserved (within its real capability,
// never below its guarantee) instead of a weight-based slice, and its real capability is the
// hard cap on what it may allocate. Enqueue admission, queue order and the accounts kept
// during the session are proportion's (package quota).
//
// For reclaim, a queue takes back only up to its deserved share, from queues above theirs
// and never below their guarantee. There is no Overused function, as upstream.
//
// With enableHierarchy the queues form a tree (hierarchy.go): only leaves take jobs, every
// check runs up the tree, and a queue out of the tree holds its own jobs back, not
// everybody's.
package capacity

import (
	"fmt"

	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota"
)

// PluginName is the plugin's name in the scheduler configuration.
const PluginName = "capacity"

// AncestorReclaimLevel is upstream v1.15's argument: with a hierarchy, how many levels above
// the leaves reclaim also weighs the ancestors' deserved shares (0, the default: none).
const AncestorReclaimLevel = "ancestorReclaimLevel"

type capacityPlugin struct {
	ancestorReclaimLevel int
	// ledger is this session's queue accounts, reported as metrics when the session closes.
	ledger *quota.Ledger
}

// ArgumentKeys are the arguments New reads.
var ArgumentKeys = conf.ArgumentKeys{AncestorReclaimLevel}

// New builds the plugin. A negative or non-integer ancestorReclaimLevel is an error naming it.
func New(args conf.Arguments) (framework.Plugin, error) {
	cp := &capacityPlugin{}
	if err := args.GetInt(&cp.ancestorReclaimLevel, AncestorReclaimLevel); err != nil {
		return nil, err
	}
	if cp.ancestorReclaimLevel < 0 {
		return nil, conf.InvalidArgument(AncestorReclaimLevel, cp.ancestorReclaimLevel,
			fmt.Sprintf("level %d is negative; 0 weighs only the leaf queues", cp.ancestorReclaimLevel))
	}
	return cp, nil
}

func (*capacityPlugin) Name() string { return PluginName }

func (cp *capacityPlugin) OnSessionOpen(ssn *framework.Session) {
	if ssn.QueueTree != nil && ssn.HierarchyEnabled(PluginName) {
		cp.openTree(ssn)
		return
	}
	ledger := quota.NewLedger(ssn)
	cp.ledger = ledger
	// A queue declares its deserved share whether or not it has jobs; the idle ones' is
	// only reported.
	for _, q := range ledger.Idle {
		q.Deserved = declaredDeserved(q)
	}
	for _, q := range ledger.Sorted() {
		q.Deserved = declaredDeserved(q)
		q.UpdateShare()
		klog.V(4).InfoS("Queue accounts", "queue", q.Info.Name, "deserved", q.Deserved, "realCapability", q.RealCapability,
			"allocated", q.Allocated, "request", q.Request, "inqueue", q.Inqueue, "elastic", q.Elastic, "share", q.Share)
	}

	ssn.AddQueueOrderFn(PluginName, ledger.CompareQueues)
	ssn.AddJobEnqueueableFn(PluginName, ledger.JobEnqueueable)
	ssn.AddJobEnqueuedFn(PluginName, ledger.JobEnqueued)
	ssn.AddAllocatableFn(PluginName, ledger.FitsRealCapability)
	// Reclaim: a queue takes back only up to its deserved share, from queues above theirs.
	ssn.AddPreemptiveFn(PluginName, ledger.MayReclaim(0))
	ssn.AddReclaimableFn(PluginName, ledger.ReclaimVictims(0))
	ssn.AddEventHandler(ledger.EventHandler())
}

// OnSessionClose publishes the queue metrics. volcano_queue_overused says whether a queue
// holds its deserved share, as upstream's capacity reports it, although this plugin makes no
// decision on it.
func (cp *capacityPlugin) OnSessionClose(ssn *framework.Session) {
	if cp.ledger.IsTree() {
		explainRefusals(ssn, cp.ledger)
	}
	cp.ledger.ReportMetrics(ssn.Metrics())
}

// declaredDeserved is spec.deserved cut to the real capability (dimensions the capability does
// not name stay as declared) and raised to the guarantee.
func declaredDeserved(q *quota.Queue) *api.Resource {
	deserved := api.NewResource(q.Info.Queue.Spec.Deserved)
	deserved.MinDimension(q.RealCapability, api.MissingAsInfinity)
	return quota.Max(deserved, q.Guarantee)
}
