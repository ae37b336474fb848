//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// chartNamespace is where users install the chart (next to Volcano), and where both programs
// look for the device ConfigMap.
const chartNamespace = "volcano-system"

// helmPath is the pinned helm make tools builds.
func helmPath() string { return filepath.Join(repoRoot(), ".cache", "bin", "helm") }

// helm runs the pinned helm against the local cluster.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmPath(), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// chartValues are this test's values, given after the local cluster's
// (hack/testbed/chart-values.yaml, which make demo uses too): its scheduler name and
// configuration, ports no other test's process holds, its hook directory and node.
func chartValues(t *testing.T, e *schedulerEnv, hook, conf string) string {
	t.Helper()
	values := map[string]any{
		"custom": map[string]any{
			"scheduler_name": e.name, "scheduler_config_override": conf, "scheduler_log_level": 3,
			"scheduler_metrics_port": 18080, "scheduler_healthz_port": 18251, "scheduler_schedule_period": "200ms",
		},
		"devicePlugin": map[string]any{
			"hookPath": hook, "metricsPort": 19395,
			// null drops the default gpu=on selector: Helm merges maps.
			"nodeSelector": map[string]any{envLabel: e.name, "gpu": nil},
		},
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The chart the way users take it: helm install with the locally built images (both programs
// as pods on the real kubelet, under the chart's ServiceAccounts, RBAC and admission policies),
// attacks on those policies through the API server, lab 8 steps 4-7 against it, helm upgrade with a new scheduler_config_override that the running scheduler
// picks up without a restart, and helm uninstall leaving nothing behind.
func TestChartInstallsReplaysLab8UpgradesAndUninstalls(t *testing.T) {
	for _, img := range []string{"vc-scheduler", "vgpu-device-plugin"} {
		if _, err := os.Stat(filepath.Join(repoRoot(), ".cache", "images", img+".tar")); err != nil {
			t.Fatalf("image %s not built: run make images (make test does): %v", img, err)
		}
	}
	// The stand-in also plays kube-scheduler for the chart's own pods (the local cluster runs
	// none): it binds them to the real node.
	e := newSchedulerEnvWith(t, "--place-pods", chartNamespace+"="+realNode)
	ctx := context.Background()
	e.claimRealNode()
	release, chart := "vv-e2e", filepath.Join(repoRoot(), "charts", "volcano-vgpu")
	values := chartValues(t, e, hookDir(t), seedConf(t))
	local := filepath.Join(repoRoot(), "hack", "testbed", "chart-values.yaml")
	helm(t, "install", release, chart, "-n", chartNamespace, "-f", local, "-f", values, "--wait", "--timeout", "3m")
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_ = exec.Command(helmPath(), "uninstall", release, "-n", chartNamespace,
				"--kubeconfig", kubeconfigPath(), "--wait").Run()
		}
	})
	waitAdvertised(t, e.cs, []string{nvml.FakeUUID(realNode, 0)})
	sched := chartSchedulerPod(t, e, release)
	attackAssignments(t, e)
	attackControlEnv(t, e)
	attackFromDevicePlugin(t, e, release)

	// Step 4: one vGPU pod gets HAMi-core's limits from the chart's device plugin.
	pod := &corev1.Pod{}
	labFile(t, "01-single-pod.yaml", pod)
	pod.Namespace, pod.Spec.SchedulerName = e.ns, e.name
	pod.Spec.Containers[0].Image, pod.Spec.Containers[0].Command = tinyImage, []string{"/tiny", "printenv"}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podPhase(t, e.cs, e.ns, pod.Name, corev1.PodRunning, 90*time.Second)
	wantLines(t, "step 4", containerLog(t, e.cs, e.ns, pod.Name, "cuda"),
		"CUDA_DEVICE_MEMORY_LIMIT_0=2000m", "CUDA_DEVICE_SM_LIMIT=30")
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Steps 5-7.
	lab8Steps5to7(t, e)

	// helm upgrade with a new configuration: the same scheduler pod reloads it.
	reloads := strings.Count(podLog(t, e, sched.Name), "Scheduler configuration reloaded")
	spread := strings.Replace(seedConf(t), "deviceshare.SchedulePolicy: binpack", "deviceshare.SchedulePolicy: spread", 1)
	helm(t, "upgrade", release, chart, "-n", chartNamespace, "-f", local, "-f", chartValues(t, e, hookDir(t), spread), "--wait", "--timeout", "3m")
	eventually(t, 90*time.Second, "the running scheduler reloads the upgraded configuration", func(context.Context) (bool, string, error) {
		log := podLog(t, e, sched.Name)
		return strings.Count(log, "Scheduler configuration reloaded") > reloads, tail(log, 3), nil
	})
	if now := chartSchedulerPod(t, e, release); now.UID != sched.UID || now.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the upgrade replaced or restarted the scheduler: pod %s (uid %s, restarts %d), was %s (uid %s)",
			now.Name, now.UID, now.Status.ContainerStatuses[0].RestartCount, sched.Name, sched.UID)
	}

	helm(t, "uninstall", release, "-n", chartNamespace, "--wait", "--timeout", "2m")
	uninstalled = true
	checkNothingLeft(t, e, release)
}

// chartSchedulerPod is the release's one running scheduler pod.
func chartSchedulerPod(t *testing.T, e *schedulerEnv, release string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, 60*time.Second, "one running scheduler pod", func(ctx context.Context) (bool, string, error) {
		pods, err := e.cs.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=scheduler"})
		if err != nil {
			return false, err.Error(), nil
		}
		if len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning || len(pods.Items[0].Status.ContainerStatuses) == 0 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
		}
		pod = &pods.Items[0]
		return true, "", nil
	})
	return pod
}

func podLog(t *testing.T, e *schedulerEnv, name string) string {
	t.Helper()
	b, err := e.cs.CoreV1().Pods(chartNamespace).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("log of %s: %v", name, err)
	}
	return string(b)
}

// checkNothingLeft: after helm uninstall, no object of the release remains, cluster-wide or in
// either namespace the chart writes to.
func checkNothingLeft(t *testing.T, e *schedulerEnv, release string) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	eventually(t, 90*time.Second, "nothing of the release left", func(ctx context.Context) (bool, string, error) {
		var left []string
		add := func(kind string, n int, err error) {
			if err != nil {
				left = append(left, kind+": "+err.Error())
			} else if n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, kind))
			}
		}
		cr, err := e.cs.RbacV1().ClusterRoles().List(ctx, sel)
		add("clusterroles", len(cr.Items), err)
		crb, err := e.cs.RbacV1().ClusterRoleBindings().List(ctx, sel)
		add("clusterrolebindings", len(crb.Items), err)
		for _, ns := range []string{chartNamespace, "kube-system"} {
			r, err := e.cs.RbacV1().Roles(ns).List(ctx, sel)
			add(ns+" roles", len(r.Items), err)
			rb, err := e.cs.RbacV1().RoleBindings(ns).List(ctx, sel)
			add(ns+" rolebindings", len(rb.Items), err)
			cm, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, sel)
			add(ns+" configmaps", len(cm.Items), err)
			sa, err := e.cs.CoreV1().ServiceAccounts(ns).List(ctx, sel)
			add(ns+" serviceaccounts", len(sa.Items), err)
			svc, err := e.cs.CoreV1().Services(ns).List(ctx, sel)
			add(ns+" services", len(svc.Items), err)
			pods, err := e.cs.CoreV1().Pods(ns).List(ctx, sel)
			add(ns+" pods", len(pods.Items), err)
			d, err := e.cs.AppsV1().Deployments(ns).List(ctx, sel)
			add(ns+" deployments", len(d.Items), err)
			ds, err := e.cs.AppsV1().DaemonSets(ns).List(ctx, sel)
			add(ns+" daemonsets", len(ds.Items), err)
		}
		secrets, err := e.cs.CoreV1().Secrets(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
		add("helm release secrets", len(secrets.Items), err)
		return len(left) == 0, strings.Join(left, ", "), nil
	})
}
