package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/apis/pkg/client/clientset/versioned"
	schedulinglisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"
)

// queueController makes new Queues usable: proportion and capacity refuse every
// job of a queue whose status.state is not Open, and a fresh queue has no state until a
// controller opens it. It also fills in the spec defaults of upstream's queue webhook. It
// does not close, reopen or count anything.
type queueController struct {
	*loop
	vc     versioned.Interface
	queues schedulinglisters.QueueLister
}

func newQueueController(vc versioned.Interface, queues schedulinglisters.QueueLister) *queueController {
	c := &queueController{vc: vc, queues: queues}
	c.loop = newLoop("queue", c.sync)
	return c
}

func (c *queueController) watch(queues cache.SharedIndexInformer) error {
	_, err := queues.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	return err
}

func (c *queueController) sync(ctx context.Context, name string) error {
	queue, err := c.queues.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get queue %s: %w", name, err)
	}
	client := c.vc.SchedulingV1beta1().Queues()
	if queue.Spec.Weight == 0 || queue.Spec.Reclaimable == nil {
		defaulted := queue.DeepCopy()
		if defaulted.Spec.Weight == 0 {
			defaulted.Spec.Weight = 1
		}
		if defaulted.Spec.Reclaimable == nil {
			defaulted.Spec.Reclaimable = ptr.To(true)
		}
		if queue, err = client.Update(ctx, defaulted, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("write admission defaults of queue %s: %w", name, err)
		}
		klog.V(2).InfoS("Applied queue defaults", "queue", klog.KObj(queue))
	}
	if queue.Status.State != "" {
		return nil
	}
	opened := queue.DeepCopy()
	opened.Status.State = scheduling.QueueStateOpen
	if _, err := client.UpdateStatus(ctx, opened, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("open queue %s: %w", name, err)
	}
	klog.V(2).InfoS("Opened queue", "queue", klog.KObj(queue))
	return nil
}
