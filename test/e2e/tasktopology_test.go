//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/tasktopology"
)

// The task-topology plugin in the chart's conf, against binpack, which puts a pod on the
// fuller of two 8-cpu nodes (both at weight 5). Node "full" holds a 2-cpu filler. A job's parameter server is
// pinned to node "near"; with task-topology-affinity "ps,worker" (and the task order
// "ps,worker", so the ps is placed first) its two workers follow it to "near" (1 cpu used) rather than the fuller "full". A second job's two ps pods with
// task-topology-anti-affinity "ps" go to two nodes, where binpack alone would stack them.
func TestTaskTopologyPlacesTasks(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("full", "8")
	e.node("near", "8")
	chart := chartConf(t)
	// binpack and task-topology at weight 5 each: the chart's binpack alone (weight 1) is
	// evened out by nodeorder's least-requested score, so without task-topology these pods
	// would be stacked, not left to a tie.
	conf := strings.Replace(chart, "  - name: binpack\n", `  - name: binpack
    arguments:
      binpack.weight: 5
  - name: task-topology
    arguments:
      task-topology.weight: 5
`, 1)
	if conf == chart {
		t.Fatal("config/volcano-scheduler.conf: no binpack line to add task-topology after")
	}
	e.scheduler(conf)
	e.gangWith("filler", "", "", 1, 1, "2", nil, nil, func(_ int, pod *corev1.Pod) {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: e.name + "-full"}
	})
	e.waitBound("filler-", 1, 60*time.Second)

	annotate := func(pairs ...string) func(*schedulingv1beta1.PodGroup) {
		return func(pg *schedulingv1beta1.PodGroup) {
			pg.Annotations = map[string]string{}
			for i := 0; i < len(pairs); i += 2 {
				pg.Annotations[pairs[i]] = pairs[i+1]
			}
		}
	}
	task := func(pod *corev1.Pod, name string) { pod.Annotations[batchv1alpha1.TaskSpecKey] = name }
	e.gangWith("train", "", "", 3, 3, "1", nil, annotate(tasktopology.AffinityAnnotation, "ps,worker", tasktopology.TaskOrderAnnotation, "ps,worker"), func(i int, pod *corev1.Pod) {
		if i > 0 {
			task(pod, "worker")
			return
		}
		task(pod, "ps")
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: e.name + "-near"}
	})
	e.waitBound("train-", 3, 60*time.Second)
	if per := e.podsPerNode("train-"); per[e.name+"-near"] != 3 {
		t.Errorf("train's pods per node %v, want ps and both workers on %s-near", per, e.name)
	}

	e.gangWith("apart", "", "", 2, 2, "1", nil, annotate(tasktopology.AntiAffinityAnnotation, "ps"), func(_ int, pod *corev1.Pod) {
		task(pod, "ps")
	})
	e.waitBound("apart-", 2, 60*time.Second)
	if per := e.podsPerNode("apart-"); len(per) != 2 {
		t.Errorf("apart's ps pods per node %v, want one on each node", per)
	}
}
