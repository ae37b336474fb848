package cache

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

// settingReports are, per PodGroup and condition type, the ignored job settings whose Warning
// was emitted while the PodGroup does not show the condition yet: its status write waits
// seconds (StatusWriteDelay), or never lands (a namespace being deleted). Until it shows, the
// session finds the setting unreported every cycle; this keeps it from being said again.
type settingReports struct {
	mu    sync.Mutex
	byUID map[types.UID]map[string]string
}

// ReportJobSetting emits the Warning event of an ignored setting of the job (its condition
// type as reason) unless the same message was emitted and the PodGroup has not shown the
// condition since; it reports whether it emitted.
func (sc *SchedulerCache) ReportJobSetting(job *api.JobInfo, condition, message string) bool {
	if job.PodGroup == nil {
		return false
	}
	r := &sc.settings
	r.mu.Lock()
	said := r.byUID[job.PodGroup.UID]
	if said[condition] == message {
		r.mu.Unlock()
		return false
	}
	if said == nil {
		said = map[string]string{}
		if r.byUID == nil {
			r.byUID = map[types.UID]map[string]string{}
		}
		r.byUID[job.PodGroup.UID] = said
	}
	said[condition] = message
	r.mu.Unlock()
	sc.recorder.Event(job.PodGroup, corev1.EventTypeWarning, condition, message)
	return true
}

// JobSettingShown: the PodGroup shows the condition, which says the rest; once it goes, a
// new report of the setting is emitted again.
func (sc *SchedulerCache) JobSettingShown(job *api.JobInfo, condition string) {
	if job.PodGroup == nil {
		return
	}
	r := &sc.settings
	r.mu.Lock()
	defer r.mu.Unlock()
	if said, ok := r.byUID[job.PodGroup.UID]; ok {
		delete(said, condition)
		if len(said) == 0 {
			delete(r.byUID, job.PodGroup.UID)
		}
	}
}

// forget drops what was said about a deleted PodGroup.
func (r *settingReports) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byUID, uid)
}
