package priority

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// builders builds this plugin alone, for sessions.
var builders = map[string]framework.PluginBuilder{PluginName: New}

// entry is a job or task with a priority and a creation time. The times run against the
// expected order wherever priorities differ, so only the plugin can produce it.
type entry struct {
	name     string
	priority int32
	created  int64
}

func TestJobOrder(t *testing.T) {
	cases := []struct {
		name    string
		entries []entry
		want    []string
	}{
		{"higher priority first", []entry{{"low", 0, 1}, {"high", 100, 3}, {"mid", 10, 2}}, []string{"high", "mid", "low"}},
		{"negative priorities", []entry{{"zero", 0, 1}, {"minus", -5, 0}}, []string{"zero", "minus"}},
		{"equal priority falls back to the older job", []entry{{"young", 7, 2}, {"old", 7, 1}, {"top", 8, 3}}, []string{"top", "old", "young"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{}, "allocate", builders, conf.PluginOption{Name: PluginName})
			var jobs []*api.JobInfo
			for _, e := range tc.entries {
				j := api.NewJobInfo(api.NewJobID("ns", e.name))
				j.Name, j.Priority, j.CreationTimestamp = e.name, e.priority, metav1.Unix(e.created, 0)
				jobs = append(jobs, j)
			}
			slices.SortFunc(jobs, func(l, r *api.JobInfo) int { return boolOrder(ssn.JobOrderFn(l, r), ssn.JobOrderFn(r, l)) })
			var got []string
			for _, j := range jobs {
				got = append(got, j.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTaskOrder(t *testing.T) {
	cases := []struct {
		name    string
		entries []entry
		want    []string
	}{
		// Pod-name indexes run against the priorities, so the name fallback would reverse them.
		{"higher priority first", []entry{{"job-w-0", 1, 1}, {"job-w-1", 1000, 2}, {"job-w-2", 2000000000, 3}},
			[]string{"job-w-2", "job-w-1", "job-w-0"}},
		{"equal priority falls back to the pod-name index", []entry{{"job-w-1", 5, 1}, {"job-w-0", 5, 2}, {"job-w-9", 6, 3}},
			[]string{"job-w-9", "job-w-0", "job-w-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ssn := frameworktest.OpenSession(t, &frameworktest.Cache{}, "allocate", builders, conf.PluginOption{Name: PluginName})
			var tasks []*api.TaskInfo
			for _, e := range tc.entries {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: e.name, UID: types.UID(e.name),
					CreationTimestamp: metav1.Unix(e.created, 0)}, Spec: corev1.PodSpec{Priority: &e.priority}}
				tasks = append(tasks, api.NewTaskInfo(pod))
			}
			slices.SortFunc(tasks, func(l, r *api.TaskInfo) int { return boolOrder(ssn.TaskOrderFn(l, r), ssn.TaskOrderFn(r, l)) })
			var got []string
			for _, task := range tasks {
				got = append(got, task.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// boolOrder turns the session's "l before r" answers into a sort comparison.
func boolOrder(lFirst, rFirst bool) int {
	switch {
	case lFirst:
		return -1
	case rFirst:
		return 1
	}
	return 0
}

// TestMissingPriorityClass: a PodGroup that names a PriorityClass the cluster does not have
// gets a Warning event and a PriorityClassNotFound condition saying which and the priority
// it is scheduled with; the next cycle says nothing again, and once the class exists the
// condition goes.
func TestMissingPriorityClass(t *testing.T) {
	pg := st.MakePodGroup().Namespace("ns").Name("pg").MinMember(1).Queue("q").Phase(schedulingv1beta1.PodGroupPending).Obj()
	pg.Spec.PriorityClassName = "gold"
	open := func(job *api.JobInfo) *frameworktest.Cache {
		cache := &frameworktest.Cache{Snap: frameworktest.ClusterOf(nil, job)}
		framework.CloseSession(frameworktest.OpenSession(t, cache, "enqueue", builders, conf.PluginOption{Name: PluginName}))
		return cache
	}
	condition := func(job *api.JobInfo) *schedulingv1beta1.PodGroupCondition {
		for i, c := range job.Status.Conditions {
			if c.Type == ClassNotFound {
				return &job.Status.Conditions[i]
			}
		}
		return nil
	}
	const message = "PriorityClass gold does not exist; the job is scheduled with the default priority 3"
	job := frameworktest.JobOf(pg)
	job.Priority, job.PriorityClassMissing = 3, true
	cache := open(job)
	want := []frameworktest.JobEvent{{PodGroup: "pg", Type: corev1.EventTypeWarning, Reason: string(ClassNotFound), Message: message}}
	if !slices.Equal(cache.Events, want) {
		t.Errorf("events %v, want %v", cache.Events, want)
	}
	if c := condition(job); c == nil || c.Reason != string(ClassNotFound) || c.Message != message || c.Status != corev1.ConditionTrue {
		t.Errorf("condition %+v, want one saying %q", c, message)
	}

	written := pg.DeepCopy()
	written.Status = job.Status
	again := frameworktest.JobOf(written)
	again.Priority, again.PriorityClassMissing = 3, true
	if cache := open(again); len(cache.Events) != 0 || condition(again) == nil {
		t.Errorf("again: events %v, condition %+v; want none and the condition kept", cache.Events, condition(again))
	}

	created := frameworktest.JobOf(written)
	if cache := open(created); len(cache.Events) != 0 || condition(created) != nil {
		t.Errorf("class created: events %v, condition %+v; want none", cache.Events, condition(created))
	}
}
