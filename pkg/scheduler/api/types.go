package api

import "k8s.io/apimachinery/pkg/types"

// TaskID identifies a task: its pod's UID.
type TaskID types.UID

// JobID identifies a job: "<podgroup namespace>/<podgroup name>".
type JobID string

// QueueID identifies a queue: its name (queues are cluster-scoped).
type QueueID string

// NewJobID is the job key of the PodGroup ns/name.
func NewJobID(namespace, podGroup string) JobID { return JobID(namespace + "/" + podGroup) }

// TaskStatus is where a task stands in the scheduler's view. Pod phases map onto it (see
// PodTaskStatus); Allocated, Pipelined and Binding exist only inside the scheduler.
type TaskStatus int

const (
	Pending   TaskStatus = iota // waiting for a node
	Allocated                   // given a node in this session, not yet bound
	Pipelined                   // given a node whose resources are still being released
	Binding                     // bind request sent
	Bound                       // spec.nodeName set, not yet running
	Running
	Releasing // being deleted
	Succeeded
	Failed
	Unknown

	// numTaskStatuses is how many statuses there are, for arrays indexed by status.
	numTaskStatuses = iota
)

var taskStatusNames = [...]string{"Pending", "Allocated", "Pipelined", "Binding", "Bound", "Running",
	"Releasing", "Succeeded", "Failed", "Unknown"}

// String is the name upstream prints in status histograms ("2 Pending").
func (s TaskStatus) String() string {
	if int(s) < len(taskStatusNames) {
		return taskStatusNames[s]
	}
	return "Unknown"
}

// AllocatedStatus: the task holds node resources (Bound, Binding, Running, Allocated).
func AllocatedStatus(s TaskStatus) bool {
	return s == Bound || s == Binding || s == Running || s == Allocated
}
