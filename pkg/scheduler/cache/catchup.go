package cache

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// catchUpPoll is how often CatchUp looks again at the cache while the pod watch delivers;
// catchUpRetry how soon it lists again after the API server refused; catchUpTell how often
// a wait that lasts is logged.
const (
	catchUpPoll  = 10 * time.Millisecond
	catchUpRetry = time.Second
	catchUpTell  = 5 * time.Second
)

// CatchUp returns once the cache has seen every bind the API server holds for the pods it
// still holds as Pending. A replica that has just taken the Lease must not schedule before:
// the previous leader's last binds, written just before it released the Lease, may still be
// on their way through this replica's pod watch, and a bind carries its device assignment, so
// a cache without it would see those GPUs as free and book them a second time.
//
// It reads the pods no node holds yet (one consistent list, by the indexed spec.nodeName
// field), then waits until no pod the cache holds as Pending at or before that list's
// resourceVersion is missing from it: each such pod has been bound (or deleted) and its
// update is still to come. Pods created after the list do not count. It returns ctx's error
// if ctx ends first; a list the API server refuses is tried again.
func (sc *SchedulerCache) CatchUp(ctx context.Context) error {
	start := time.Now()
	var list *corev1.PodList
	if err := wait.PollUntilContextCancel(ctx, catchUpRetry, true, func(ctx context.Context) (bool, error) {
		var err error
		list, err = sc.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "").String(),
		})
		if err != nil {
			klog.ErrorS(err, "Listing the pods no node holds, to catch up with the previous leader's binds; retrying")
		}
		return err == nil, nil
	}); err != nil {
		return err
	}
	unbound := make(map[types.UID]struct{}, len(list.Items))
	for i := range list.Items {
		unbound[list.Items[i].UID] = struct{}{}
	}
	behind := func() int { return sc.pendingElsewhere(unbound, list.ResourceVersion) }
	waited := behind()
	if waited > 0 {
		told := start
		if err := wait.PollUntilContextCancel(ctx, catchUpPoll, false, func(context.Context) (bool, error) {
			n := behind()
			if n > 0 && time.Since(told) >= catchUpTell {
				told = time.Now()
				klog.InfoS("Not scheduling yet: the pod watch has still to bring binds the API server holds",
					"binds", n, "resourceVersion", list.ResourceVersion, "waited", time.Since(start).Round(time.Second))
			}
			return n == 0, nil
		}); err != nil {
			return fmt.Errorf("waiting for the pod watch to bring %d binds made before %s: %w", behind(), list.ResourceVersion, err)
		}
	}
	klog.InfoS("Cache caught up with the pods' binds", "resourceVersion", list.ResourceVersion,
		"waitedFor", waited, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// pendingElsewhere counts the tasks the cache holds as Pending, as of a pod version at or
// before rv, that are not among the unbound pods read at rv.
func (sc *SchedulerCache) pendingElsewhere(unbound map[types.UID]struct{}, rv string) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	n := 0
	for _, t := range sc.tasks {
		if t.Status != api.Pending || t.Pod == nil {
			continue
		}
		if _, ok := unbound[t.Pod.UID]; ok || newerThan(t.Pod, rv) {
			continue
		}
		n++
	}
	return n
}

// newerThan reports whether the pod was written after rv. Versions that are not the API
// server's integers cannot be ordered; the pod is then taken as older, so CatchUp waits.
func newerThan(pod *corev1.Pod, rv string) bool {
	c, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, rv)
	return err == nil && c > 0
}
