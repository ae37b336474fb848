package conformance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
)

// TestUpstreamDefaultTierLoads: the tier upstream's default configuration and Helm chart
// write for conformance (no arguments, or stray ones) is accepted by validation.
func TestUpstreamDefaultTierLoads(t *testing.T) {
	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, New)
	reg.RegisterAction(noAction{})
	for _, args := range []conf.Arguments{nil, {"unknown": "ignored"}} {
		cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName, Arguments: args}}}}}
		if resolved, skipped, err := conf.Resolve(cfg, reg); err != nil || len(resolved.Tiers[0].Plugins) != 1 || skipped != nil {
			t.Errorf("arguments %v: %v, skipped %v", args, err, skipped)
		}
	}
}

type noAction struct{}

func (noAction) Name() string               { return "allocate" }
func (noAction) Execute(*framework.Session) {}

// TestChangesNoDecision: with conformance as the only plugin, every session answer is the
// framework's default, and closing the session writes no condition.
func TestChangesNoDecision(t *testing.T) {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "pg"},
		Spec: schedulingv1beta1.PodGroupSpec{MinMember: 1}}
	job := api.NewJobInfo("kube-system/pg")
	job.SetPodGroup(pg, "default")
	job.AddTask(api.NewTaskInfo(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "critical", UID: "critical",
		Annotations: map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: "pg"}},
		Spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}}))
	ci := &api.ClusterInfo{Jobs: map[api.JobID]*api.JobInfo{job.UID: job}, Nodes: map[string]*api.NodeInfo{}, Queues: map[api.QueueID]*api.QueueInfo{}}

	reg := framework.NewRegistry()
	reg.RegisterPlugin(PluginName, New)
	cfg := &conf.SchedulerConfiguration{Actions: "allocate", Tiers: []conf.Tier{{Plugins: []conf.PluginOption{{Name: PluginName}}}}}
	ssn := framework.OpenSession(&frameworktest.Cache{Snap: ci}, cfg, reg, nil)
	if r := ssn.JobValid(job); r != nil {
		t.Errorf("JobValid = %+v, want nil", r)
	}
	if !ssn.JobReady(job) || !ssn.JobPipelined(job) || !ssn.JobEnqueueable(job) {
		t.Error("conformance voted on a job")
	}
	framework.CloseSession(ssn)
	if len(job.Status.Conditions) != 0 {
		t.Errorf("conditions written: %+v", job.Status.Conditions)
	}
}
