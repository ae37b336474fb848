package overcommit

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	qt "github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/quota/quotatest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/proportion"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

func TestNewReadsFactor(t *testing.T) {
	cases := []struct {
		name    string
		args    conf.Arguments
		want    float64
		wantErr bool
	}{
		{"absent: default", nil, 1.2, false},
		{"number", conf.Arguments{FactorArgument: 1.5}, 1.5, false},
		{"whole number", conf.Arguments{FactorArgument: 2}, 2, false},
		{"string that spells a number", conf.Arguments{FactorArgument: "1.0"}, 1, false},
		{"below 1: default", conf.Arguments{FactorArgument: 0.5}, 1.2, false},
		{"NaN: default", conf.Arguments{FactorArgument: "NaN"}, 1.2, false},
		{"not a number: error", conf.Arguments{FactorArgument: "lots"}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.args)
			if tc.wantErr {
				var argErr *conf.ArgumentError
				if !errors.As(err, &argErr) || !strings.Contains(err.Error(), FactorArgument) {
					t.Fatalf("want an error naming %s, got %v", FactorArgument, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.(*overcommitPlugin).factor; got != tc.want {
				t.Errorf("factor %v, want %v", got, tc.want)
			}
		})
	}
}

var builders = map[string]framework.PluginBuilder{PluginName: New, proportion.PluginName: proportion.New}

// cluster: one node of 4 cpu / 4Gi / 8192 MiB of vGPU memory, half its cpu used by a running
// pod, and one admitted job that has placed nothing yet and reserves 1 cpu. With the default
// factor the room is 4.8 - 2 = 2.8 cpu, 1.8 of it left after the reservation.
func cluster(pending ...*schedulingv1beta1.PodGroup) frameworktest.Objects {
	return frameworktest.Objects{
		Nodes:  []*corev1.Node{st.Node("n1", st.Resources("4", "4Gi", string(vgpu.DefaultMemoryResource), "8192")).Obj()},
		Queues: []*schedulingv1beta1.Queue{qt.Queue("default", nil), qt.Queue("small", st.Resources("500m", ""))},
		PodGroups: append([]*schedulingv1beta1.PodGroup{
			qt.PodGroup("running", "default", 1, st.Resources("2", ""), schedulingv1beta1.PodGroupRunning),
			qt.PodGroup("admitted", "default", 1, st.Resources("1", ""), schedulingv1beta1.PodGroupInqueue),
		}, pending...),
		Pods: []*corev1.Pod{qt.Pod("running-0", "running", "n1", st.Resources("2", ""))},
	}
}

func pendingJob(name, queue string, minResources corev1.ResourceList) *schedulingv1beta1.PodGroup {
	return qt.PodGroup(name, queue, 1, minResources, schedulingv1beta1.PodGroupPending)
}

func overused(podGroup, message string) frameworktest.JobEvent {
	return frameworktest.JobEvent{PodGroup: podGroup, Type: corev1.EventTypeNormal, Reason: "Unschedulable", Message: message}
}

func TestEnqueue(t *testing.T) {
	cases := []struct {
		name   string
		factor float64
		jobs   []*schedulingv1beta1.PodGroup // admitted in order
		// withProportion votes proportion after overcommit, as the default configuration does.
		withProportion bool
		want           []bool
		wantEvents     []frameworktest.JobEvent
	}{
		{name: "fits in the overcommitted room", factor: 1.2,
			jobs: []*schedulingv1beta1.PodGroup{pendingJob("a", "default", st.Resources("1500m", ""))},
			want: []bool{true}},
		{name: "factor 1 leaves only 1 cpu next to the reservation",
			factor: 1, jobs: []*schedulingv1beta1.PodGroup{pendingJob("a", "default", st.Resources("1500m", ""))},
			want:       []bool{false},
			wantEvents: []frameworktest.JobEvent{overused("a", "resource in cluster is overused: overused cpu")}},
		{name: "a job admitted this cycle holds its room for the next",
			factor: 1.2, jobs: []*schedulingv1beta1.PodGroup{
				pendingJob("a", "default", st.Resources("1500m", "")), pendingJob("b", "default", st.Resources("500m", ""))},
			want:       []bool{true, false},
			wantEvents: []frameworktest.JobEvent{overused("b", "resource in cluster is overused: overused cpu")}},
		{name: "only requested dimensions count; each overused one is named, sorted",
			factor: 1.2, jobs: []*schedulingv1beta1.PodGroup{
				pendingJob("a", "default", st.Resources("", "4Gi")),
				pendingJob("b", "default", st.Resources("3", "5Gi", string(vgpu.DefaultMemoryResource), "10000", "pods", "100")),
			},
			want: []bool{true, false},
			wantEvents: []frameworktest.JobEvent{overused("b",
				"resource in cluster is overused: overused cpu, overused memory, overused volcano.sh/vgpu-memory")}},
		{name: "no minResources: always admitted", factor: 1,
			jobs: []*schedulingv1beta1.PodGroup{pendingJob("a", "default", nil)}, want: []bool{true}},
		// Factor 1 leaves 2 - 1 = 1 cpu: room for a or b, not both.
		{name: "a job the queue rejects after overcommit permitted holds no room",
			factor: 1, jobs: []*schedulingv1beta1.PodGroup{
				pendingJob("a", "small", st.Resources("1", "")), pendingJob("b", "default", st.Resources("1", ""))},
			withProportion: true,
			want:           []bool{false, true},
			wantEvents:     []frameworktest.JobEvent{qt.QueueQuotaRejected("a", "queue resource quota insufficient: insufficient cpu")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cache := &frameworktest.Cache{Snap: cluster(tc.jobs...).ClusterInfo()}
			plugins := []conf.PluginOption{{Name: PluginName, Arguments: conf.Arguments{FactorArgument: tc.factor}}}
			if tc.withProportion {
				plugins = append(plugins, conf.PluginOption{Name: proportion.PluginName})
			}
			ssn := frameworktest.OpenSession(t, cache, qt.Actions, builders, plugins...)
			var got []bool
			for _, pg := range tc.jobs {
				got = append(got, qt.Enqueue(ssn, qt.Job(ssn, pg.Name)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, cache.Events); diff != "" {
				t.Errorf("PodGroup events (-want +got):\n%s", diff)
			}
		})
	}
}
