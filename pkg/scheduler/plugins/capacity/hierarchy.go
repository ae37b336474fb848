package capacity

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

// InvalidQueueReason is the reason of the Unschedulable condition of a PodGroup whose queue
// takes no jobs in the hierarchy: the root, a queue with children, a queue out of the tree.
// Upstream's scheduler has none (its admission webhook refuses such jobs, and its capacity
// plugin stops scheduling altogether when one slips through); the message is the webhook's.
const InvalidQueueReason = "InvalidQueue"

// openTree registers the plugin's functions over the queue hierarchy:
//   - a queue's real capability is what its parent's leaves once its siblings have their
//     guarantees, within its own capability; the root's is the cluster;
//   - a queue deserves its spec.deserved within its real capability and, below the root's
//     children, within its parent's deserved share where the parent declares one (a child
//     cannot be owed what its parent is not; a department that declares only a capability
//     leaves its teams their own shares), and never less than its guarantee; the root
//     deserves what its children do;
//   - enqueue and allocate check the queue and every ancestor; only leaves take jobs;
//   - reclaim takes from queues above their deserved share, never below a guarantee at any
//     level, and with ancestorReclaimLevel also weighs the ancestors' shares; it takes first
//     from the queues nearest the reclaimer's in the tree.
func (cp *capacityPlugin) openTree(ssn *framework.Session) {
	ledger := quota.NewTreeLedger(ssn, ssn.QueueTree)
	cp.ledger = ledger
	shareDeserved(ledger, ledger.Queues[queuetree.Root])
	for _, q := range ledger.Sorted() {
		q.UpdateShare()
		klog.V(4).InfoS("Queue accounts", "queue", q.Info.Name, "parent", q.Info.Parent, "deserved", q.Deserved,
			"realCapability", q.RealCapability, "allocated", q.Allocated, "request", q.Request, "inqueue", q.Inqueue,
			"elastic", q.Elastic, "share", q.Share)
	}

	ssn.AddQueueOrderFn(PluginName, ledger.CompareQueuesInTree)
	ssn.AddJobValidFn(PluginName, func(job *api.JobInfo) *framework.ValidateResult {
		if why := ledger.LeafRefusal(job.Queue); why != "" {
			return &framework.ValidateResult{Reason: InvalidQueueReason, Message: why}
		}
		return nil
	})
	ssn.AddJobEnqueueableFn(PluginName, ledger.JobEnqueueable)
	ssn.AddJobEnqueuedFn(PluginName, ledger.JobEnqueued)
	ssn.AddAllocatableFn(PluginName, ledger.FitsRealCapability)
	ssn.AddPreemptiveFn(PluginName, ledger.MayReclaim(cp.ancestorReclaimLevel))
	ssn.AddReclaimableFn(PluginName, ledger.ReclaimVictims(cp.ancestorReclaimLevel))
	ssn.AddVictimQueueOrderFn(PluginName, ledger.VictimQueueOrder)
	ssn.AddEventHandler(ledger.EventHandler())
}

// shareDeserved sets the deserved share of the queues under parent, top down.
func shareDeserved(l *quota.Ledger, parent *quota.Queue) {
	isRoot := parent.Info.UID == queuetree.Root
	total := api.EmptyResource()
	for _, c := range l.Children(parent.Info.UID) {
		d := declaredDeserved(c)
		if !isRoot {
			quota.MinNamed(d, parent.Deserved)
		}
		c.Deserved = quota.Max(d, c.Guarantee)
		total.Add(c.Deserved)
		shareDeserved(l, c)
	}
	switch {
	case isRoot:
		parent.Deserved = total
	case len(total.ExceedingWithDimension(parent.Deserved, quota.NamedBy(total, parent.Deserved))) > 0:
		klog.V(2).InfoS("Child queues deserve more than their parent; they compete for its share", "queue", parent.Info.Name,
			"deserved", parent.Deserved, "childrenDeserved", total)
	}
}

// explainRefusals gives each job the hierarchy keeps out (its queue is not a leaf, or is out
// of the tree) an Unschedulable condition and, when the condition is new, a Warning event,
// both with the reason. Gang's condition, written before, is replaced: the queue, not the
// gang, is why the job waits.
func explainRefusals(ssn *framework.Session, ledger *quota.Ledger) {
	now := metav1.Now()
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		why := ledger.LeafRefusal(job.Queue)
		if why == "" {
			continue
		}
		klog.V(3).InfoS("Job's queue takes no jobs; job not scheduled", "podGroup", klog.KRef(job.Namespace, job.Name),
			"queue", job.Queue, "reason", why)
		if !hasCondition(job.PodGroup.Status.Conditions, why) {
			ssn.RecordJobEvent(job, corev1.EventTypeWarning, string(schedulingv1beta1.PodGroupUnschedulableType), why)
		}
		ssn.UpdatePodGroupCondition(job, schedulingv1beta1.PodGroupCondition{
			Type:               schedulingv1beta1.PodGroupUnschedulableType,
			Status:             corev1.ConditionTrue,
			TransitionID:       string(ssn.UID),
			LastTransitionTime: now,
			Reason:             InvalidQueueReason,
			Message:            why,
		})
	}
}

// hasCondition: the PodGroup already says why, so the event was emitted before.
func hasCondition(conds []schedulingv1beta1.PodGroupCondition, message string) bool {
	for _, c := range conds {
		if c.Type == schedulingv1beta1.PodGroupUnschedulableType && c.Reason == InvalidQueueReason && c.Message == message {
			return true
		}
	}
	return false
}
