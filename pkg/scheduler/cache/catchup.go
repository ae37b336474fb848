package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// catchUpPoll is how often CatchUp looks again at the cache while the pod watch delivers;
// catchUpRetry how soon it lists again after the API server refused; catchUpTell how often
// a wait that lasts is logged. A bound pod the cache still lacks catchUpConfirm after the
// lists were read (and every catchUpConfirm after) is looked up, at most catchUpAsks of them
// a poll.
const (
	catchUpPoll    = 10 * time.Millisecond
	catchUpRetry   = time.Second
	catchUpTell    = 5 * time.Second
	catchUpConfirm = 500 * time.Millisecond
	catchUpAsks    = 50
)

// CatchUp returns once the cache holds every bind the API server held when it was called.
// A replica that has just taken the Lease must not schedule before: the previous leader's
// last binds, written just before it released the Lease, may still be on their way through
// this replica's pod watch, and a bind carries its device assignment, so a cache without it
// would see those GPUs as free and book them a second time.
//
// It reads the pods no node holds yet (one consistent list, by the indexed spec.nodeName
// field), then the bound, unfinished pods of this scheduler's names (their metadata), and waits
// until
//   - each bound pod listed is in the cache at its listed resourceVersion or a later one,
//     whether the standby held it as Pending or its watch has not brought it at all (a pod
//     the previous leader created and bound in its last moments), or is gone: a pod the
//     cache still lacks after catchUpConfirm is looked up, and one the API server no longer
//     has (or has under another UID) is not waited for;
//   - no pod the cache held as Pending, at or before the unbound list's resourceVersion, and
//     that neither list holds, still shows so: it has been deleted or has finished since.
//
// The barrier is each pod's own version, which the pod watch reaches by delivering that pod:
// a quiet pod watch is never waited for beyond the pods listed, whatever else the API server
// writes meanwhile (Leases move its global resourceVersion, not the pod watch's). Pods
// created or changed after the lists do not count. It returns ctx's error if ctx ends
// first; a list the API server refuses is tried again.
func (sc *SchedulerCache) CatchUp(ctx context.Context) error {
	start := time.Now()
	var unbound *corev1.PodList
	if err := sc.listUntil(ctx, "Listing the pods no node holds, to catch up with the previous leader's binds; retrying", func(ctx context.Context) error {
		var err error
		unbound, err = sc.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "").String(),
		})
		return err
	}); err != nil {
		return err
	}
	var bound []awaitedPod
	if err := sc.listUntil(ctx, "Listing the bound pods, to catch up with the previous leader's binds; retrying", func(ctx context.Context) error {
		var err error
		bound, err = sc.listBound(ctx)
		return err
	}); err != nil {
		return err
	}
	listed := len(bound)
	c := &catchUp{sc: sc, awaited: append(sc.pendingElsewhere(bound, unbound), bound...), since: time.Now()}
	behind := c.behind(ctx)
	waited := behind
	if behind > 0 {
		told := start
		if err := wait.PollUntilContextCancel(ctx, catchUpPoll, false, func(ctx context.Context) (bool, error) {
			behind = c.behind(ctx)
			if behind > 0 && time.Since(told) >= catchUpTell {
				told = time.Now()
				klog.InfoS("Not scheduling yet: the pod watch has still to bring pods the API server holds",
					"pods", behind, "pod", klog.KRef(c.awaited[0].namespace, c.awaited[0].name),
					"resourceVersion", c.awaited[0].resourceVersion, "waited", time.Since(start).Round(time.Second))
			}
			return behind == 0, nil
		}); err != nil {
			return fmt.Errorf("waiting for the pod watch to bring %d pods as the API server held them (pod %s at version %s): %w",
				behind, klog.KRef(c.awaited[0].namespace, c.awaited[0].name), c.awaited[0].resourceVersion, err)
		}
	}
	klog.InfoS("Cache caught up with the pods' binds", "resourceVersion", unbound.ResourceVersion,
		"boundListed", listed, "waitedFor", waited, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// listUntil calls list until it succeeds, every catchUpRetry, or until ctx ends.
func (sc *SchedulerCache) listUntil(ctx context.Context, failed string, list func(context.Context) error) error {
	return wait.PollUntilContextCancel(ctx, catchUpRetry, true, func(ctx context.Context) (bool, error) {
		err := list(ctx)
		if err != nil {
			klog.ErrorS(err, failed)
		}
		return err == nil, nil
	})
}

// awaitedPod is a pod CatchUp waits for the pod watch to bring: a bound pod as listed, or a
// pod the cache held as Pending.
type awaitedPod struct {
	uid             types.UID
	namespace, name string
	// resourceVersion is, for a bound pod, the version listed, which the cache must reach;
	// for a pod held as Pending, the unbound list's.
	resourceVersion string
	bound           bool
	// missing: the cache held no such pod when last looked at; asked is when the API server
	// was last asked whether it still exists.
	missing bool
	asked   time.Time
}

// listBound lists the bound pods of this scheduler's names that have not finished (the API
// server applies the field selector: one list per name), as object metadata in one request:
// their UID, name and resourceVersion are all the wait reads, some 400 bytes a pod.
func (sc *SchedulerCache) listBound(ctx context.Context) ([]awaitedPod, error) {
	if sc.meta == nil {
		return nil, errors.New("listing bound pods: the cache has no metadata client (Options.Metadata)")
	}
	pods := sc.meta.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(metav1.NamespaceAll)
	var bound []awaitedPod
	for _, selector := range boundSelectors(sc.schedulerNames) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("listing bound pods (%s): %w", selector, err)
		}
		for i := range list.Items {
			m := &list.Items[i].ObjectMeta
			bound = append(bound, awaitedPod{uid: m.UID, namespace: m.Namespace, name: m.Name, resourceVersion: m.ResourceVersion, bound: true})
		}
	}
	return bound, nil
}

// boundSelectors are the field selectors of the bound, unfinished pods of the scheduler's
// names, one per name (a field selector cannot say "one of"); of every scheduler's when no
// name is known.
func boundSelectors(names sets.Set[string]) []string {
	unfinished := fields.AndSelectors(fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))
	if names.Len() == 0 {
		return []string{unfinished.String()}
	}
	var out []string
	for _, name := range sets.List(names) {
		out = append(out, fields.AndSelectors(unfinished, fields.OneTermEqualSelector("spec.schedulerName", name)).String())
	}
	return out
}

// pendingElsewhere returns the pods the cache holds as Pending, as of a pod version at or
// before the unbound list's, that neither list holds: each has been bound, deleted or has
// finished since, and its update is still to come. A pod the watch brings later as Pending
// at such a version has been deleted or has finished by the lists (bound, and this
// scheduler's, it would be listed): it holds no device, and is not waited for.
func (sc *SchedulerCache) pendingElsewhere(bound []awaitedPod, unbound *corev1.PodList) []awaitedPod {
	listed := make(map[types.UID]struct{}, len(bound)+len(unbound.Items))
	for i := range bound {
		listed[bound[i].uid] = struct{}{}
	}
	for i := range unbound.Items {
		listed[unbound.Items[i].UID] = struct{}{}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []awaitedPod
	for _, t := range sc.tasks {
		if t.Status != api.Pending || t.Pod == nil {
			continue
		}
		if _, ok := listed[t.Pod.UID]; ok || newerThan(t.Pod, unbound.ResourceVersion) {
			continue
		}
		out = append(out, awaitedPod{uid: t.Pod.UID, namespace: t.Namespace, name: t.Name, resourceVersion: unbound.ResourceVersion})
	}
	return out
}

// catchUp is CatchUp's wait: the pods still awaited, which only shrink.
type catchUp struct {
	sc      *SchedulerCache
	awaited []awaitedPod
	// since is when the lists were read: a bound pod missing from the cache is looked up only
	// catchUpConfirm after, the watch's time to bring what was written while they were read.
	since time.Time
}

// behind drops the pods the cache has caught up with, looks up some of the bound pods it
// lacks (without the cache's lock), and returns how many are still awaited. A pod the watch
// brings between the two is found by the API server and waited for, to be dropped next time.
func (c *catchUp) behind(ctx context.Context) int {
	missing := c.drop()
	if missing == 0 || time.Since(c.since) < catchUpConfirm {
		return len(c.awaited)
	}
	asked := 0
	for i := range c.awaited {
		a := &c.awaited[i]
		if !a.missing || time.Since(a.asked) < catchUpConfirm {
			continue
		}
		if asked == catchUpAsks {
			break
		}
		asked++
		a.asked = time.Now()
		pod, err := c.sc.kube.CoreV1().Pods(a.namespace).Get(ctx, a.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || err == nil && pod.UID != a.uid:
			a.uid = "" // gone: nothing of it to wait for
		case err != nil:
			klog.V(2).InfoS("Looking up a bound pod the pod watch has not brought", "pod", klog.KRef(a.namespace, a.name), "err", err)
		}
	}
	c.awaited = slices.DeleteFunc(c.awaited, func(a awaitedPod) bool { return a.uid == "" })
	return len(c.awaited)
}

// drop removes the awaited pods the cache has caught up with, under the cache's lock, and
// returns how many bound pods it lacks altogether (marked missing).
func (c *catchUp) drop() (missing int) {
	c.sc.mu.Lock()
	defer c.sc.mu.Unlock()
	kept := c.awaited[:0]
	for _, a := range c.awaited {
		t := c.sc.tasks[api.TaskID(a.uid)]
		switch {
		case !a.bound:
			if t == nil || t.Status != api.Pending || t.Pod == nil || newerThan(t.Pod, a.resourceVersion) {
				continue
			}
		case t == nil || t.Pod == nil:
			a.missing = true
			missing++
		case atOrAfter(t.Pod.ResourceVersion, a.resourceVersion):
			continue
		default:
			a.missing = false
		}
		kept = append(kept, a)
	}
	clear(c.awaited[len(kept):])
	c.awaited = kept
	return missing
}

// newerThan reports whether the pod was written after rv. Versions that are not the API
// server's integers cannot be ordered; the pod is then taken as older, so CatchUp waits.
func newerThan(pod *corev1.Pod, rv string) bool {
	c, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, rv)
	return err == nil && c > 0
}

// atOrAfter reports whether version rv is want or a later one. Versions that are not the
// API server's integers cannot be ordered unless equal; rv is then taken as older.
func atOrAfter(rv, want string) bool {
	if rv == want {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(rv, want)
	return err == nil && c >= 0
}
