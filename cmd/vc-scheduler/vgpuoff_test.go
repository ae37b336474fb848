package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
	"github.com/volcano-vgpu/volcano-vgpu/test/workload"
)

// upstreamConf reads one of testdata/upstream-confs.
func upstreamConf(t *testing.T, file string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "upstream-confs", file))
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// vgpuOffCycle runs one cycle of the upstream conf file over two vGPU nodes with a 1-vGPU /
// 8192 MiB pod and a pod that asks only for cpu, each a PodGroup of one, and closes it as the
// scheduler does; it returns what was bound and the vGPU pod's job.
func vgpuOffCycle(t *testing.T, file string) ([]*api.TaskInfo, *api.JobInfo) {
	t.Helper()
	w, err := workload.Load(filepath.Join("..", "..", "test", "workload", "singles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ci := nodeCluster(w, 2)
	addJob(ci, w.Job("ns", "volcano", "gpu", w.Mix[0]))
	cpu := st.MakePodGroup().Namespace("ns").Name("cpu").Obj()
	cpu.Spec.MinMember, cpu.Spec.Queue = 1, "default"
	addJob(ci, workload.Job{PodGroup: cpu, Pods: []*corev1.Pod{st.Pod("cpu-0", "1", "1Gi").Group("cpu").Obj()}})

	registry := newRegistry(allocate.Options{})
	cfg, skipped, err := conf.Parse(upstreamConf(t, file), registry)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("%s: skipped %v, err %v", file, skipped, err)
	}
	cache := &frameworktest.Cache{Snap: ci}
	ssn := frameworktest.RunActions(t, cache, cfg, registry)
	framework.CloseSession(ssn)
	return cache.Bound, ssn.Jobs["ns/gpu"]
}

// Upstream's chart default conf (no deviceshare) on a cluster with vGPU nodes: the vGPU pod
// stays Pending, its PodGroup's Unschedulable condition naming the plugin it lacks, instead of
// being bound without an assignment; the cpu pod binds. With deviceshare in the file the vGPU
// pod binds with its assignment.
func TestConfWithoutDeviceshareKeepsVGPUPodsPending(t *testing.T) {
	bound, job := vgpuOffCycle(t, "01-chart-default.conf")
	if len(bound) != 1 || bound[0].Key() != "ns/cpu-0" {
		t.Fatalf("bound %v, want only ns/cpu-0", bound)
	}
	const reason = "0/2 nodes are unavailable: 2 pod ns/gpu-0 requests volcano.sh/vgpu-number, which only the deviceshare plugin places, " +
		"and the scheduler configuration in force does not turn it on."
	var cond *schedulingv1beta1.PodGroupCondition
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == schedulingv1beta1.PodGroupUnschedulableType {
			cond = &job.Status.Conditions[i]
		}
	}
	if cond == nil || !strings.HasSuffix(cond.Message, "Origin reason is gpu-0: "+reason) {
		t.Errorf("conditions %+v, want Unschedulable ending %q", job.Status.Conditions, reason)
	}

	bound, _ = vgpuOffCycle(t, "02-gpu-preempt-reclaim.conf")
	var keys []string
	for _, b := range bound {
		keys = append(keys, b.Key())
		if b.Key() == "ns/gpu-0" && b.BindAnnotations[vgpu.AssignedDevicesAnnotation] == "" {
			t.Errorf("with deviceshare: ns/gpu-0 bound without %s", vgpu.AssignedDevicesAnnotation)
		}
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"ns/cpu-0", "ns/gpu-0"}) {
		t.Errorf("with deviceshare: bound %q, want both pods", keys)
	}
}
