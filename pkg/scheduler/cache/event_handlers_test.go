package cache

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

type step func(t *testing.T, env *testEnv)

func adding(objs ...runtime.Object) step {
	return func(t *testing.T, env *testEnv) { env.add(t, objs...) }
}

func updatingPod(pod *corev1.Pod) step {
	return func(t *testing.T, env *testEnv) { env.sc.onPodUpdate(nil, pod) }
}

func deleting(obj runtime.Object) step {
	return func(t *testing.T, env *testEnv) {
		switch o := obj.(type) {
		case *corev1.Pod:
			// As a tombstone, which the handler must unwrap.
			env.sc.onPodDelete(toolscache.DeletedFinalStateUnknown{Key: o.Namespace + "/" + o.Name, Obj: o})
		case *corev1.Node:
			env.sc.onNodeDelete(o)
		default:
			env.sc.onPodGroupDelete(o)
		}
	}
}

func binding(pod, node string) step {
	return func(t *testing.T, env *testEnv) {
		task := api.NewTaskInfo(st.Pod(pod, "1", "").Group("pg1").Obj())
		task.NodeName = node
		if err := env.sc.Bind(task); err != nil {
			t.Fatalf("Bind: %v", err)
		}
	}
}

func TestEventHandlers(t *testing.T) {
	n1 := st.Node("n1", st.Resources("4", "")).Obj()
	tests := []struct {
		name  string
		opts  Options
		steps []step
		want  []string
	}{
		{
			name:  "a pending pod joins its job and holds no node",
			steps: []step{adding(n1, st.Pod("p1", "1", "").Group("pg1").Obj())},
			want:  []string{"job ns/pg1 p1=Pending", "node n1: idle cpu 4000, tasks none"},
		},
		{
			name:  "a running pod counts on its node",
			steps: []step{adding(n1, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj())},
			want:  []string{"job ns/pg1 p1=Running@n1", "node n1: idle cpu 3000, tasks p1"},
		},
		{
			name:  "another scheduler's pod on a node counts there, outside any job",
			steps: []step{adding(n1, st.Pod("p1", "1", "").SchedulerName("default-scheduler").Node("n1").Phase(corev1.PodRunning).Obj())},
			want:  []string{"node n1: idle cpu 3000, tasks p1"},
		},
		{
			name:  "another scheduler's pod not yet on a node is ignored",
			steps: []step{adding(n1, st.Pod("p1", "1", "").SchedulerName("default-scheduler").Group("pg1").Obj())},
			want:  []string{"node n1: idle cpu 4000, tasks none"},
		},
		{
			name:  "a pod without the group annotation counts on its node only",
			steps: []step{adding(n1, st.Pod("p1", "1", "").Node("n1").Obj())},
			want:  []string{"node n1: idle cpu 3000, tasks p1"},
		},
		{
			name:  "a finished pod stays in its job but frees its node",
			steps: []step{adding(n1, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodSucceeded).Obj())},
			want:  []string{"job ns/pg1 p1=Succeeded@n1", "node n1: idle cpu 4000, tasks none"},
		},
		{
			name: "a pod update moves the pod onto its node",
			steps: []step{
				adding(n1, st.Pod("p1", "1", "").Group("pg1").Obj()),
				updatingPod(st.Pod("p1", "1", "").Group("pg1").Node("n1").ResourceVersion("2").Obj()),
			},
			want: []string{"job ns/pg1 p1=Bound@n1", "node n1: idle cpu 3000, tasks p1"},
		},
		{
			name: "deleting the last pod of a job without PodGroup forgets the job and frees the node",
			steps: []step{
				adding(n1, st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj()),
				deleting(st.Pod("p1", "1", "").Obj()),
			},
			want: []string{"node n1: idle cpu 4000, tasks none"},
		},
		{
			name: "deleting a pod keeps the job of an existing PodGroup",
			steps: []step{
				adding(n1, newPodGroup("pg1", "", 1), st.Pod("p1", "1", "").Group("pg1").Obj()),
				deleting(st.Pod("p1", "1", "").Obj()),
			},
			want: []string{"job ns/pg1 [pg queue=default]", "node n1: idle cpu 4000, tasks none"},
		},
		{
			name: "a deleted PodGroup leaves its pods counting on their nodes",
			steps: []step{
				adding(n1, newPodGroup("pg1", "q1", 1), st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj()),
				deleting(newPodGroup("pg1", "q1", 1)),
			},
			want: []string{"job ns/pg1 p1=Running@n1", "node n1: idle cpu 3000, tasks p1"},
		},
		{
			name:  "a pod on a node not seen yet is accounted until the node arrives",
			steps: []step{adding(st.Pod("p1", "1", "").Node("n2").Phase(corev1.PodRunning).Obj())},
			want:  []string{"node n2 (no object): idle cpu -1000, tasks p1"},
		},
		{
			name: "a node arriving after its pods starts with their usage",
			steps: []step{
				adding(st.Pod("p1", "1", "").Node("n1").Phase(corev1.PodRunning).Obj()),
				adding(n1),
			},
			want: []string{"node n1: idle cpu 3000, tasks p1"},
		},
		{
			name: "a deleted node keeps its pods' usage until they go",
			steps: []step{
				adding(n1, st.Pod("p1", "1", "").Node("n1").Phase(corev1.PodRunning).Obj()),
				deleting(n1),
			},
			want: []string{"node n1 (no object): idle cpu 3000, tasks p1"},
		},
		{
			name: "a deleted node is forgotten with its last pod",
			steps: []step{
				adding(n1, st.Pod("p1", "1", "").Node("n1").Phase(corev1.PodRunning).Obj()),
				deleting(n1),
				deleting(st.Pod("p1", "1", "").Obj()),
			},
			want: nil,
		},
		{
			name: "nodes outside the node selector are not taken",
			opts: Options{NodeSelector: []string{"pool:gpu", "zone:a"}},
			steps: []step{adding(st.Node("n1", st.Resources("4", "")).Label("pool", "cpu").Obj(),
				st.Node("n2", st.Resources("4", "")).Label("pool", "gpu").Obj(), st.Node("n3", st.Resources("4", "")).Label("zone", "a").Obj())},
			want: []string{"node n2: idle cpu 4000, tasks none", "node n3: idle cpu 4000, tasks none"},
		},
		{
			name:  "pods of every configured scheduler name are taken",
			opts:  Options{SchedulerNames: []string{"volcano", "gpu-scheduler"}},
			steps: []step{adding(st.Pod("p1", "1", "").Group("pg1").SchedulerName("gpu-scheduler").Obj(), st.Pod("p2", "1", "").Group("pg1").SchedulerName("other").Obj())},
			want:  []string{"job ns/pg1 p1=Pending"},
		},
		{
			name: "an update of a pod whose bind is in flight keeps the placement",
			steps: []step{
				adding(n1, newPodGroup("pg1", "", 1), st.Pod("p1", "1", "").Group("pg1").Obj()),
				binding("p1", "n1"),
				updatingPod(st.Pod("p1", "1", "").Group("pg1").ResourceVersion("2").Condition(corev1.PodCondition{Type: "Custom"}).Obj()),
			},
			want: []string{"job ns/pg1 [pg queue=default] p1=Binding@n1", "node n1: idle cpu 3000, tasks p1"},
		},
		{
			name: "the informer showing the bind makes the pod Bound",
			steps: []step{
				adding(n1, newPodGroup("pg1", "", 1), st.Pod("p1", "1", "").Group("pg1").Obj()),
				binding("p1", "n1"),
				updatingPod(st.Pod("p1", "1", "").Group("pg1").Node("n1").ResourceVersion("2").Obj()),
			},
			want: []string{"job ns/pg1 [pg queue=default] p1=Bound@n1", "node n1: idle cpu 3000, tasks p1"},
		},
		{
			name: "a pod being deleted while its bind is in flight is no longer Binding",
			steps: []step{
				adding(n1, newPodGroup("pg1", "", 1), st.Pod("p1", "1", "").Group("pg1").Obj()),
				binding("p1", "n1"),
				updatingPod(func() *corev1.Pod {
					p := st.Pod("p1", "1", "").Group("pg1").ResourceVersion("2").Obj()
					p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
					return p
				}()),
			},
			want: []string{"job ns/pg1 [pg queue=default] p1=Releasing", "node n1: idle cpu 4000, tasks none"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, tt.opts)
			for _, s := range tt.steps {
				s(t, env)
			}
			if got := describeCache(env.sc); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cache:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestParseNodeSelector(t *testing.T) {
	tests := []struct {
		entries []string
		wantErr bool
	}{
		{entries: nil},
		{entries: []string{"pool:gpu", "zone: a "}},
		{entries: []string{"empty-value:"}},
		{entries: []string{"pool=gpu"}, wantErr: true},
		{entries: []string{":gpu"}, wantErr: true},
	}
	for _, tt := range tests {
		_, err := parseNodeSelector(tt.entries)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseNodeSelector(%q) error = %v, want error %v", tt.entries, err, tt.wantErr)
		}
	}
	if _, err := New(context.Background(), Options{NodeSelector: []string{"bad"}}, nil, nil); err == nil {
		t.Errorf("New accepted a malformed node selector")
	}
}

// TestInformersFeedTheCache runs the real informers over fake clientsets: the handlers are
// wired, filters apply (including a node that stops matching the selector), and Synced
// follows the informers.
func TestInformersFeedTheCache(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := newTestEnv(t, Options{NodeSelector: []string{"pool:gpu"}})
	gpu := map[string]string{"pool": "gpu"}
	for _, o := range []runtime.Object{st.Node("n1", st.Resources("4", "")).Labels(gpu).Obj(), st.Node("n2", st.Resources("4", "")).Obj(),
		st.Pod("p1", "1", "").Group("pg1").Node("n1").Phase(corev1.PodRunning).Obj(),
		st.Pod("p2", "1", "").SchedulerName("other").Obj()} {
		mustCreate(t, env.kube.Tracker().Add(o))
	}
	for _, o := range []runtime.Object{newPodGroup("pg1", "", 1), newQueue("default")} {
		mustCreate(t, env.vc.Tracker().Add(o))
	}
	if env.sc.Synced() {
		t.Fatalf("Synced before the informers ran")
	}
	env.sc.Run(ctx)
	if !env.sc.WaitForCacheSync(ctx) || !env.sc.Synced() {
		t.Fatalf("cache did not sync")
	}
	want := []string{"job ns/pg1 [pg queue=default] p1=Running@n1", "node n1: idle cpu 3000, tasks p1"}
	if got := describeCache(env.sc); !reflect.DeepEqual(got, want) {
		t.Errorf("after sync:\n got  %q\n want %q", got, want)
	}

	// n1 loses its label: it leaves the cache's schedulable nodes, its pod's usage stays.
	if _, err := env.kube.CoreV1().Nodes().Update(ctx, st.Node("n1", st.Resources("4", "")).Obj(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []string{"job ns/pg1 [pg queue=default] p1=Running@n1", "node n1 (no object): idle cpu 3000, tasks p1"}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return reflect.DeepEqual(describeCache(env.sc), want), nil
	})
	if err != nil {
		t.Errorf("after relabel:\n got  %q\n want %q", describeCache(env.sc), want)
	}
}

// TestTrimForCache: what the cache keeps of a pod, a node and a PodGroup is what scheduling
// reads (of volumes, those kube-scheduler's volume plugins read: claims and inline disks); the rest (managed fields, other
// volumes, commands, environment, probes, container statuses, addresses, conditions but
// PodScheduled, nodes' condition heartbeats) is dropped; node images are shared.
func TestTrimForCache(t *testing.T) {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	claimVolume := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	ephemeralVolume := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	diskVolume := corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{
		ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.2:3260", IQN: "iqn.2026-12.example:disk", Lun: 0}}}
	full := func() corev1.Container {
		return corev1.Container{Name: "main", Image: "img", Command: []string{"run"}, Args: []string{"--x"},
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}}, EnvFrom: []corev1.EnvFromSource{{Prefix: "P"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}, LivenessProbe: &corev1.Probe{},
			Ports:     []corev1.ContainerPort{{HostPort: 80, ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}
	}
	// What kube-scheduler's InterPodAffinity and PodTopologySpread read stays: the namespace,
	// the labels, the affinity and the spread constraints.
	term := corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "train"}}}
	affinity := func() *corev1.Affinity {
		return &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
	}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: term.LabelSelector}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"job": "train"}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v"}, claimVolume, ephemeralVolume, diskVolume}, InitContainers: []corev1.Container{full()},
			Containers: []corev1.Container{full()}, Tolerations: []corev1.Toleration{{Key: "k"}}, NodeSelector: map[string]string{"n": "1"},
			Affinity: affinity(), TopologySpreadConstraints: spread},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r", NominatedNodeName: "n1", PodIP: "10.0.0.1",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}, HostIP: "10.1.0.1", HostIPs: []corev1.HostIP{{IP: "10.1.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true}}, InitContainerStatuses: []corev1.ContainerStatus{{Name: "main"}}},
	}
	trim := newTrimmer()
	got, err := trim.trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	kept := func() corev1.Container {
		return corev1.Container{Name: "main", Image: "img", Ports: []corev1.ContainerPort{{HostPort: 80, ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"job": "train"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{claimVolume, ephemeralVolume, diskVolume}, InitContainers: []corev1.Container{kept()},
			Containers: []corev1.Container{kept()}, Tolerations: []corev1.Toleration{{Key: "k"}}, NodeSelector: map[string]string{"n": "1"},
			Affinity: affinity(), TopologySpreadConstraints: spread},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r", NominatedNodeName: "n1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed pod (-want +got):\n%s", diff)
	}

	images := func() []corev1.ContainerImage {
		return []corev1.ContainerImage{{Names: []string{"registry/train@sha256:0", "registry/train:v1"}, SizeBytes: 1 << 30}}
	}
	ready := func(heartbeat int) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: st.At(heartbeat), LastTransitionTime: st.At(1)}}
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: requests, Images: images(), Conditions: ready(7)}}
	got, _ = trim.trim(node)
	trimmedNode := &corev1.Node{Status: corev1.NodeStatus{Allocatable: requests, Images: images(), Conditions: ready(7)}}
	trimmedNode.Status.Conditions[0].LastHeartbeatTime = metav1.Time{}
	if diff := cmp.Diff(trimmedNode, got); diff != "" {
		t.Errorf("trimmed node (-want +got):\n%s", diff)
	}

	pg := newPodGroup("pg", "q", 2)
	pg.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "vc-scheduler"}}
	got, _ = trim.trim(pg)
	if diff := cmp.Diff(newPodGroup("pg", "q", 2), got); diff != "" {
		t.Errorf("trimmed PodGroup (-want +got):\n%s", diff)
	}
}

// Updates are applied, but counted as changes (which make the next cycle run) only when the
// trimmed object changed beyond its resourceVersion: a node's heartbeat, a pod's readiness or
// a resync is not; a node's allocatable or a pod's phase is.
func TestUpdatesCountOnlyRealChanges(t *testing.T) {
	env := newTestEnv(t, Options{})
	trim := newTrimmer()
	trimmed := func(o runtime.Object) runtime.Object {
		got, err := trim.trim(o)
		if err != nil {
			t.Fatal(err)
		}
		return got.(runtime.Object)
	}
	node := func(rv string, heartbeat int, cpu string) runtime.Object {
		n := st.Node("n1", st.Resources(cpu, "")).Obj()
		n.ResourceVersion = rv
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: st.At(heartbeat)}}
		return trimmed(n)
	}
	pod := func(rv string, phase corev1.PodPhase, ready corev1.ConditionStatus) runtime.Object {
		return trimmed(st.Pod("p1", "1", "").Group("pg1").Node("n1").ResourceVersion(rv).Phase(phase).
			Condition(corev1.PodCondition{Type: corev1.PodReady, Status: ready}).Obj())
	}
	nodes := counted{toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, n any) { env.sc.onNodeSet(n) }}, env.sc.changed}
	pods := counted{toolscache.ResourceEventHandlerFuncs{UpdateFunc: env.sc.onPodUpdate}, env.sc.changed}
	env.add(t, newQueue("default"), newPodGroup("pg1", "", 1))
	n1, p1 := node("10", 1, "4"), pod("11", corev1.PodRunning, corev1.ConditionTrue)
	env.sc.onNodeSet(n1)
	env.sc.onPodAdd(p1)
	tests := []struct {
		name     string
		handler  counted
		old, cur runtime.Object
		counted  bool
	}{
		{"a resync", nodes, n1, n1, false},
		{"a node's heartbeat", nodes, n1, node("20", 2, "4"), false},
		{"a pod's readiness", pods, p1, pod("21", corev1.PodRunning, corev1.ConditionFalse), false},
		{"a node's allocatable", nodes, node("20", 2, "4"), node("30", 3, "8"), true},
		{"a pod's phase", pods, pod("21", corev1.PodRunning, corev1.ConditionFalse), pod("31", corev1.PodSucceeded, corev1.ConditionFalse), true},
	}
	for _, tt := range tests {
		before := env.sc.Changes()
		tt.handler.OnUpdate(tt.old, tt.cur)
		if got := env.sc.Changes() != before; got != tt.counted {
			t.Errorf("%s: counted as a change = %v, want %v", tt.name, got, tt.counted)
		}
	}
	// Every update was applied: the cache holds the last versions.
	env.sc.mu.Lock()
	defer env.sc.mu.Unlock()
	if rv := env.sc.nodes["n1"].Node.ResourceVersion; rv != "30" {
		t.Errorf("node n1 at version %s in the cache, want 30", rv)
	}
	if task := env.sc.tasks["uid-p1"]; task == nil || task.Pod.ResourceVersion != "31" {
		t.Errorf("pod p1 in the cache: %v, want version 31", task)
	}
}

// Arrivals signals once a job can be scheduled: a gang at its last pod (not before), a
// PodGroup created after its pods, a single pod; never for updates of pods it already holds.
func TestArrivals(t *testing.T) {
	arrived := func(env *testEnv) bool {
		select {
		case <-env.sc.Arrivals():
			return true
		default:
			return false
		}
	}
	steps := []struct {
		name string
		add  []runtime.Object
		want bool
	}{
		{"a gang's PodGroup before its pods", []runtime.Object{newPodGroup("gang", "default", 2)}, false},
		{"its first pod", []runtime.Object{st.Pod("g1", "1", "").Group("gang").Obj()}, false},
		{"its last pod", []runtime.Object{st.Pod("g2", "1", "").Group("gang").Obj()}, true},
		{"a pod before its PodGroup", []runtime.Object{st.Pod("s1", "1", "").Group("single").Obj()}, false},
		{"then the PodGroup", []runtime.Object{newPodGroup("single", "default", 1)}, true},
		{"two single pods", []runtime.Object{newPodGroup("two", "default", 1), st.Pod("t1", "1", "").Group("two").Obj(), st.Pod("t2", "1", "").Group("two").Obj()}, true},
	}
	env := newTestEnv(t, Options{})
	for _, s := range steps {
		env.add(t, s.add...)
		if got := arrived(env); got != s.want {
			t.Errorf("%s: arrival signalled %v, want %v", s.name, got, s.want)
		}
	}
	// One signal holds however many arrivals came: the two single pods above left none.
	if arrived(env) {
		t.Errorf("a second signal after one was taken")
	}
	env.sc.onPodUpdate(nil, st.Pod("t1", "1", "").Group("two").ResourceVersion("2").Obj())
	if arrived(env) {
		t.Errorf("an update of a pod already held signalled an arrival")
	}

	// A releasing pod (being deleted, as a victim is) that stops or goes frees room a
	// preemptor may wait for; a running pod's deletion does not by itself.
	released := []struct {
		name  string
		event func()
		want  bool
	}{
		{"a running pod is deleted", func() {
			env.sc.onPodDelete(st.Pod("g1", "1", "").Group("gang").Node("n1").Phase(corev1.PodRunning).Obj())
		}, false},
		{"a running pod starts terminating", func() {
			env.sc.onPodUpdate(nil, st.Pod("g2", "1", "").Group("gang").Node("n1").Phase(corev1.PodRunning).Terminating().Obj())
		}, false},
		{"its containers stop", func() {
			env.sc.onPodUpdate(nil, st.Pod("g2", "1", "").Group("gang").Node("n1").Phase(corev1.PodFailed).Terminating().Obj())
		}, true},
		{"another terminating pod is gone", func() {
			env.sc.onPodUpdate(nil, st.Pod("t2", "1", "").Group("two").Node("n1").Phase(corev1.PodRunning).Terminating().Obj())
			_ = arrived(env)
			env.sc.onPodDelete(st.Pod("t2", "1", "").Group("two").Node("n1").Phase(corev1.PodRunning).Terminating().Obj())
		}, true},
	}
	for _, r := range released {
		r.event()
		if got := arrived(env); got != r.want {
			t.Errorf("%s: signalled %v, want %v", r.name, got, r.want)
		}
	}
}
