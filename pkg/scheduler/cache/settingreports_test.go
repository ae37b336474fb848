package cache

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// An ignored job setting's Warning is emitted once while the PodGroup's status write that
// shows its condition is on its way (every cycle finds the setting unreported until then),
// again for a new message, and again once the PodGroup has shown the condition and a new
// report comes; a deleted PodGroup leaves nothing behind.
func TestJobSettingIsReportedOnce(t *testing.T) {
	env := newTestEnv(t, Options{})
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg", UID: "uid-pg"}}
	job := &api.JobInfo{Name: "pg", Namespace: "ns", PodGroup: pg}
	const condition = "PriorityClassNotFound"
	said := func(want bool, message, why string) {
		t.Helper()
		if got := env.sc.ReportJobSetting(job, condition, message); got != want {
			t.Errorf("%s: emitted %v, want %v", why, got, want)
		}
	}
	said(true, "class gone", "the first report")
	said(false, "class gone", "the next cycles, before the status write lands")
	said(false, "class gone", "")
	said(true, "class renamed", "a new message")
	env.sc.JobSettingShown(job, condition)
	said(true, "class renamed", "a report after the PodGroup showed the condition (and lost it)")
	if got := env.events.Take(); len(got) != 3 || !slices.Contains(got, "PodGroup ns/pg Warning PriorityClassNotFound: class gone") {
		t.Errorf("events %q, want the three reports that emitted", got)
	}
	env.sc.onPodGroupDelete(pg)
	if len(env.sc.settings.byUID) != 0 {
		t.Errorf("a deleted PodGroup's reports are kept: %v", env.sc.settings.byUID)
	}
}
