//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// A single-pod vGPU job whose pod fails shows it on its PodGroup within 2 s of the pod's
// status write, under the chart's configuration: phase Completed, failed 1, running 0, and
// gang's Unschedulable condition in upstream's words beside the Scheduled one, as upstream
// v1.15.1 writes them in its next cycle (its e2e "PodGroup's Phase should be Completed when
// Job fails"). The pod fails moments after it was bound, as there: the scheduler once took
// such a job, short of its minimum within 30 s of its PodGroup's creation, for a gang still
// arriving, and left its PodGroup Running until then.
func TestPodGroupFollowsItsFailedPod(t *testing.T) {
	e := newSchedulerEnv(t)
	e.gpuNode("a", 1, 4, 8192, 0)
	e.scheduler(chartConf(t))
	e.vgpuGangOfClass("fails", "", "", 1, 1, 2000, 30)
	pod := podPhase(t, e.cs, e.ns, "fails-0", corev1.PodRunning, 30*time.Second)
	e.podGroup("fails", 30*time.Second, "Running", func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Status.Phase == schedulingv1beta1.PodGroupRunning
	})

	// The kubelet's write (kwok's stages leave a running pod alone): the container exited 1.
	// failed is when the write that landed was sent.
	ctx := context.Background()
	var failed time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = corev1.PodFailed
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: cur.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
		failed = time.Now()
		_, err = e.cs.CoreV1().Pods(e.ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("fail pod %s: %v", pod.Name, err)
	}

	const want = "1/1 tasks in gang unschedulable: pod group is not ready, 1 Failed, 1 minAvailable"
	pg := e.podGroup("fails", 2*time.Second-time.Since(failed), "Completed 2 s after its only pod failed", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return pg.Status.Phase == schedulingv1beta1.PodGroupCompleted && c != nil && c.Message == want
	})
	t.Logf("PodGroup Completed %v after the pod's status write", time.Since(failed).Round(10*time.Millisecond))
	unschedulable, scheduled := condition(pg, schedulingv1beta1.PodGroupUnschedulableType), condition(pg, schedulingv1beta1.PodGroupScheduled)
	if got := fmt.Sprintf("running %d, failed %d, Unschedulable %s/%s, Scheduled present %t", pg.Status.Running, pg.Status.Failed,
		unschedulable.Status, unschedulable.Reason, scheduled != nil && scheduled.Status == corev1.ConditionTrue); got !=
		"running 0, failed 1, Unschedulable True/NotEnoughResources, Scheduled present true" {
		t.Errorf("Completed PodGroup: %s; want running 0, failed 1, Unschedulable True/NotEnoughResources beside Scheduled", got)
	}
}
