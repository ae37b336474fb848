// Package ignoredannotation tells a job's owner that a plugin ignores one of the job's
// PodGroup annotations (or another PodGroup setting) because its value is malformed or names
// nothing, and that the job is scheduled without it. Each plugin owns one PodGroup condition type: the condition (status True, reason
// InvalidAnnotation) carries the message while the value stays bad, a Warning event of the
// condition's type says it once when the condition appears, and the condition goes when the
// annotation is fixed or removed. The PodGroup's own conditions say what was already said;
// until its status write lands (seconds later, or never in a namespace being deleted) the
// cache remembers the Warning it emitted (Session.ReportJobSetting), so no cycle repeats it.
package ignoredannotation

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Reason is the reason of every condition this package sets.
const Reason = "InvalidAnnotation"

// Report sets the plugin's condition on the job with message, and emits a Warning event of
// the condition's type with the same message unless the PodGroup already carries it.
func Report(ssn *framework.Session, job *api.JobInfo, condition schedulingv1beta1.PodGroupConditionType, message string) {
	ReportWithReason(ssn, job, condition, Reason, message)
}

// ReportWithReason is Report for a PodGroup field other than an annotation, whose condition
// has a reason of its own.
func ReportWithReason(ssn *framework.Session, job *api.JobInfo, condition schedulingv1beta1.PodGroupConditionType, reason, message string) {
	if carries(job.PodGroup.Status.Conditions, condition, reason, message) {
		ssn.JobSettingShown(job, string(condition))
	} else if ssn.ReportJobSetting(job, string(condition), message) {
		klog.InfoS("Job setting ignored", "podGroup", klog.KRef(job.Namespace, job.Name), "condition", condition, "reason", message)
	}
	if carries(job.Status.Conditions, condition, reason, message) {
		return
	}
	ssn.UpdatePodGroupCondition(job, schedulingv1beta1.PodGroupCondition{
		Type:               condition,
		Status:             corev1.ConditionTrue,
		TransitionID:       string(ssn.UID),
		LastTransitionTime: metav1.Now(),
		Reason:             reason,
		Message:            message,
	})
}

// carries reports whether conds hold the condition with reason and message.
func carries(conds []schedulingv1beta1.PodGroupCondition, condition schedulingv1beta1.PodGroupConditionType, reason, message string) bool {
	return slices.ContainsFunc(conds, func(c schedulingv1beta1.PodGroupCondition) bool {
		return c.Type == condition && c.Status == corev1.ConditionTrue && c.Reason == reason && c.Message == message
	})
}

// Clear removes the plugin's condition from the job, if it has one: its annotations are
// read again.
func Clear(job *api.JobInfo, condition schedulingv1beta1.PodGroupConditionType) {
	job.Status.Conditions = slices.DeleteFunc(job.Status.Conditions, func(c schedulingv1beta1.PodGroupCondition) bool {
		return c.Type == condition
	})
}
