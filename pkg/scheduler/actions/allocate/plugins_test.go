package allocate

import (
	"errors"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Tiny stand-ins for the priority, gang and predicates plugins, with just the behaviour the
// action depends on. The real plugins live in their own packages and are tested there.

// priorityStub orders queues, jobs and tasks by priority, highest first.
type priorityStub struct{}

func (priorityStub) Name() string { return "priority" }
func (priorityStub) OnSessionOpen(ssn *framework.Session) {
	ssn.AddQueueOrderFn("priority", func(l, r *api.QueueInfo) int { return int(r.Priority) - int(l.Priority) })
	ssn.AddJobOrderFn("priority", func(l, r *api.JobInfo) int { return int(r.Priority) - int(l.Priority) })
	ssn.AddTaskOrderFn("priority", func(l, r *api.TaskInfo) int { return int(r.Priority) - int(l.Priority) })
}
func (priorityStub) OnSessionClose(*framework.Session) {}

// gangStub makes jobs all-or-nothing with the counting rules of api.JobInfo.
type gangStub struct{}

func (gangStub) Name() string { return "gang" }
func (gangStub) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobValidFn("gang", func(j *api.JobInfo) *framework.ValidateResult {
		if !j.CheckTaskValid() || j.ValidTaskNum() < j.MinAvailable {
			return &framework.ValidateResult{Reason: "NotEnoughTasks", Message: "not enough tasks"}
		}
		return nil
	})
	ssn.AddJobReadyFn("gang", func(j *api.JobInfo) bool { return j.CheckTaskReady() && j.IsReady() })
	ssn.AddJobPipelinedFn("gang", func(j *api.JobInfo) int {
		if j.CheckTaskPipelined() && j.IsPipelined() {
			return framework.Permit
		}
		return framework.Reject
	})
	ssn.AddJobOrderFn("gang", func(l, r *api.JobInfo) int {
		switch lr, rr := l.IsReady(), r.IsReady(); {
		case lr == rr:
			return 0
		case rr:
			return -1
		}
		return 1
	})
}
func (gangStub) OnSessionClose(*framework.Session) {}

// errSelector is the pre-predicate failure of a pod whose node selector no node matches.
var errSelector = errors.New("node selector does not match")

// predicatesStub honours node selectors: a pre-predicate that fails when no node has the
// labels, and a predicate that keeps the pod off the nodes without them.
type predicatesStub struct{}

func (predicatesStub) Name() string { return "predicates" }
func (predicatesStub) OnSessionOpen(ssn *framework.Session) {
	ssn.AddPrePredicateFn("predicates", func(t *api.TaskInfo) error {
		if len(t.Pod.Spec.NodeSelector) == 0 {
			return nil
		}
		for _, n := range ssn.NodeList {
			if selects(t, n) {
				return nil
			}
		}
		return errSelector
	})
	ssn.AddPredicateFn("predicates", func(t *api.TaskInfo, n *api.NodeInfo) *api.Status {
		if !selects(t, n) {
			return api.NewStatus(api.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node selector")
		}
		return nil
	})
}
func (predicatesStub) OnSessionClose(*framework.Session) {}

func selects(t *api.TaskInfo, n *api.NodeInfo) bool {
	for k, v := range t.Pod.Spec.NodeSelector {
		if n.Node.Labels[k] != v {
			return false
		}
	}
	return true
}

// hooks registers whatever a test case needs beyond the stubs (overused queues, scores,
// counting predicates).
type hooks struct{ open func(ssn *framework.Session) }

func (hooks) Name() string { return "hooks" }
func (h hooks) OnSessionOpen(ssn *framework.Session) {
	if h.open != nil {
		h.open(ssn)
	}
}
func (hooks) OnSessionClose(*framework.Session) {}

// standardTiers is the shape of the default configuration: ordering and gang in tier 1,
// predicates and the case's hooks in tier 2.
func standardTiers(open func(ssn *framework.Session)) [][]framework.Plugin {
	return [][]framework.Plugin{
		{priorityStub{}, gangStub{}},
		{predicatesStub{}, hooks{open: open}},
	}
}
