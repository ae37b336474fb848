//go:build e2e

// Package e2e runs the project's end-to-end suites against the local cluster that
// hack/cluster-up.sh starts (real etcd, kube-apiserver, kube-controller-manager, kubelet on
// containerd, and kwok for simulated nodes). `make e2e` brings the cluster up and down around it.
package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// realNode is the kubelet's node name (cluster-up.sh runs it with --hostname-override).
	realNode = "localhost"
	// tinyImage is built and imported by the project itself; there is no registry.
	tinyImage = "localhost/tiny:v1"
	// tinyLinksImage is tiny with HAMi-core's paths symbolic links into /dev/shm
	// (hack/build-tools.sh).
	tinyLinksImage = "localhost/tiny-links:v1"
	// noScheduler keeps any scheduler away from pods the test binds by hand.
	noScheduler = "e2e-manual-binding"
	// kwokAnnotation makes kwok simulate a node.
	kwokAnnotation = "kwok.x-k8s.io/node"
)

// client connects to the cluster named by $KUBECONFIG, else the one cluster-up.sh starts.
func client(t testing.TB) kubernetes.Interface {
	t.Helper()
	path := kubeconfigPath()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v (is the cluster up? make cluster-up)", path, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	return cs
}

// namespace creates a namespace for one test and deletes it when the test ends.
func namespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	name := "e2e-" + rand.String(6)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	// Pods are refused until the controller manager has made the namespace's default
	// ServiceAccount, which can take a while right after the API server restarted.
	eventually(t, 60*time.Second, "the default ServiceAccount of "+name, func(ctx context.Context) (bool, string, error) {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err), nil
	})
	return name
}

// waitEvent waits until an Event in ns about the objects the field selector names satisfies
// match; the failure message lists the Events seen last.
func waitEvent(t *testing.T, cs kubernetes.Interface, timeout time.Duration, ns, selector, what string, match func(corev1.Event) bool) {
	t.Helper()
	eventually(t, timeout, what, func(ctx context.Context) (bool, string, error) {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for _, ev := range events.Items {
			if match(ev) {
				return true, "", nil
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return false, strings.Join(seen, "; "), nil
	})
}

// eventually polls cond every 100 ms until it returns true or the deadline passes; the last
// state it describes is in the failure message (a call cut short by the deadline itself, whose
// state would only say so, does not replace the one before).
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (done bool, state string, err error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		done, state, err := cond(ctx)
		if ctx.Err() == nil || last == "" {
			last = state
		}
		return done, err
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v (last state: %s)", what, timeout, err, last)
	}
}

// podPhase waits until the pod reaches the phase.
func podPhase(t *testing.T, cs kubernetes.Interface, ns, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, timeout, fmt.Sprintf("pod %s/%s %s", ns, name, phase), func(ctx context.Context) (bool, string, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		pod = p
		return p.Status.Phase == phase, fmt.Sprintf("phase=%s node=%s conditions=%v", p.Status.Phase, p.Spec.NodeName, p.Status.Conditions), nil
	})
	return pod
}
