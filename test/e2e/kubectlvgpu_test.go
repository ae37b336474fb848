//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// kubectl vgpu, the binary a user installs, against the API server: on one GPU of 24576 MiB a
// team's job holds 20000 MiB, so the next asks 20000 in vain; `queues` shows the department
// and the team with what the team holds, and `why` tells the waiting pod's PodGroup condition
// and how far the GPU was from fitting it.
func TestKubectlVGPUTellsQueuesAndWhy(t *testing.T) {
	e := newSchedulerEnv(t)
	e.gpuNode("gpu", 1, 4, 24576, 0)
	dept := e.queueWith("dept", queueUnder("root", corev1.ResourceList{vgpu.DefaultCountResource: resource.MustParse("4")}, nil))
	team := e.queueWith("team", queueUnder(dept, nil, teamShare(2, 20000)))
	e.scheduler(hierarchyConf)
	e.vcJob("train", team, 1, 1, 20000)
	e.waitBound("train-", 1, 60*time.Second)
	// The waiting pod selects the env's GPU node, as a pod pinned to a GPU model would: why
	// measures only the GPUs it may use, not those other tests have on the shared cluster.
	req := workerRequest(20000)
	e.gangWith("tune", team, "", 1, 1, "", timesList(req, 1), nil, func(_ int, pod *corev1.Pod) {
		workerResources(pod, req)
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: e.name + "-gpu"}
	})
	e.podGroup("tune", 60*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && c.Status == corev1.ConditionTrue
	})

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary(t, "kubectl-vgpu"), append([]string{"--kubeconfig", kubeconfigPath()}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl vgpu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	has := func(out, what string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Errorf("kubectl vgpu %s does not say %q:\n%s", what, l, out)
			}
		}
	}
	queues := run("queues")
	has(queues, "queues", "  "+dept+" ", "    "+team+" ") // under root, then under dept
	for _, line := range strings.Split(queues, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == team && f[3] != "1/20000" && f[3] != "1/20000/0" {
			t.Errorf("queue %s: allocated %s, want 1/20000 (one vGPU, 20000 MiB):\n%s", team, f[3], queues)
		}
	}
	why := run("why", "tune-0", "-n", e.ns)
	has(why, "why",
		fmt.Sprintf("PodGroup %s/tune: ", e.ns),
		"Unschedulable   True     NotEnoughResources",
		fmt.Sprintf("Pod %s/tune-0: Pending", e.ns),
		fmt.Sprintf("%s on %s-gpu: 4576 MiB free, 20000 MiB asked", nvml.FakeUUID(e.name+"-gpu", 0), e.name))
}
