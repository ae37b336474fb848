package cache

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// Event reasons for objects that name something missing.
const (
	EventReasonPodGroupNotFound = "PodGroupNotFound"
	EventReasonQueueNotFound    = "QueueNotFound"
)

// danglingReferenceGrace is how long a reference may point at nothing before it is reported.
// Controllers create a PodGroup before annotating pods with it and a Queue before PodGroups
// use it, but the informers deliver them in any order; a report inside this window would
// usually be wrong.
const danglingReferenceGrace = 10 * time.Second

// danglingReference is an object (a pod or a PodGroup) that names one that does not exist,
// which keeps its job out of every session.
type danglingReference struct {
	// key identifies the object and the name it holds, so that naming another one is a new
	// problem.
	key    string
	object runtime.Object
	// kind and ref name the object in logs; missing says what is not there ("Queue q1").
	kind    string
	ref     klog.ObjectRef
	reason  string
	missing string
	message string
}

// appendPodsWithoutPodGroup lists the job's waiting pods, whose group annotation names a
// PodGroup that does not exist. Pods already on a node are not waiting for anything.
func appendPodsWithoutPodGroup(refs []danglingReference, job *api.JobInfo) []danglingReference {
	for _, t := range job.TaskStatusIndex[api.Pending] {
		missing := "PodGroup " + job.Key()
		refs = append(refs, danglingReference{
			key:     "pod/" + string(t.UID) + "/" + missing,
			object:  t.Pod,
			kind:    "pod",
			ref:     klog.KObj(t.Pod),
			reason:  EventReasonPodGroupNotFound,
			missing: missing,
			message: fmt.Sprintf("%s named by annotation %s does not exist; the pod is not scheduled until it does",
				missing, schedulingv1beta1.KubeGroupNameAnnotationKey),
		})
	}
	return refs
}

// podGroupWithoutQueue is a PodGroup whose queue does not exist.
func podGroupWithoutQueue(job *api.JobInfo) danglingReference {
	missing := "Queue " + string(job.Queue)
	return danglingReference{
		key:     "podgroup/" + string(job.PodGroup.UID) + "/" + missing,
		object:  job.PodGroup,
		kind:    "podGroup",
		ref:     klog.KObj(job.PodGroup),
		reason:  EventReasonQueueNotFound,
		missing: missing,
		message: missing + " does not exist; the PodGroup is not scheduled until it does",
	}
}

// report logs the problem and puts a Warning event on the object.
func (r danglingReference) report(rec record.EventRecorder) {
	klog.InfoS("Object names one that does not exist or cannot be followed; its jobs are not scheduled", r.kind, r.ref, "missing", r.missing)
	rec.Event(r.object, corev1.EventTypeWarning, r.reason, r.message)
}

// danglingReferences remembers since when each problem has been seen, so that each is
// reported once, after the grace period, however many cycles it lasts. A problem that goes
// away is forgotten: should it come back, it is reported again.
type danglingReferences struct {
	since    map[string]time.Time
	reported map[string]bool
}

func newDanglingReferences() *danglingReferences {
	return &danglingReferences{since: map[string]time.Time{}, reported: map[string]bool{}}
}

// due takes this cycle's problems and returns those to report now.
func (d *danglingReferences) due(current []danglingReference, now time.Time) []danglingReference {
	var out []danglingReference
	seen := make(map[string]bool, len(current))
	for _, r := range current {
		seen[r.key] = true
		since, ok := d.since[r.key]
		if !ok {
			since = now
			d.since[r.key] = now
		}
		if !d.reported[r.key] && now.Sub(since) >= danglingReferenceGrace {
			d.reported[r.key] = true
			out = append(out, r)
		}
	}
	for key := range d.since {
		if !seen[key] {
			delete(d.since, key)
			delete(d.reported, key)
		}
	}
	return out
}
