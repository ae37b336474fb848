package cache

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// catchUpPoll is how often CatchUp looks again at the pod watch's progress; catchUpRetry how
// soon it reads the API server's version again after a refusal; catchUpTell how often a wait
// that lasts is logged.
const (
	catchUpPoll  = 10 * time.Millisecond
	catchUpRetry = time.Second
	catchUpTell  = 5 * time.Second
)

// CatchUp returns once the cache holds every pod the API server held when CatchUp was
// called. A replica that has just taken the Lease must not schedule before: the previous
// leader's last binds, and pods it created and bound, may still be on their way through this
// replica's pod watch, and a bind carries its device assignment, so a cache without it would
// see those GPUs as free and book them a second time.
//
// It reads the API server's current resourceVersion (a list of one pod, which the API server
// answers at its latest version), then waits until the pod watch has passed it (an event or
// a bookmark at that version or later) and the cache has been given everything the watch
// brought before (watchProgress). Where nothing changes among the pods, the watch passes it
// at the API server's next bookmark, within about a minute (at the next pod event, when the
// watch has had to list again since this replica started). It returns ctx's error if ctx
// ends first; a list the API server refuses is tried again.
func (sc *SchedulerCache) CatchUp(ctx context.Context) error {
	start := time.Now()
	var barrier string
	if err := wait.PollUntilContextCancel(ctx, catchUpRetry, true, func(ctx context.Context) (bool, error) {
		list, err := sc.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			klog.ErrorS(err, "Reading the API server's resourceVersion, to catch up with it before scheduling; retrying")
			return false, nil
		}
		barrier = list.ResourceVersion
		return true, nil
	}); err != nil {
		return err
	}
	told := start
	if err := wait.PollUntilContextCancel(ctx, catchUpPoll, true, func(context.Context) (bool, error) {
		done, err := sc.podWatch.caughtUp(barrier)
		if !done && time.Since(told) >= catchUpTell {
			told = time.Now()
			klog.InfoS("Not scheduling yet: the pod watch has still to bring what the API server held at the handover",
				"resourceVersion", barrier, "watchAt", sc.podWatch.at(), "err", err, "waited", time.Since(start).Round(time.Second))
		}
		return done, nil
	}); err != nil {
		return fmt.Errorf("waiting for the pod watch to pass resourceVersion %s (it is at %s): %w", barrier, sc.podWatch.at(), err)
	}
	klog.InfoS("Cache caught up with the pods' binds", "resourceVersion", barrier, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
