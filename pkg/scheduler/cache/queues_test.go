package cache

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/queuetree"
)

var queuesResource = schedulingv1beta1.SchemeGroupVersion.WithResource("queues")

func TestCreateDefaultQueues(t *testing.T) {
	root := schedulingv1beta1.QueueSpec{Reclaimable: ptr.To(false), Weight: 1}
	reclaimable := schedulingv1beta1.QueueSpec{Reclaimable: ptr.To(true), Weight: 1}
	tests := []struct {
		name         string
		defaultQueue string
		existing     []runtime.Object
		// failures: how many creates fail before they succeed (-1: always).
		failures int
		want     map[string]schedulingv1beta1.QueueSpec
		wantErr  string
	}{
		{
			name:         "both are created",
			defaultQueue: "default",
			want:         map[string]schedulingv1beta1.QueueSpec{"root": root, "default": reclaimable},
		},
		{
			name:         "the default queue takes its configured name",
			defaultQueue: "batch",
			want:         map[string]schedulingv1beta1.QueueSpec{"root": root, "batch": reclaimable},
		},
		{
			name:         "existing queues are left as they are",
			defaultQueue: "default",
			existing: []runtime.Object{&schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "default"},
				Spec: schedulingv1beta1.QueueSpec{Weight: 7}}},
			want: map[string]schedulingv1beta1.QueueSpec{"root": root, "default": {Weight: 7}},
		},
		{
			name:         "errors are retried",
			defaultQueue: "default",
			failures:     3,
			want:         map[string]schedulingv1beta1.QueueSpec{"root": root, "default": reclaimable},
		},
		{
			name:         "an error that lasts is returned, naming the queue",
			defaultQueue: "default",
			failures:     -1,
			wantErr:      "create queue root",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vc := newVolcanoClientset(tt.existing...)
			failed := 0
			vc.PrependReactor("create", "queues", func(clienttesting.Action) (bool, runtime.Object, error) {
				if tt.failures < 0 || failed < tt.failures {
					failed++
					return true, nil, apierrors.NewServiceUnavailable("api server starting")
				}
				return false, nil, nil
			})
			backoff := wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 5}
			err := createDefaultQueues(context.Background(), vc, tt.defaultQueue, backoff)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("createDefaultQueues: %v", err)
			}
			list, err := vc.SchedulingV1beta1().Queues().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]schedulingv1beta1.QueueSpec{}
			for _, q := range list.Items {
				got[q.Name] = q.Spec
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("queues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdateQueueStatus(t *testing.T) {
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	tests := []struct {
		name      string
		current   corev1.ResourceList
		allocated corev1.ResourceList
		conflict  bool
		wantWrite bool
	}{
		{name: "unchanged: nothing written", current: cpu("2"), allocated: cpu("2000m")},
		{name: "nothing allocated, nothing recorded: nothing written", current: nil, allocated: nil},
		{name: "a resource dropping to zero is written", current: cpu("2"), allocated: nil, wantWrite: true},
		{name: "changed: written", current: cpu("1"), allocated: cpu("3"), wantWrite: true},
		{name: "changed while the controller updated the queue: the state is kept", current: cpu("1"), allocated: cpu("3"), conflict: true, wantWrite: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			env := newTestEnv(t, Options{})
			q := newQueue("q1")
			q.Status.Allocated = tt.current
			env.add(t, q)
			if tt.conflict {
				// The queue controller closed the queue after the snapshot.
				closed := q.DeepCopy()
				closed.ResourceVersion = "2"
				closed.Status.State = schedulingv1beta1.QueueStateClosed
				mustCreate(t, env.vc.Tracker().Update(queuesResource, closed, ""))
				env.vc.PrependReactor("update", "queues", func(action clienttesting.Action) (bool, runtime.Object, error) {
					if action.(clienttesting.UpdateAction).GetObject().(*schedulingv1beta1.Queue).ResourceVersion != "2" {
						return true, nil, apierrors.NewConflict(queuesResource.GroupResource(), "q1", errors.New("stale"))
					}
					return false, nil, nil
				})
			}
			queue := env.sc.Snapshot().Queues["q1"]
			env.sc.UpdateQueueStatus(queue, api.NewResource(tt.allocated))
			env.drainWrites(ctx)

			writes := actionsOn(env.vc.Actions(), "update", queuesResource, "status")
			if (len(writes) > 0) != tt.wantWrite {
				t.Fatalf("status updates: %d, want write %v", len(writes), tt.wantWrite)
			}
			if !tt.wantWrite {
				return
			}
			got, err := env.vc.SchedulingV1beta1().Queues().Get(ctx, "q1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !sameAmounts(got.Status.Allocated, tt.allocated) {
				t.Errorf("status.allocated = %v, want %v", got.Status.Allocated, tt.allocated)
			}
			wantState := schedulingv1beta1.QueueStateOpen
			if tt.conflict {
				wantState = schedulingv1beta1.QueueStateClosed
			}
			if got.Status.State != wantState {
				t.Errorf("status.state = %q, want %q", got.Status.State, wantState)
			}
		})
	}
}

// TestReportQueueProblems: a queue out of the hierarchy is told once, after the grace period,
// with a Warning event; a problem that goes and comes back is told again.
func TestReportQueueProblems(t *testing.T) {
	env := newTestEnv(t, Options{})
	orphan := newQueue("orphan")
	orphan.Spec.Parent = "gone"
	problems := queuetree.Build(map[api.QueueID]*api.QueueInfo{"orphan": api.NewQueueInfo(orphan)}).Problems()
	report := func(after time.Duration, p []queuetree.Problem) []string {
		env.clock.SetTime(env.clock.Now().Add(after))
		env.sc.ReportQueueProblems(p)
		return env.events.Take()
	}
	want := []string{"Queue /orphan Warning ParentQueueNotFound: queue orphan names parent queue gone, which does not exist; " +
		"the queue's jobs are not scheduled until its spec.parent chain reaches the root queue"}
	steps := []struct {
		what     string
		after    time.Duration
		problems []queuetree.Problem
		want     []string
	}{
		{"first", 0, problems, nil},
		{"inside the grace period", danglingReferenceGrace - time.Second, problems, nil},
		{"grace period over", time.Second, problems, want},
		{"later", time.Minute, problems, nil},
		{"fixed", time.Second, nil, nil},
		{"broken again", 0, problems, nil},
		{"broken again, grace period over", danglingReferenceGrace, problems, want},
	}
	for _, s := range steps {
		if got := report(s.after, s.problems); !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: events %q, want %q", s.what, got, s.want)
		}
	}
}
