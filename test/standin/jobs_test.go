package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// template is a pod template with one container of the given requirements.
func template(r corev1.ResourceRequirements) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}, Annotations: map[string]string{"note": "kept"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "cuda", Image: "tiny", Resources: r}},
		},
	}
}

var vgpuLimitsOnly = corev1.ResourceRequirements{
	Limits: list("volcano.sh/vgpu-number", "1", "volcano.sh/vgpu-memory", "3000", "volcano.sh/vgpu-cores", "30"),
}

// defaultedJob is lab 8's gang job as the admission webhook would have stored it.
func defaultedJob(r corev1.ResourceRequirements) *batch.Job {
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "gang", Namespace: "demo", UID: "job-uid",
			Labels:      map[string]string{scheduling.PodPreemptable: "false", "team": "a"},
			Annotations: map[string]string{scheduling.RevocableZone: "*"},
		},
		Spec: batch.JobSpec{
			SchedulerName: "volcano", Queue: "gpu-small-queue", MinAvailable: 2, MaxRetry: 3,
			PriorityClassName: "high",
			Tasks: []batch.TaskSpec{{
				Name: "worker", Replicas: 2, MinAvailable: ptr.To[int32](2), MaxRetry: 3,
				Template: template(r),
			}},
		},
	}
}

func TestWithAdmissionDefaults(t *testing.T) {
	bare := &batch.Job{Spec: batch.JobSpec{Tasks: []batch.TaskSpec{
		{Replicas: 2},
		{Name: "ps", Replicas: 3, MinAvailable: ptr.To[int32](1)},
	}}}
	got, changed := withAdmissionDefaults(bare, "volcano")
	want := batch.JobSpec{
		Queue: "default", SchedulerName: "volcano", MaxRetry: 3, MinAvailable: 3,
		Tasks: []batch.TaskSpec{
			{Name: "default0", Replicas: 2, MinAvailable: ptr.To[int32](2), MaxRetry: 3},
			{Name: "ps", Replicas: 3, MinAvailable: ptr.To[int32](1), MaxRetry: 3},
		},
	}
	if !changed {
		t.Error("changed = false for a job without defaults")
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("defaulted spec (-want +got):\n%s", diff)
	}
	if bare.Spec.Queue != "" {
		t.Error("the job passed in was modified")
	}

	explicit := defaultedJob(vgpuLimitsOnly)
	explicit.Spec.Queue, explicit.Spec.SchedulerName, explicit.Spec.MinAvailable = "q", "other", 1
	got, changed = withAdmissionDefaults(explicit, "volcano")
	if changed || !cmp.Equal(got.Spec, explicit.Spec) {
		t.Errorf("explicit values were changed: changed=%v\n%s", changed, cmp.Diff(explicit.Spec, got.Spec))
	}
}

func TestJobMinResources(t *testing.T) {
	withRequests := corev1.ResourceRequirements{
		Requests: list("cpu", "1", "volcano.sh/vgpu-memory", "3000"),
		Limits:   list("volcano.sh/vgpu-memory", "3000"),
	}
	twoTasks := defaultedJob(withRequests)
	twoTasks.Spec.Tasks = append(twoTasks.Spec.Tasks, batch.TaskSpec{
		Name: "ps", Replicas: 3, MinAvailable: ptr.To[int32](1),
		Template: template(corev1.ResourceRequirements{Requests: list("cpu", "500m")}),
	})

	tests := []struct {
		name         string
		job          *batch.Job
		minAvailable int32
		want         corev1.ResourceList
	}{
		{
			name:         "vGPU only under limits in the template: no vGPU dimension",
			job:          defaultedJob(vgpuLimitsOnly),
			minAvailable: 2,
			want:         list("count/pods", "2", "pods", "2"),
		},
		{
			name:         "vGPU under requests in the template: counted per pod",
			job:          defaultedJob(withRequests),
			minAvailable: 2,
			want: list("count/pods", "2", "pods", "2", "cpu", "2", "requests.cpu", "2",
				"volcano.sh/vgpu-memory", "6000", "requests.volcano.sh/vgpu-memory", "6000"),
		},
		{
			name:         "job minAvailable below the tasks' sum: only the first pods count",
			job:          defaultedJob(withRequests),
			minAvailable: 1,
			want: list("count/pods", "1", "pods", "1", "cpu", "1", "requests.cpu", "1",
				"volcano.sh/vgpu-memory", "3000", "requests.volcano.sh/vgpu-memory", "3000"),
		},
		{
			name:         "tasks' minAvailable first, then extra replicas in task order",
			job:          twoTasks,
			minAvailable: 4, // worker's 2 and ps's 1, then one of ps's 2 extra replicas
			want: list("count/pods", "4", "pods", "4", "cpu", "3", "requests.cpu", "3",
				"volcano.sh/vgpu-memory", "6000", "requests.volcano.sh/vgpu-memory", "6000"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.job.Spec.MinAvailable = tt.minAvailable
			if diff := cmp.Diff(tt.want, *jobMinResources(tt.job), semanticList); diff != "" {
				t.Errorf("minResources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobPodGroup(t *testing.T) {
	job := defaultedJob(vgpuLimitsOnly)
	job.Spec.Tasks = append(job.Spec.Tasks, batch.TaskSpec{Name: "ps", Replicas: 3, MinAvailable: ptr.To[int32](1)})
	pg := jobPodGroup(job)
	if pg.Name != "gang-job-uid" {
		t.Errorf("name = %q, want gang-job-uid", pg.Name)
	}
	wantSpec := scheduling.PodGroupSpec{
		MinMember:         2,
		MinTaskMember:     map[string]int32{"worker": 2, "ps": 1},
		Queue:             "gpu-small-queue",
		PriorityClassName: "high",
		MinResources:      ptr.To(list("count/pods", "2", "pods", "2")),
	}
	if diff := cmp.Diff(wantSpec, pg.Spec, semanticList); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	wantOwner := []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "gang", UID: "job-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if diff := cmp.Diff(wantOwner, pg.OwnerReferences); diff != "" {
		t.Errorf("ownerReferences (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(job.Labels, pg.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if pg.Status.Phase != "" {
		t.Errorf("phase = %q, want empty (the scheduler sets it)", pg.Status.Phase)
	}
}

func TestJobPod(t *testing.T) {
	job := defaultedJob(vgpuLimitsOnly)
	job.Status.Version, job.Status.RetryCount = 2, 1
	job.Spec.Tasks[0].TopologyPolicy = batch.SingleNumaNode
	pod := jobPod(job, job.Spec.Tasks[0], 1)

	if pod.Name != "gang-worker-1" || pod.Namespace != "demo" {
		t.Errorf("pod = %s/%s, want demo/gang-worker-1", pod.Namespace, pod.Name)
	}
	wantAnnotations := map[string]string{
		"note":                            "kept",
		"volcano.sh/task-index":           "1",
		"volcano.sh/task-spec":            "worker",
		"scheduling.k8s.io/group-name":    "gang-job-uid",
		"volcano.sh/job-name":             "gang",
		"volcano.sh/queue-name":           "gpu-small-queue",
		"volcano.sh/job-version":          "2",
		"volcano.sh/template-uid":         "gang-worker",
		"volcano.sh/job-retry-count":      "1",
		"volcano.sh/revocable-zone":       "*",
		"volcano.sh/numa-topology-policy": "single-numa-node",
	}
	if diff := cmp.Diff(wantAnnotations, pod.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		"app":                      "train",
		"volcano.sh/task-index":    "1",
		"volcano.sh/job-name":      "gang",
		"volcano.sh/task-spec":     "worker",
		"volcano.sh/job-namespace": "demo",
		"volcano.sh/queue-name":    "gpu-small-queue",
		"volcano.sh/preemptable":   "false",
	}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "job-uid" || ref.Kind != "Job" {
		t.Errorf("controller = %+v, want Job gang", ref)
	}
	if pod.Spec.SchedulerName != "volcano" || pod.Spec.PriorityClassName != "high" {
		t.Errorf("schedulerName %q, priorityClassName %q: want the job's", pod.Spec.SchedulerName, pod.Spec.PriorityClassName)
	}
	if job.Spec.Tasks[0].Template.Annotations["volcano.sh/task-index"] != "" {
		t.Error("the job's template was modified")
	}
}

// The job's pods appear only once the scheduler has admitted its PodGroup.
func TestJobSyncWaitsForAdmission(t *testing.T) {
	tests := []struct {
		phase    scheduling.PodGroupPhase
		wantPods []string
	}{
		{phase: ""},
		{phase: scheduling.PodGroupPending},
		{phase: scheduling.PodGroupInqueue, wantPods: []string{"gang-worker-0", "gang-worker-1"}},
		{phase: scheduling.PodGroupRunning, wantPods: []string{"gang-worker-0", "gang-worker-1"}},
	}
	for _, tt := range tests {
		t.Run("phase "+string(tt.phase), func(t *testing.T) {
			job := defaultedJob(vgpuLimitsOnly)
			pg := jobPodGroup(job)
			pg.Status.Phase = tt.phase
			cl := newCluster(t, nil, []runtime.Object{job, pg})
			c := newJobController(cl.kube, cl.vc, cl.jobs(), cl.podGroups(), cl.pods(), "volcano")
			ctx := context.Background()
			if err := c.sync(ctx, "demo/gang"); err != nil {
				t.Fatal(err)
			}
			pods, err := cl.kube.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range pods.Items {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tt.wantPods, names); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
			got, err := cl.vc.BatchV1alpha1().Jobs("demo").Get(ctx, "gang", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.State.Phase != batch.Pending {
				t.Errorf("job phase = %q, want Pending", got.Status.State.Phase)
			}
		})
	}
}

// A new job is defaulted, gets its PodGroup, and a second sync with the same state changes
// nothing.
func TestJobSyncCreatesPodGroupOnce(t *testing.T) {
	job := defaultedJob(vgpuLimitsOnly)
	job.Spec.Queue, job.Spec.MinAvailable, job.Spec.Tasks[0].Name = "", 0, ""
	cl := newCluster(t, nil, []runtime.Object{job})
	c := newJobController(cl.kube, cl.vc, cl.jobs(), cl.podGroups(), cl.pods(), "volcano")
	ctx := context.Background()
	if err := c.sync(ctx, "demo/gang"); err != nil {
		t.Fatal(err)
	}
	pg, err := cl.vc.SchedulingV1beta1().PodGroups("demo").Get(ctx, "gang-job-uid", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("podgroup: %v", err)
	}
	if pg.Spec.Queue != "default" || pg.Spec.MinMember != 2 || !cmp.Equal(pg.Spec.MinTaskMember, map[string]int32{"default0": 2}) {
		t.Errorf("podgroup spec = %+v, want queue default, minMember 2, minTaskMember default0:2", pg.Spec)
	}
	stored, err := cl.vc.BatchV1alpha1().Jobs("demo").Get(ctx, "gang", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Queue != "default" || stored.Spec.Tasks[0].Name != "default0" {
		t.Errorf("stored job spec not defaulted: %+v", stored.Spec)
	}

	// Second pass: the caches now hold what the first pass wrote.
	cl.cache(t, stored)
	cl.cache(t, pg)
	cl.vc.ClearActions()
	if err := c.sync(ctx, "demo/gang"); err != nil {
		t.Fatal(err)
	}
	for _, a := range cl.vc.Actions() {
		t.Errorf("second sync wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
	}
}

// A PodGroup whose spec drifted from the job is brought back.
func TestJobSyncUpdatesPodGroup(t *testing.T) {
	job := defaultedJob(vgpuLimitsOnly)
	pg := jobPodGroup(job)
	pg.Spec.MinMember = 7
	pg.Spec.MinResources = ptr.To(list("cpu", "100"))
	pg.Status.Phase = scheduling.PodGroupInqueue
	cl := newCluster(t, nil, []runtime.Object{job, pg})
	c := newJobController(cl.kube, cl.vc, cl.jobs(), cl.podGroups(), cl.pods(), "volcano")
	ctx := context.Background()
	if err := c.sync(ctx, "demo/gang"); err != nil {
		t.Fatal(err)
	}
	got, err := cl.vc.SchedulingV1beta1().PodGroups("demo").Get(ctx, pg.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.MinMember != 2 || !cmp.Equal(*got.Spec.MinResources, list("count/pods", "2", "pods", "2"), semanticList) {
		t.Errorf("podgroup spec = %+v, want minMember 2 and the template's minResources", got.Spec)
	}
	if got.Status.Phase != scheduling.PodGroupInqueue {
		t.Errorf("phase = %q: the status written by the scheduler was lost", got.Status.Phase)
	}
}

func TestJobStatus(t *testing.T) {
	pod := func(task string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: task + string(phase), Labels: map[string]string{batch.TaskSpecKey: task}},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	pods := func(ps ...*corev1.Pod) map[string]*corev1.Pod {
		m := map[string]*corev1.Pod{}
		for i, p := range ps {
			p.Name += string(rune('a' + i))
			m[p.Name] = p
		}
		return m
	}
	tests := []struct {
		name      string
		from      batch.JobPhase
		pods      map[string]*corev1.Pod
		wantPhase batch.JobPhase
		wantCount [5]int32 // pending, running, succeeded, failed, unknown
	}{
		{name: "new job", wantPhase: batch.Pending},
		{name: "one of two running", from: batch.Pending, pods: pods(pod("worker", corev1.PodRunning), pod("worker", corev1.PodPending)),
			wantPhase: batch.Pending, wantCount: [5]int32{1, 1, 0, 0, 0}},
		{name: "minAvailable running", from: batch.Pending, pods: pods(pod("worker", corev1.PodRunning), pod("worker", corev1.PodRunning)),
			wantPhase: batch.Running, wantCount: [5]int32{0, 2, 0, 0, 0}},
		{name: "running never goes back to pending", from: batch.Running, pods: pods(pod("worker", corev1.PodRunning), pod("worker", corev1.PodPending)),
			wantPhase: batch.Running, wantCount: [5]int32{1, 1, 0, 0, 0}},
		{name: "all succeeded", from: batch.Running, pods: pods(pod("worker", corev1.PodSucceeded), pod("worker", corev1.PodSucceeded)),
			wantPhase: batch.Completed, wantCount: [5]int32{0, 0, 2, 0, 0}},
		{name: "all finished, fewer than minAvailable succeeded", from: batch.Running, pods: pods(pod("worker", corev1.PodSucceeded), pod("worker", corev1.PodFailed)),
			wantPhase: batch.Failed, wantCount: [5]int32{0, 0, 1, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := defaultedJob(vgpuLimitsOnly)
			job.Status.State.Phase = tt.from
			status := jobStatus(job, tt.pods)
			if status.State.Phase != tt.wantPhase {
				t.Errorf("phase = %q, want %q", status.State.Phase, tt.wantPhase)
			}
			got := [5]int32{status.Pending, status.Running, status.Succeeded, status.Failed, status.Unknown}
			if got != tt.wantCount {
				t.Errorf("counts = %v, want %v", got, tt.wantCount)
			}
			if status.MinAvailable != 2 {
				t.Errorf("status.minAvailable = %d, want 2", status.MinAvailable)
			}
			var perTask int32
			for _, n := range status.TaskStatusCount["worker"].Phase {
				perTask += n
			}
			if perTask != int32(len(tt.pods)) {
				t.Errorf("task counts %v do not cover the %d pods", status.TaskStatusCount, len(tt.pods))
			}
			if again := jobStatus(&batch.Job{Spec: job.Spec, Status: status}, tt.pods); !cmp.Equal(again, status) {
				t.Errorf("not idempotent:\n%s", cmp.Diff(status, again))
			}
		})
	}
}
