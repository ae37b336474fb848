//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// labFile reads one of lab 8's manifests (test/e2e/testdata/lab8, as published), with the
// project's image in place of nvidia/cuda: there is no registry here.
func labFile(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "test", "e2e", "testdata", "lab8", name))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "image: nvidia/cuda:12.4.1-base-ubuntu22.04", "image: "+tinyImage)
	text = strings.ReplaceAll(text, `command: ["bash", "-c", "sleep infinity"]`, `command: ["/tiny"]`)
	if err := yaml.UnmarshalStrict([]byte(text), into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// seedConf is lab 8's scheduler.conf as the users' tutorial ships it (config/lab8-scheduler.conf).
func seedConf(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "config", "lab8-scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Lab 8 steps 5-7 on the real kubelet node with vgpu-device-plugin (one 8 GiB GPU, split 10),
// vc-scheduler with the lab's scheduler.conf and the lab's VolcanoJobs and Queue: the exact
// PodGroup phases and messages the lab shows.
func TestLab8GangAndQueue(t *testing.T) {
	e := newSchedulerEnv(t)
	devicePlugin(t, e.cs, 1, e.name)
	e.claimRealNode()
	e.scheduler(seedConf(t))
	lab8Steps5to7(t, e)
}

// lab8Steps5to7 replays lab 8 steps 5-7 with the env's scheduler name and namespace, on the
// real node with one fake 8 GiB GPU: the exact PodGroup phases and messages the lab shows.
func lab8Steps5to7(t *testing.T, e *schedulerEnv) {
	ctx := context.Background()
	job := func(file string) *batchv1alpha1.Job {
		j := &batchv1alpha1.Job{}
		labFile(t, file, j)
		j.Namespace = e.ns
		j.Spec.SchedulerName = e.name
		if j.Spec.Queue == "gpu-small-queue" {
			j.Spec.Queue = e.ns + "-gpu-small-queue"
		}
		created, err := e.vc.BatchV1alpha1().Jobs(e.ns).Create(ctx, j, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create job %s: %v", j.Name, err)
		}
		return created
	}
	podGroupOf := func(j *batchv1alpha1.Job) string { return fmt.Sprintf("%s-%s", j.Name, j.UID) }
	remove := func(j *batchv1alpha1.Job) {
		background := metav1.DeletePropagationBackground
		if err := e.vc.BatchV1alpha1().Jobs(e.ns).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "pods of "+j.Name+" gone", func(ctx context.Context) (bool, string, error) {
			pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "volcano.sh/job-name=" + j.Name})
			if err != nil {
				return false, err.Error(), nil
			}
			return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items)), nil
		})
	}
	const notReady = "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 1 Schedulable, 1 Unschedulable"
	heldBack := func(j *batchv1alpha1.Job) {
		pg := e.podGroup(podGroupOf(j), 60*time.Second, "Inqueue with NotEnoughResources", func(pg *schedulingv1beta1.PodGroup) bool {
			c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
			return pg.Status.Phase == schedulingv1beta1.PodGroupInqueue && c != nil && c.Message == notReady
		})
		if c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType); c.Reason != string(schedulingv1beta1.NotEnoughResourcesReason) {
			t.Errorf("%s: reason %q", j.Name, c.Reason)
		}
		if b, _, _ := e.boundPods(ctx, j.Name); b != 0 {
			t.Errorf("%s: %d pods bound, want none", j.Name, b)
		}
	}
	runs := func(j *batchv1alpha1.Job) {
		e.podGroup(podGroupOf(j), 60*time.Second, "Running", func(pg *schedulingv1beta1.PodGroup) bool {
			return pg.Status.Phase == schedulingv1beta1.PodGroupRunning
		})
		eventually(t, 60*time.Second, j.Name+" pods Running", func(ctx context.Context) (bool, string, error) {
			pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "volcano.sh/job-name=" + j.Name})
			if err != nil {
				return false, err.Error(), nil
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			return running == 2, fmt.Sprintf("%d of %d Running", running, len(pods.Items)), nil
		})
	}

	// Step 5: 2 x 2000 MiB starts as a whole.
	gang := job("02-gang-job.yaml")
	runs(gang)
	remove(gang)
	// Step 6: 2 x 6000 MiB on 8 GiB never starts partly.
	insufficient := job("03-gang-insufficient.yaml")
	heldBack(insufficient)
	remove(insufficient)
	// Step 7: the queue caps vGPU memory at 4000 MiB while the node has 8 GiB free.
	q := &schedulingv1beta1.Queue{}
	labFile(t, "04-queue.yaml", q)
	q.Name = e.ns + "-" + q.Name
	if _, err := e.vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.vc.SchedulingV1beta1().Queues().Delete(context.Background(), q.Name, metav1.DeleteOptions{})
	})
	fits := job("05-queue-fit-job.yaml")
	runs(fits)
	remove(fits)
	heldBack(job("06-queue-exceeds-job.yaml"))
}
