// Package sla gives jobs a waiting-time service level, as Volcano's sla plugin (v1.15): a job
// whose PodGroup was created longer ago than its waiting time is admitted by enqueue and kept
// by allocate even while not ready (its JobEnqueueable and JobPipelined votes are Permit;
// as every Permit, a Reject in the same or an earlier tier still wins), and jobs with a
// waiting time go before jobs without one, the earliest deadline (creation + waiting time)
// first.
//
// The waiting time is the PodGroup's annotation volcano.sh/sla-waiting-time, else its
// annotation sla-waiting-time, else the plugin's argument sla-waiting-time; Volcano's job
// controller copies a VolcanoJob's annotations to its PodGroup. A malformed annotation is
// ignored, as upstream, and the PodGroup says so (package ignoredannotation); where upstream
// logs it only.
package sla

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/ignoredannotation"
)

// PluginName is the plugin's name in volcano-scheduler.conf.
const PluginName = "sla"

// WaitingTime is the plugin's argument, and the PodGroup annotation read after
// PrefixedWaitingTime: a Go duration such as "1h30m", above zero.
const WaitingTime = "sla-waiting-time"

// PrefixedWaitingTime is the PodGroup annotation read first.
const PrefixedWaitingTime = schedulingv1beta1.JobWaitingTime

// ArgumentKeys are the arguments New reads.
var ArgumentKeys = conf.ArgumentKeys{WaitingTime}

// Condition is the PodGroup condition of a job whose waiting-time annotation is ignored.
const Condition schedulingv1beta1.PodGroupConditionType = "SLAAnnotationInvalid"

type slaPlugin struct {
	// waiting is the argument's waiting time; 0 when not set.
	waiting time.Duration
	now     func() time.Time
	// deadlines are the session's jobs that have a waiting time, with the time it ends.
	deadlines map[api.JobID]time.Time
}

// New builds the plugin. A sla-waiting-time that is not a positive duration is refused,
// naming the value: the plugin then runs without one (loading reports it).
func New(args conf.Arguments) (framework.Plugin, error) {
	return newPlugin(args, time.Now)
}

func newPlugin(args conf.Arguments, now func() time.Time) (*slaPlugin, error) {
	p := &slaPlugin{now: now}
	var text string
	if err := args.GetString(&text, WaitingTime); err != nil {
		return nil, err
	}
	if text == "" {
		return p, nil
	}
	waiting, err := parseWaitingTime(text)
	if err != nil {
		return nil, conf.InvalidArgument(WaitingTime, text, err.Error())
	}
	p.waiting = waiting
	return p, nil
}

// parseWaitingTime reads a waiting time, or says why it is none.
func parseWaitingTime(text string) (time.Duration, error) {
	d, err := time.ParseDuration(text)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration: want a positive one such as \"30m\" or \"1h30m\"", text)
	case d <= 0:
		return 0, fmt.Errorf("%q is not positive: want a positive duration such as \"30m\" or \"1h30m\"", text)
	}
	return d, nil
}

func (p *slaPlugin) Name() string { return PluginName }

func (p *slaPlugin) OnSessionOpen(ssn *framework.Session) {
	p.deadlines = map[api.JobID]time.Time{}
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		if waiting := p.waitingTime(ssn, job); waiting > 0 {
			p.deadlines[job.UID] = job.CreationTimestamp.Add(waiting)
		}
	}
	if len(p.deadlines) == 0 {
		return
	}
	now := p.now()
	ssn.AddJobOrderFn(PluginName, p.earlierDeadlineFirst)
	overdue := func(job *api.JobInfo) int {
		deadline, ok := p.deadlines[job.UID]
		if !ok || now.Before(deadline) {
			return framework.Abstain
		}
		klog.V(4).InfoS("Job waited past its sla-waiting-time", "podGroup", klog.KRef(job.Namespace, job.Name), "deadline", deadline)
		return framework.Permit
	}
	ssn.AddJobEnqueueableFn(PluginName, overdue)
	ssn.AddJobPipelinedFn(PluginName, overdue)
}

// waitingTime is the job's waiting time from its annotations, else the argument's; 0 for
// none. A malformed annotation is reported on the job and the next source is read.
func (p *slaPlugin) waitingTime(ssn *framework.Session, job *api.JobInfo) time.Duration {
	var problems []string
	waiting := p.waiting
	for _, key := range []string{PrefixedWaitingTime, WaitingTime} {
		text, ok := job.PodGroup.Annotations[key]
		if !ok {
			continue
		}
		d, err := parseWaitingTime(text)
		if err == nil {
			waiting = d
			break
		}
		problems = append(problems, fmt.Sprintf("annotation %s: %v", key, err))
	}
	if len(problems) == 0 {
		ignoredannotation.Clear(job, Condition)
		return waiting
	}
	outcome := "the job has no waiting time"
	if waiting > 0 {
		outcome = fmt.Sprintf("the job's waiting time is %s", waiting)
	}
	message := fmt.Sprintf("%s; ignored by the sla plugin: %s", strings.Join(problems, "; "), outcome)
	ignoredannotation.Report(ssn, job, Condition, message)
	return waiting
}

// earlierDeadlineFirst orders jobs with a waiting time before those without, and among them
// the earlier deadline first; no opinion between jobs without.
func (p *slaPlugin) earlierDeadlineFirst(l, r *api.JobInfo) int {
	ld, lok := p.deadlines[l.UID]
	rd, rok := p.deadlines[r.UID]
	switch {
	case !lok && !rok:
		return 0
	case !rok:
		return -1
	case !lok:
		return 1
	}
	return cmp.Compare(ld.UnixNano(), rd.UnixNano())
}

func (p *slaPlugin) OnSessionClose(*framework.Session) { p.deadlines = nil }
