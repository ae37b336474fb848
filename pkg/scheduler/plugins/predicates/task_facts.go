package predicates

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/nodeselector"
)

// unschedulableTaint is how kube-scheduler reads spec.unschedulable: a pod tolerating this
// taint may still go to a cordoned node (DaemonSet pods do).
var unschedulableTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// taskFacts is what the checks need to know about a task's pod, worked out once per task.
type taskFacts struct {
	task *api.TaskInfo

	toleratesUnschedulable bool
	// nodeSelector and requiredAffinity are nil when the pod has none; affinityErr says the
	// required node affinity cannot be parsed (the API server's validation prevents that),
	// and then the pod matches no node.
	nodeSelector     labels.Selector
	requiredAffinity *nodeselector.Required
	affinityErr      error
	tolerations      []corev1.Toleration
	// hostPorts the pod asks for; nil for nearly every pod.
	hostPorts []hostPort
	// hasVolumes: the pod has volumes that kube-scheduler's volume plugins read.
	hasVolumes bool
	// podConstraints: where the pod may go depends on where other pods are
	// (api.HasPodConstraints).
	podConstraints bool
}

func newTaskFacts(task *api.TaskInfo, logger klog.Logger) *taskFacts {
	pod := task.Pod
	f := &taskFacts{
		task:                   task,
		toleratesUnschedulable: corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &unschedulableTaint, false),
		tolerations:            pod.Spec.Tolerations,
		hostPorts:              appendHostPorts(nil, pod),
		hasVolumes:             api.HasSchedulingVolumes(pod),
		podConstraints:         api.HasPodConstraints(pod),
	}
	if len(pod.Spec.NodeSelector) > 0 {
		f.nodeSelector = labels.SelectorFromSet(pod.Spec.NodeSelector)
	}
	if required := requiredNodeAffinity(pod); required != nil {
		f.requiredAffinity, f.affinityErr = nodeselector.NewRequired(required)
	}
	return f
}

// sameFacts says whether two pods give the checks the same facts: newTaskFacts reads their
// tolerations, host ports, node selector and required node affinity, and whether they have
// volumes or constraints on other pods, which the caller compares.
func sameFacts(a, b *corev1.Pod) bool {
	return maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector) &&
		equality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations) &&
		equality.Semantic.DeepEqual(requiredNodeAffinity(a), requiredNodeAffinity(b)) &&
		slices.Equal(appendHostPorts(nil, a), appendHostPorts(nil, b))
}

// requiredNodeAffinity is the pod's required node affinity, nil when it has none.
func requiredNodeAffinity(pod *corev1.Pod) *corev1.NodeSelector {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// matchesNode reports whether the node satisfies the pod's node selector and required node
// affinity. An affinity that cannot be parsed matches no node.
func (f *taskFacts) matchesNode(node *corev1.Node) bool {
	if f.nodeSelector != nil && !f.nodeSelector.Matches(labels.Set(node.Labels)) {
		return false
	}
	if f.affinityErr != nil {
		return false
	}
	return f.requiredAffinity == nil || f.requiredAffinity.Match(node)
}

// untoleratedTaint returns the node's first NoSchedule or NoExecute taint that the pod does
// not tolerate, or nil.
func (f *taskFacts) untoleratedTaint(logger klog.Logger, taints []corev1.Taint) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(logger, f.tolerations, t, false) {
			return t
		}
	}
	return nil
}
