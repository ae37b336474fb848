package sla

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/enqueue"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/ignoredannotation"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// Golden: the argument and annotation keys are Volcano's, word for word.
func TestKeysAreVolcanos(t *testing.T) {
	if PluginName != "sla" || WaitingTime != "sla-waiting-time" || PrefixedWaitingTime != "volcano.sh/sla-waiting-time" {
		t.Errorf("plugin %q, argument and annotation %q, prefixed annotation %q", PluginName, WaitingTime, PrefixedWaitingTime)
	}
}

func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		value   interface{}
		want    time.Duration
		refusal string
	}{
		{nil, 0, ""},
		{"1h2m3s", time.Hour + 2*time.Minute + 3*time.Second, ""},
		{"90s", 90 * time.Second, ""},
		{"soon", 0, `argument "sla-waiting-time": "soon" is not a duration: want a positive one such as "30m" or "1h30m"`},
		{3600, 0, `argument "sla-waiting-time": "3600" is not a duration: want a positive one such as "30m" or "1h30m"`},
		{"-5m", 0, `argument "sla-waiting-time": "-5m" is not positive: want a positive duration such as "30m" or "1h30m"`},
		{"0s", 0, `argument "sla-waiting-time": "0s" is not positive: want a positive duration such as "30m" or "1h30m"`},
	} {
		args := conf.Arguments{}
		if tc.value != nil {
			args[WaitingTime] = tc.value
		}
		p, err := newPlugin(args, time.Now)
		if tc.refusal != "" {
			var argErr *conf.ArgumentError
			if !errors.As(err, &argErr) || argErr.Key != WaitingTime || err.Error() != tc.refusal {
				t.Errorf("%v: error %v, want an argument error %q", tc.value, err, tc.refusal)
			}
			continue
		}
		if err != nil || p.waiting != tc.want {
			t.Errorf("%v: waiting %v, error %v; want %v", tc.value, p, err, tc.want)
		}
	}
}

// now is the sessions' clock: 1,000 s after st.Epoch.
var now = st.Epoch.Add(1000 * time.Second)

// slaJob is a Pending PodGroup with minResources created created seconds after st.Epoch,
// with the given annotations (key, value pairs).
func slaJob(name string, created int, annotations ...string) *api.JobInfo {
	pg := st.MakePodGroup().Namespace("ns").Name(name).Created(created).MinMember(1).Queue("q").
		Phase(schedulingv1beta1.PodGroupPending).MinResources(st.Resources("1", "1Gi")).Obj()
	for i := 0; i+1 < len(annotations); i += 2 {
		if pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		pg.Annotations[annotations[i]] = annotations[i+1]
	}
	return frameworktest.JobOf(pg)
}

// open opens a session over the jobs with the plugin (argument waiting, "" for none) in the
// first tier and the others after it, each tier of its own.
func open(t *testing.T, cache *frameworktest.Cache, waiting string, jobs []*api.JobInfo, later ...framework.Plugin) *framework.Session {
	t.Helper()
	args := conf.Arguments{}
	if waiting != "" {
		args[WaitingTime] = waiting
	}
	p, err := newPlugin(args, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	cache.Snap = frameworktest.ClusterOf(nil, jobs...)
	cache.Snap.Queues[api.QueueID("q")] = api.NewQueueInfo(st.MakeQueue().Name("q").Created(0).Obj())
	tiers := [][]framework.Plugin{{p}}
	for _, other := range later {
		tiers = append(tiers, []framework.Plugin{other})
	}
	return frameworktest.OpenTiers(cache, conf.SchedulerConfiguration{Actions: "enqueue, allocate"}, tiers...)
}

func TestJobOrder(t *testing.T) {
	jobs := []*api.JobInfo{
		slaJob("none-old", 0),
		slaJob("annotated-late", 600, WaitingTime, "10m"),                      // deadline 1,200
		slaJob("prefixed-overdue", 100, PrefixedWaitingTime, "5m"),             // deadline 400
		slaJob("conf-default", 700),                                            // deadline 700 + 30m
		slaJob("both-keys", 500, PrefixedWaitingTime, "1m", WaitingTime, "1h"), // the prefixed wins: 560
	}
	ssn := open(t, &frameworktest.Cache{}, "30m", jobs)
	sorted := slices.Clone(jobs)
	slices.SortStableFunc(sorted, func(l, r *api.JobInfo) int {
		switch {
		case ssn.JobOrderFn(l, r):
			return -1
		case ssn.JobOrderFn(r, l):
			return 1
		}
		return 0
	})
	var got []string
	for _, j := range sorted {
		got = append(got, j.Name)
	}
	// With the argument every job has a deadline; the one created first has the latest but one.
	want := []string{"prefixed-overdue", "both-keys", "annotated-late", "none-old", "conf-default"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}

	// Without the argument, jobs without an annotation come last, oldest first as ever.
	ssn = open(t, &frameworktest.Cache{}, "", jobs)
	if !ssn.JobOrderFn(jobs[1], jobs[0]) || ssn.JobOrderFn(jobs[0], jobs[1]) {
		t.Error("a job with a waiting time does not go before an older one without")
	}
	if !ssn.JobOrderFn(jobs[0], jobs[3]) {
		t.Error("between jobs without a waiting time the older does not go first")
	}
}

// rejector stands in for a quota plugin that finds no room for any job.
type rejector struct{}

func (rejector) Name() string { return "rejector" }
func (rejector) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobEnqueueableFn("rejector", func(*api.JobInfo) int { return framework.Reject })
	ssn.AddJobPipelinedFn("rejector", func(*api.JobInfo) int { return framework.Reject })
}
func (rejector) OnSessionClose(*framework.Session) {}

// A job past its waiting time is admitted and kept pipelined although a plugin of a later
// tier rejects it (Volcano's vote: a tier with a Permit decides); one within it is not.
func TestOverdueJobIsEnqueuedDespiteALaterRejection(t *testing.T) {
	overdue, waiting := slaJob("overdue", 0, WaitingTime, "10m"), slaJob("waiting", 900, WaitingTime, "10m")
	none := slaJob("none", 0)
	ssn := open(t, &frameworktest.Cache{}, "", []*api.JobInfo{overdue, waiting, none}, rejector{})
	for _, tc := range []struct {
		job  *api.JobInfo
		want bool
	}{{overdue, true}, {waiting, false}, {none, false}} {
		if got := ssn.JobPipelined(tc.job); got != tc.want {
			t.Errorf("%s: pipelined %t, want %t", tc.job.Name, got, tc.want)
		}
	}
	enqueue.New().Execute(ssn)
	for _, tc := range []struct {
		job  *api.JobInfo
		want schedulingv1beta1.PodGroupPhase
	}{{overdue, schedulingv1beta1.PodGroupInqueue}, {waiting, schedulingv1beta1.PodGroupPending}, {none, schedulingv1beta1.PodGroupPending}} {
		if tc.job.Status.Phase != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.job.Name, tc.job.Status.Phase, tc.want)
		}
	}
}

// A Reject in the plugin's own tier still keeps an overdue job out, as in Volcano.
func TestRejectionInTheSameTierWins(t *testing.T) {
	overdue := slaJob("overdue", 0, WaitingTime, "10m")
	p, _ := newPlugin(conf.Arguments{}, func() time.Time { return now })
	cache := &frameworktest.Cache{Snap: frameworktest.ClusterOf(nil, overdue)}
	ssn := frameworktest.OpenTiers(cache, conf.SchedulerConfiguration{Actions: "enqueue"}, []framework.Plugin{p, rejector{}})
	if ssn.JobEnqueueable(overdue) {
		t.Error("an overdue job is enqueueable against a Reject in the same tier")
	}
}

// A malformed annotation is ignored (the next source applies), and the PodGroup says so: a
// condition naming the annotation and value, and one Warning event while the PodGroup shows
// it. Fixed, the condition goes.
func TestMalformedAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		waiting     string
		annotations []string
		message     string
		deadline    bool
	}{
		{"unparsable, no argument", "", []string{WaitingTime, "ten minutes"},
			`annotation sla-waiting-time: "ten minutes" is not a duration: want a positive one such as "30m" or "1h30m"; ignored by the sla plugin: the job has no waiting time`, false},
		{"negative, the argument applies", "10m", []string{PrefixedWaitingTime, "-10m"},
			`annotation volcano.sh/sla-waiting-time: "-10m" is not positive: want a positive duration such as "30m" or "1h30m"; ignored by the sla plugin: the job's waiting time is 10m0s`, true},
		{"bad prefixed, good plain", "", []string{PrefixedWaitingTime, "1x", WaitingTime, "5m"},
			`annotation volcano.sh/sla-waiting-time: "1x" is not a duration: want a positive one such as "30m" or "1h30m"; ignored by the sla plugin: the job's waiting time is 5m0s`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := slaJob("bad", 0, tc.annotations...)
			cache := &frameworktest.Cache{}
			ssn := open(t, cache, tc.waiting, []*api.JobInfo{job}, rejector{})
			want := []frameworktest.JobEvent{{PodGroup: "bad", Type: corev1.EventTypeWarning, Reason: string(Condition), Message: tc.message}}
			if !slices.Equal(cache.Events, want) {
				t.Errorf("events %v, want %v", cache.Events, want)
			}
			if c := condition(job); c == nil || c.Message != tc.message || c.Reason != ignoredannotation.Reason || c.Status != corev1.ConditionTrue {
				t.Errorf("condition %+v, want one with %q", c, tc.message)
			}
			if got := ssn.JobEnqueueable(job); got != tc.deadline {
				t.Errorf("enqueueable against a later Reject %t, want %t", got, tc.deadline)
			}

			// The next cycle, with the condition written, says nothing again.
			pg := job.PodGroup.DeepCopy()
			pg.Status = job.Status
			again := frameworktest.JobOf(pg)
			cache.Events = nil
			open(t, cache, tc.waiting, []*api.JobInfo{again})
			if len(cache.Events) != 0 || condition(again) == nil {
				t.Errorf("again: events %v, condition %+v; want none and the condition kept", cache.Events, condition(again))
			}

			// Fixed: the condition goes.
			pg.Annotations = map[string]string{WaitingTime: "2m"}
			fixed := frameworktest.JobOf(pg)
			open(t, cache, tc.waiting, []*api.JobInfo{fixed})
			if condition(fixed) != nil || len(cache.Events) != 0 {
				t.Errorf("fixed: condition %+v, events %v; want none", condition(fixed), cache.Events)
			}
		})
	}
}

func condition(job *api.JobInfo) *schedulingv1beta1.PodGroupCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == Condition {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}
