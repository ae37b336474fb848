//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-vgpu/volcano-vgpu/test/minresources"
)

// schedulerEnv is one test's private world on the shared cluster: its own scheduler name,
// kwok nodes only its scheduler sees (--node-selector), its own namespace and queues.
type schedulerEnv struct {
	t     *testing.T
	cs    kubernetes.Interface
	vc    vcclient.Interface
	ns    string
	name  string // scheduler name, also the node label value and lease name
	label string // node selector "key:value"
}

const envLabel = "e2e.volcano-vgpu/scheduler"

func newSchedulerEnv(t *testing.T) *schedulerEnv {
	t.Helper()
	return newSchedulerEnvWith(t)
}

// newSchedulerEnvWith is newSchedulerEnv with more flags for the stand-in controllers.
func newSchedulerEnvWith(t *testing.T, standinArgs ...string) *schedulerEnv {
	t.Helper()
	cs := client(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	vc, err := vcclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, cs)
	e := &schedulerEnv{t: t, cs: cs, vc: vc, ns: ns, name: "sched-" + ns, label: envLabel + ":" + "sched-" + ns}
	// Leases and configuration events live in volcano-system, as upstream's.
	_, err = cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "volcano-system"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The stand-in controllers open queues (as upstream's queue controller) and give plain
	// pods their PodGroups.
	start(t, "standin", append([]string{"--kubeconfig", kubeconfigPath(), "--scheduler-name", e.name}, standinArgs...)...)
	return e
}

// scheduler starts vc-scheduler for this env with the configuration text; extra flags follow.
func (e *schedulerEnv) scheduler(confText string, extra ...string) (*process, string) {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "volcano-scheduler.conf")
	if err := os.WriteFile(path, []byte(confText), 0o644); err != nil {
		e.t.Fatal(err)
	}
	args := append([]string{"--kubeconfig", programKubeconfig(e.t, schedulerAccount), "--scheduler-conf", path, "--scheduler-name", e.name,
		"--node-selector", e.label, "--schedule-period", "200ms", "--leader-elect=false", "-v", "2"}, extra...)
	return start(e.t, "vc-scheduler", args...), path
}

// node adds a kwok node that only this env's scheduler sees.
func (e *schedulerEnv) node(name string, cpu string) {
	e.t.Helper()
	n := kwokNode(e.name+"-"+name, "", 0, 0, 0)
	n.Labels[envLabel] = e.name
	delete(n.Annotations, "volcano.sh/node-vgpu-register")
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Capacity, n.Status.Allocatable = res, res
	if _, err := e.cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create node %s: %v", n.Name, err)
	}
	e.t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
}

// claimRealNode puts the real kubelet node in this env's scheduler's view until the test ends.
func (e *schedulerEnv) claimRealNode() {
	e.t.Helper()
	label := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, envLabel, e.name)
	if _, err := e.cs.CoreV1().Nodes().Patch(context.Background(), realNode, types.MergePatchType, []byte(label), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("label node %s for %s: %v", realNode, e.name, err)
	}
	e.t.Cleanup(func() {
		unlabel := []byte(`{"metadata":{"labels":{"` + envLabel + `":null}}}`)
		_, _ = e.cs.CoreV1().Nodes().Patch(context.Background(), realNode, types.MergePatchType, unlabel, metav1.PatchOptions{})
	})
}

// queue creates an open queue with an optional capability.
func (e *schedulerEnv) queue(name string, capability corev1.ResourceList) string {
	e.t.Helper()
	return e.queueWith(name, func(spec *schedulingv1beta1.QueueSpec) { spec.Capability = capability })
}

// queueWith creates an open queue of weight 1 whose spec edit changes.
func (e *schedulerEnv) queueWith(name string, edit func(*schedulingv1beta1.QueueSpec)) string {
	e.t.Helper()
	full := e.ns + "-" + name
	q := &schedulingv1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: full}, Spec: schedulingv1beta1.QueueSpec{Weight: 1}}
	edit(&q.Spec)
	ctx := context.Background()
	if _, err := e.vc.SchedulingV1beta1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create queue %s: %v", full, err)
	}
	// The stand-in queue controller may write the status first; read it again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.vc.SchedulingV1beta1().Queues().Get(ctx, full, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.State = schedulingv1beta1.QueueStateOpen
		_, err = e.vc.SchedulingV1beta1().Queues().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("open queue %s: %v", full, err)
	}
	e.t.Cleanup(func() {
		_ = e.vc.SchedulingV1beta1().Queues().Delete(context.Background(), full, metav1.DeleteOptions{})
	})
	return full
}

// gang creates a PodGroup and its pods (cpu each), all for this env's scheduler.
func (e *schedulerEnv) gang(name, queue string, min, pods int, cpu string, minResources corev1.ResourceList) {
	e.t.Helper()
	e.gangOfClass(name, queue, "", min, pods, cpu, minResources)
}

// gangOfClass is gang with a priority class for the PodGroup and its pods ("" for none).
func (e *schedulerEnv) gangOfClass(name, queue, class string, min, pods int, cpu string, minResources corev1.ResourceList) {
	e.t.Helper()
	e.gangWith(name, queue, class, min, pods, cpu, minResources, nil, nil)
}

// gangWith is gangOfClass with editPG changing the PodGroup and editPod the i-th pod before
// they are created (nil for no change); cpu "" asks for no cpu. minResources nil gives the
// PodGroup what Volcano's job controller would: the first min pods' usage, as they are written.
func (e *schedulerEnv) gangWith(name, queue, class string, min, pods int, cpu string, minResources corev1.ResourceList,
	editPG func(*schedulingv1beta1.PodGroup), editPod func(i int, pod *corev1.Pod)) {
	e.t.Helper()
	ctx := context.Background()
	var created []*corev1.Pod
	for i := 0; i < pods; i++ {
		pod := tinyPod(e.ns, fmt.Sprintf("%s-%d", name, i), "")
		pod.Spec.SchedulerName = e.name
		pod.Annotations = map[string]string{schedulingv1beta1.KubeGroupNameAnnotationKey: name}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists}}
		if cpu != "" {
			pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		pod.Spec.PriorityClassName = class
		if editPod != nil {
			editPod(i, pod)
		}
		created = append(created, pod)
	}
	if minResources == nil {
		minResources = minresources.Of(created, min)
	}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{MinMember: int32(min), Queue: queue, PriorityClassName: class,
			MinResources: &minResources}}
	if editPG != nil {
		editPG(pg)
	}
	if _, err := e.vc.SchedulingV1beta1().PodGroups(e.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create podgroup %s: %v", name, err)
	}
	for _, pod := range created {
		if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}
}

// podGroup waits until the PodGroup satisfies cond.
func (e *schedulerEnv) podGroup(name string, timeout time.Duration, what string, cond func(*schedulingv1beta1.PodGroup) bool) *schedulingv1beta1.PodGroup {
	e.t.Helper()
	var pg *schedulingv1beta1.PodGroup
	eventually(e.t, timeout, "podgroup "+name+" "+what, func(ctx context.Context) (bool, string, error) {
		got, err := e.vc.SchedulingV1beta1().PodGroups(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		pg = got
		return cond(got), fmt.Sprintf("phase=%s conditions=%+v", got.Status.Phase, got.Status.Conditions), nil
	})
	return pg
}

// boundPods counts the env's pods with a node, and lists the unbound ones.
func (e *schedulerEnv) boundPods(ctx context.Context, prefix string) (bound int, pending []string, err error) {
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, nil, err
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		if p.Spec.NodeName != "" {
			bound++
		} else {
			pending = append(pending, p.Name)
		}
	}
	return bound, pending, nil
}

// waitBound waits until n pods with the prefix are bound.
func (e *schedulerEnv) waitBound(prefix string, n int, timeout time.Duration) {
	e.t.Helper()
	e.waitBoundCount(prefix, fmt.Sprint(n), func(b int) bool { return b == n }, timeout)
}

// waitBoundCount waits until the number of bound pods with the prefix satisfies ok.
func (e *schedulerEnv) waitBoundCount(prefix, what string, ok func(bound int) bool, timeout time.Duration) {
	e.t.Helper()
	eventually(e.t, timeout, fmt.Sprintf("%s pods %s* bound", what, prefix), func(ctx context.Context) (bool, string, error) {
		b, pending, err := e.boundPods(ctx, prefix)
		if err != nil {
			return false, err.Error(), nil
		}
		return ok(b), fmt.Sprintf("bound %d, pending %v", b, pending), nil
	})
}

// condition returns the PodGroup's condition of a type, or nil.
func condition(pg *schedulingv1beta1.PodGroup, t schedulingv1beta1.PodGroupConditionType) *schedulingv1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == t {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// defaultConf is upstream's built-in configuration (what the Helm chart ships, less binpack).
const defaultConf = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
`

// A 3-pod gang on a cluster with room for 2, its PodGroup made as Volcano's job controller
// makes it (minResources 3 cpu): proportion keeps it Pending (its minResources exceed the
// queue's capability, the whole 2-cpu cluster), with upstream's condition, no pod is bound, and
// it runs as a whole once room appears.
func TestGangWaitsForRoom(t *testing.T) {
	gangWaitsForRoom(t, nil, schedulingv1beta1.PodGroupPending,
		"3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable")
}

// The same gang with a PodGroup written by hand, without minResources: enqueue admits it and
// proportion's deserved share (the whole 2-cpu cluster) refuses the third pod before any node
// is tried, so, as upstream, there is no "Origin reason" suffix.
func TestHandWrittenGangWaitsForRoom(t *testing.T) {
	gangWaitsForRoom(t, func(pg *schedulingv1beta1.PodGroup) { pg.Spec.MinResources = nil }, schedulingv1beta1.PodGroupInqueue,
		"1/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; Pending: 1 Unschedulable, 2 Schedulable")
}

// gangWaitsForRoom creates a gang of three 1-cpu pods (its PodGroup changed by editPG) on a
// 2-cpu node, waits for the Unschedulable condition want in phase, checks that no pod is
// bound, then adds a second node and waits for the whole gang to run.
func gangWaitsForRoom(t *testing.T, editPG func(*schedulingv1beta1.PodGroup), phase schedulingv1beta1.PodGroupPhase, want string) {
	e := newSchedulerEnv(t)
	e.node("a", "2")
	e.scheduler(defaultConf)
	e.gangWith("gang", "", "", 3, 3, "1", nil, editPG, nil)

	pg := e.podGroup("gang", 30*time.Second, "Unschedulable", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
		return c != nil && c.Message == want
	})
	c := condition(pg, schedulingv1beta1.PodGroupUnschedulableType)
	if c.Status != corev1.ConditionTrue || c.Reason != string(schedulingv1beta1.NotEnoughResourcesReason) || pg.Status.Phase != phase {
		t.Errorf("condition %+v, phase %s; want True/NotEnoughResources, %s", c, pg.Status.Phase, phase)
	}
	if b, _, err := e.boundPods(context.Background(), "gang-"); err != nil || b != 0 {
		t.Fatalf("a partial gang was bound: %d pods (%v)", b, err)
	}

	e.node("b", "2")
	e.waitBound("gang-", 3, 30*time.Second)
	e.podGroup("gang", 30*time.Second, "Running and Scheduled", func(pg *schedulingv1beta1.PodGroup) bool {
		c := condition(pg, schedulingv1beta1.PodGroupScheduled)
		return pg.Status.Phase == schedulingv1beta1.PodGroupRunning && c != nil && c.Reason == "tasks in gang are ready to be scheduled"
	})
}

// A queue's capability keeps its job out while another queue's job runs.
func TestQueueCapabilityBlocksJob(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("a", "8")
	small := e.queue("small", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	big := e.queue("big", nil)
	e.scheduler(defaultConf)
	two := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	e.gang("capped", small, 1, 1, "2", two)
	e.gang("free", big, 1, 1, "2", two)

	e.waitBound("free-", 1, 30*time.Second)
	waitEvent(t, e.cs, 30*time.Second, e.ns, "involvedObject.name=capped,involvedObject.kind=PodGroup", "quota event on capped",
		func(ev corev1.Event) bool {
			return ev.Reason == "Unschedulable" && ev.Message == "queue resource quota insufficient: insufficient cpu"
		})
	// The status of a PodGroup with pods is written up to 3 s after it changes.
	e.podGroup("capped", 30*time.Second, "Pending", func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Status.Phase == schedulingv1beta1.PodGroupPending
	})
	if b, _, _ := e.boundPods(context.Background(), "capped-"); b != 0 {
		t.Errorf("capped job was bound")
	}
}

// The lab's scheduler.conf loads unchanged, and plain pods get PodGroups (stand-in) and run.
func TestSeedConfigSchedulesPlainPods(t *testing.T) {
	seed := seedConf(t)
	e := newSchedulerEnv(t)
	e.node("a", "4")
	sched, _ := e.scheduler(seed)
	pod := tinyPod(e.ns, "plain", "")
	pod.Spec.SchedulerName = e.name
	pod.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists}}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podPhase(t, e.cs, e.ns, "plain", corev1.PodRunning, 30*time.Second)
	if strings.Contains(sched.log.String(), "rejected") {
		t.Errorf("the seed configuration was rejected:\n%s", sched.log.String())
	}
}

// An edit that leaves the configuration file unusable (not YAML) keeps the last good
// configuration, says why in the log and an event, and scheduling goes on.
func TestBadConfigEditKeepsLastGood(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("a", "4")
	sched, path := e.scheduler(defaultConf)
	e.gang("before", "", 1, 1, "1", nil)
	e.waitBound("before-", 1, 30*time.Second)

	if err := os.WriteFile(path, []byte(defaultConf+"tiers: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sched.logContains(t, 20*time.Second, "Scheduler configuration rejected; keeping the configuration in force")
	waitEvent(t, e.cs, 20*time.Second, "volcano-system", "involvedObject.name="+e.name, "InvalidSchedulerConfig event",
		func(ev corev1.Event) bool {
			return ev.Reason == "InvalidSchedulerConfig" && strings.HasPrefix(ev.Message, "scheduler configuration "+path+": parse: ")
		})
	e.gang("after", "", 1, 1, "1", nil)
	e.waitBound("after-", 1, 30*time.Second)
}

// Two replicas with leader election: one leads and binds; when it dies the other takes over.
func TestOnlyTheLeaderBinds(t *testing.T) {
	e := newSchedulerEnv(t)
	e.node("a", "8")
	le := []string{"-v", "3", "--leader-elect=true", "--leader-elect-resource-name", e.name,
		"--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "1s"}
	a, _ := e.scheduler(defaultConf, le...)
	b, _ := e.scheduler(defaultConf, le...)
	e.gang("first", "", 1, 1, "1", nil)
	e.waitBound("first-", 1, 30*time.Second)

	const leading = "Became leader"
	leader, standby := a, b
	if strings.Contains(b.log.String(), leading) {
		leader, standby = b, a
	}
	if !strings.Contains(leader.log.String(), leading) || strings.Contains(standby.log.String(), leading) {
		t.Fatalf("want exactly one leader; a leads: %v, b leads: %v", strings.Contains(a.log.String(), leading), strings.Contains(b.log.String(), leading))
	}
	// The pod shows bound as soon as the Binding is accepted; the leader logs it just after.
	leader.logContains(t, 10*time.Second, "Bound pod")
	if strings.Contains(standby.log.String(), "Bound pod") {
		t.Errorf("the standby bound a pod; only the leader may")
	}
	leader.kill()
	standby.logContains(t, 30*time.Second, leading)
	e.gang("second", "", 1, 1, "1", nil)
	e.waitBound("second-", 1, 30*time.Second)
}
