package deviceshare

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
)

// vgpuOf renders a resource's vGPU dimensions in milli-units.
func vgpuOf(r *api.Resource) string {
	return fmt.Sprintf("number %v memory %v cores %v", r.Get(resCount), r.Get(resMem), r.Get(resCores))
}

// TestQueueUsage: a task holding vGPUs counts what its devices book on its node's GPUs, in
// place of its vgpu-memory and vgpu-cores requests; any other task counts its request. The
// queue's status.allocated sums them.
func TestQueueUsage(t *testing.T) {
	pct := ctr("main", string(resCount)+"=1", string(resPct)+"=50", "cpu=100m")
	stale := using("stale", "pg", dev(9, "1000", "10"))
	stale.Spec.Containers = []corev1.Container{vgpuCtr("main", 1, 1000, 10)}
	cpu := pod("cpu", "pg", ctr("main", "cpu=1"))
	cpu.Spec.NodeName, cpu.Status.Phase = "n1", corev1.PodRunning
	running := []*corev1.Pod{
		// 2 vGPUs of 3000 MiB in one container: the request says 3000.
		runningWith(pod("two", "pg", vgpuCtr("main", 2, 3000, 0)), "n1", dev(0, "3000", "0")+dev(1, "3000", "0")),
		// Half of a 30,000 MiB GPU: the request says no vgpu-memory at all.
		runningWith(pod("pct", "pg", pct), "n1", dev(2, "15000", "0")),
		cpu,
		// Its assignment names a GPU n1 does not list: it books nothing there.
		runningWith(stale, "n1", dev(9, "1000", "10")),
	}
	cache := &frameworktest.Cache{Snap: snapshot([]*api.NodeInfo{nodeInfo(gpuNode("n1", 0, gpus(4, 10, 30000, h200)), running...)}, 1,
		append(running, pod("new", "pg", vgpuCtr("main", 1, 1000, 20)))...)}
	ssn := openDeviceSession(cache)
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(taskOf(t, ssn, "new"), ssn.Nodes["n1"]); err != nil {
		t.Fatal(err)
	}
	stmt.Commit()

	for _, tc := range []struct {
		task string
		// want is the task's vGPU dimensions; empty: its request, untouched.
		want string
	}{
		{"two", "number 2000 memory 6e+06 cores 0"},
		{"pct", "number 1000 memory 1.5e+07 cores 0"},
		{"new", "number 1000 memory 1e+06 cores 20000"},
		{"cpu", ""},
		{"stale", ""},
	} {
		task := taskOf(t, ssn, tc.task)
		got := api.EmptyResource()
		ssn.AddQueueUsage(got, task)
		switch {
		case tc.want == "" && !reflect.DeepEqual(got, api.EmptyResource().Add(task.Resreq)):
			t.Errorf("%s counts %s, want its request %s", tc.task, vgpuOf(got), vgpuOf(task.Resreq))
		case tc.want != "" && vgpuOf(got) != tc.want:
			t.Errorf("%s counts %s, want %s", tc.task, vgpuOf(got), tc.want)
		case tc.want != "" && (got.MilliCPU != task.Resreq.MilliCPU || got.Get(corev1.ResourcePods) != 1000):
			t.Errorf("%s counts cpu %v pods %v, want its request's", tc.task, got.MilliCPU, got.Get(corev1.ResourcePods))
		}
	}

	framework.CloseSession(ssn)
	// two, pct and new as above; stale's request of 1000 MiB and 10%.
	if got, want := vgpuOf(cache.Allocated["default"]), "number 5000 memory 2.3e+07 cores 30000"; got != want {
		t.Errorf("queue allocated %s, want %s", got, want)
	}
}
