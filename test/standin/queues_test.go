package main

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func TestQueueSync(t *testing.T) {
	tests := []struct {
		name       string
		queue      scheduling.Queue
		want       scheduling.Queue
		wantWrites int
	}{
		{
			name:       "new queue: webhook defaults and Open",
			queue:      scheduling.Queue{},
			want:       scheduling.Queue{Spec: scheduling.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)}, Status: scheduling.QueueStatus{State: scheduling.QueueStateOpen}},
			wantWrites: 2,
		},
		{
			name:       "explicit spec kept, only opened",
			queue:      scheduling.Queue{Spec: scheduling.QueueSpec{Weight: 4, Reclaimable: ptr.To(false)}},
			want:       scheduling.Queue{Spec: scheduling.QueueSpec{Weight: 4, Reclaimable: ptr.To(false)}, Status: scheduling.QueueStatus{State: scheduling.QueueStateOpen}},
			wantWrites: 1,
		},
		{
			name:       "closed queue stays closed",
			queue:      scheduling.Queue{Spec: scheduling.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)}, Status: scheduling.QueueStatus{State: scheduling.QueueStateClosed}},
			want:       scheduling.Queue{Spec: scheduling.QueueSpec{Weight: 1, Reclaimable: ptr.To(true)}, Status: scheduling.QueueStatus{State: scheduling.QueueStateClosed}},
			wantWrites: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.queue.Name = "gpu-small-queue"
			cl := newCluster(t, nil, []runtime.Object{&tt.queue})
			c := newQueueController(cl.vc, cl.queues())
			ctx := context.Background()
			if err := c.sync(ctx, "gpu-small-queue"); err != nil {
				t.Fatal(err)
			}
			if err := c.sync(ctx, "gone"); err != nil {
				t.Fatalf("sync of a deleted queue: %v", err)
			}
			got, err := cl.vc.SchedulingV1beta1().Queues().Get(ctx, "gpu-small-queue", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Weight != tt.want.Spec.Weight || *got.Spec.Reclaimable != *tt.want.Spec.Reclaimable || got.Status.State != tt.want.Status.State {
				t.Errorf("queue = weight %d, reclaimable %v, state %q; want %d, %v, %q", got.Spec.Weight, *got.Spec.Reclaimable,
					got.Status.State, tt.want.Spec.Weight, *tt.want.Spec.Reclaimable, tt.want.Status.State)
			}
			writes := 0
			for _, a := range cl.vc.Actions() {
				if a.GetVerb() == "update" {
					writes++
				}
			}
			if writes != tt.wantWrites {
				t.Errorf("%d writes, want %d", writes, tt.wantWrites)
			}
		})
	}
}
