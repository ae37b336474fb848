package tasktopology

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/actions/allocate"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/plugins/internal/ignoredannotation"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// Golden: the plugin, argument and annotation names are Volcano's, word for word.
func TestNamesAreVolcanos(t *testing.T) {
	got := []string{PluginName, Weight, AffinityAnnotation, AntiAffinityAnnotation, TaskOrderAnnotation}
	want := []string{"task-topology", "task-topology.weight", "volcano.sh/task-topology-affinity",
		"volcano.sh/task-topology-anti-affinity", "volcano.sh/task-topology-task-order"}
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}

func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		value   interface{}
		want    int
		refusal string
	}{
		{nil, 1, ""},
		{10, 10, ""},
		{"0", 0, ""},
		{-1, 0, `argument "task-topology.weight": weight -1 is negative`},
		{1.5, 0, `argument "task-topology.weight": cannot use 1.5 (float64) as int`},
	} {
		args := conf.Arguments{}
		if tc.value != nil {
			args[Weight] = tc.value
		}
		p, err := New(args)
		if tc.refusal != "" {
			var argErr *conf.ArgumentError
			if !errors.As(err, &argErr) || err.Error() != tc.refusal {
				t.Errorf("%v: error %v, want %q", tc.value, err, tc.refusal)
			}
			continue
		}
		if err != nil || p.(*plugin).weight != tc.want {
			t.Errorf("%v: %v, %v; want weight %d", tc.value, p, err, tc.want)
		}
	}
}

func TestReadRules(t *testing.T) {
	tasks := map[string]bool{"ps": true, "worker": true, "chief": true, "evaluator": true}
	r, err := readRules(map[string]string{
		AffinityAnnotation:     "ps,worker;ps,evaluator",
		AntiAffinityAnnotation: " ps ; worker, chief;;chief,evaluator;",
		TaskOrderAnnotation:    "ps,worker,chief,evaluator",
	}, tasks)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []pair{{"ps", "worker"}, {"worker", "ps"}, {"evaluator", "ps"}} {
		if !r.affine[p] {
			t.Errorf("%v not affine", p)
		}
	}
	for _, p := range []pair{{"ps", "ps"}, {"worker", "chief"}, {"evaluator", "chief"}} {
		if !r.anti[p] {
			t.Errorf("%v not anti-affine", p)
		}
	}
	if r.affine[pair{"worker", "evaluator"}] || r.affine[pair{"ps", "ps"}] || len(r.affine) != 4 || len(r.anti) != 5 {
		t.Errorf("affine %v, anti %v: more than the groups name", r.affine, r.anti)
	}
	wantRank := map[string]int{"ps": rankSelfAntiAffinity, "worker": rankInterAffinity, "evaluator": rankInterAffinity, "chief": rankInterAntiAffinity}
	if !maps.Equal(r.rank, wantRank) {
		t.Errorf("rank %v, want %v", r.rank, wantRank)
	}
	if wantOrder := map[string]int{"ps": 4, "worker": 3, "chief": 2, "evaluator": 1}; !maps.Equal(r.order, wantOrder) {
		t.Errorf("order %v, want %v", r.order, wantOrder)
	}

	for _, tc := range []struct {
		key, value, message string
		unknown             bool
	}{
		{AffinityAnnotation, "ps,wroker", `annotation volcano.sh/task-topology-affinity "ps,wroker": the job has no task "wroker" (its tasks: chief, evaluator, ps, worker)`, true},
		{AntiAffinityAnnotation, "ps;worker,worker", `annotation volcano.sh/task-topology-anti-affinity "ps;worker,worker": task "worker" is named twice in "worker,worker"`, false},
		{TaskOrderAnnotation, "ps,worker,ps", `annotation volcano.sh/task-topology-task-order "ps,worker,ps": task "ps" is named twice in "ps,worker,ps"`, false},
	} {
		_, err := readRules(map[string]string{tc.key: tc.value}, tasks)
		var unknown *unknownTaskError
		if err == nil || err.Error() != tc.message || errors.As(err, &unknown) != tc.unknown {
			t.Errorf("%s %q: error %v, want %q", tc.key, tc.value, err, tc.message)
		}
	}
}

// cluster is nodes n0..n<count-1> of 4 cpu each, a queue, and the job "train" (Inqueue, gang
// of its pods) with the annotations and pods.
func cluster(count int, annotations map[string]string, pods ...*corev1.Pod) *api.ClusterInfo {
	var nodes []*corev1.Node
	for i := range count {
		nodes = append(nodes, st.Node(fmt.Sprintf("n%d", i), st.Resources("4", "")).Obj())
	}
	pg := st.MakePodGroup().Namespace("ns").Name("train").Created(0).Queue("default").
		Phase(schedulingv1beta1.PodGroupInqueue).Obj()
	pg.Annotations = annotations
	return frameworktest.Objects{Nodes: nodes, Queues: []*schedulingv1beta1.Queue{st.MakeQueue().Name("default").Weight(1).Obj()},
		PodGroups: []*schedulingv1beta1.PodGroup{pg}, Pods: pods}.ClusterInfo()
}

// pod is a pod of task of job train asking cpu.
func pod(name, task, cpu string) *st.PodWrapper {
	return st.Pod(name, cpu, "").Namespace("ns").Group("train").Annotation("volcano.sh/task-spec", task)
}

// run opens a session with the plugin (weight 1) alone over ci and allocates.
func run(t *testing.T, ci *api.ClusterInfo) (*frameworktest.Cache, *framework.Session) {
	t.Helper()
	p, err := New(conf.Arguments{})
	if err != nil {
		t.Fatal(err)
	}
	cache := &frameworktest.Cache{Snap: ci}
	ssn := frameworktest.OpenTiers(cache, conf.SchedulerConfiguration{Actions: "allocate"}, []framework.Plugin{p})
	allocate.NewWithOptions(allocate.DefaultOptions()).Execute(ssn)
	return cache, ssn
}

// Workers join the node of the ps they are affine to; without the rule they go where the
// node search finds room first.
func TestAffinityDrawsTasksToOneNode(t *testing.T) {
	pods := func() []*corev1.Pod {
		return []*corev1.Pod{
			pod("train-ps-0", "ps", "1").Node("n2").Phase(corev1.PodRunning).Obj(),
			pod("train-worker-0", "worker", "1").Obj(), pod("train-worker-1", "worker", "1").Obj(),
		}
	}
	cache, _ := run(t, cluster(3, map[string]string{AffinityAnnotation: "ps,worker"}, pods()...))
	want := map[string]string{"ns/train-worker-0": "n2", "ns/train-worker-1": "n2"}
	if got := cache.Binds(); !maps.Equal(got, want) {
		t.Errorf("with affinity: binds %v, want %v", got, want)
	}
	cache, _ = run(t, cluster(3, nil, pods()...))
	if got := cache.Binds(); maps.Equal(got, want) {
		t.Errorf("without the annotation the workers still went to n2: the test shows nothing")
	}
}

// Pods of a task anti-affine to itself spread over the nodes, those placed before the session
// included; a ps anti-affine to the workers keeps off their node.
func TestAntiAffinitySpreadsTasks(t *testing.T) {
	cache, _ := run(t, cluster(3, map[string]string{AntiAffinityAnnotation: "ps"},
		pod("train-ps-0", "ps", "1").Node("n0").Phase(corev1.PodRunning).Obj(),
		pod("train-ps-1", "ps", "1").Obj(), pod("train-ps-2", "ps", "1").Obj()))
	nodes := map[string]bool{"n0": true}
	for _, node := range cache.Binds() {
		nodes[node] = true
	}
	if len(cache.Bound) != 2 || len(nodes) != 3 {
		t.Errorf("binds %v, want the two pending ps on n1 and n2", cache.Binds())
	}

	cache, _ = run(t, cluster(2, map[string]string{AntiAffinityAnnotation: "ps,worker"},
		pod("train-worker-0", "worker", "1").Node("n0").Phase(corev1.PodRunning).Obj(),
		pod("train-ps-0", "ps", "1").Obj()))
	if got := cache.Binds(); got["ns/train-ps-0"] != "n1" {
		t.Errorf("binds %v, want the ps on n1, away from the worker", got)
	}
}

// The task order annotation places a job's tasks in its order, before tasks no rule names.
func TestTaskOrder(t *testing.T) {
	ci := cluster(1, map[string]string{AffinityAnnotation: "ps,worker", TaskOrderAnnotation: "worker,ps"},
		pod("train-ps-0", "ps", "1").Obj(), pod("train-worker-0", "worker", "1").Obj(),
		pod("train-chief-0", "chief", "1").Obj())
	p, _ := New(conf.Arguments{})
	ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: ci}, conf.SchedulerConfiguration{Actions: "allocate"}, []framework.Plugin{p})
	tasks := slices.Collect(maps.Values(ssn.Jobs["ns/train"].Tasks))
	slices.SortFunc(tasks, func(l, r *api.TaskInfo) int {
		if ssn.TaskOrderFn(l, r) {
			return -1
		}
		return 1
	})
	var got []string
	for _, task := range tasks {
		got = append(got, task.Name)
	}
	if want := []string{"train-worker-0", "train-ps-0", "train-chief-0"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// A placement undone leaves the scores as they were before it.
func TestDiscardRestoresTheScores(t *testing.T) {
	ci := cluster(2, map[string]string{AffinityAnnotation: "ps,worker", AntiAffinityAnnotation: "ps"},
		pod("train-ps-0", "ps", "1").Obj(), pod("train-ps-1", "ps", "1").Obj(), pod("train-worker-0", "worker", "3").Obj())
	p, _ := New(conf.Arguments{})
	ssn := frameworktest.OpenTiers(&frameworktest.Cache{Snap: ci}, conf.SchedulerConfiguration{Actions: "allocate"}, []framework.Plugin{p})
	job := ssn.Jobs["ns/train"]
	tasks := slices.SortedFunc(maps.Values(job.Tasks), func(l, r *api.TaskInfo) int { return strings.Compare(l.Name, r.Name) })
	scores := func() []float64 {
		var out []float64
		for _, task := range tasks {
			for _, node := range ssn.NodeList {
				out = append(out, ssn.NodeOrder(task, node))
			}
		}
		return out
	}
	before := scores()
	stmt := ssn.NewStatement()
	if err := stmt.Allocate(tasks[0], ssn.Nodes["n0"]); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(scores(), before) {
		t.Error("a placement changed no score")
	}
	stmt.Discard()
	if after := scores(); !slices.Equal(after, before) {
		t.Errorf("after Discard scores %v, want %v", after, before)
	}
}

// A malformed annotation leaves the job without task topology, and its PodGroup says why; a
// task not there yet is not reported while the job's pods are still arriving.
func TestMalformedAnnotation(t *testing.T) {
	ci := cluster(1, map[string]string{AffinityAnnotation: "ps,wroker"}, pod("train-ps-0", "ps", "1").Obj())
	cache, ssn := run(t, ci)
	message := `annotation volcano.sh/task-topology-affinity "ps,wroker": the job has no task "wroker" (its tasks: ps); the job is scheduled without task topology`
	want := []frameworktest.JobEvent{{PodGroup: "train", Type: corev1.EventTypeWarning, Reason: string(Condition), Message: message}}
	if !slices.Equal(cache.Events, want) {
		t.Errorf("events %v, want %v", cache.Events, want)
	}
	job := ssn.Jobs["ns/train"]
	if c := job.Status.Conditions; len(c) != 1 || c[0].Type != Condition || c[0].Reason != ignoredannotation.Reason || c[0].Message != message {
		t.Errorf("conditions %+v, want %s with %q", c, Condition, message)
	}
	if len(cache.Bound) != 1 {
		t.Errorf("bound %v, want the ps scheduled as without the annotation", cache.Binds())
	}

	arriving := cluster(1, map[string]string{AffinityAnnotation: "ps,worker"}, pod("train-ps-0", "ps", "1").Obj())
	arriving.Jobs["ns/train"].PodGroup.CreationTimestamp = metav1.Now()
	arriving.Jobs["ns/train"].MinAvailable = 2
	cache, _ = run(t, arriving)
	if len(cache.Events) != 0 {
		t.Errorf("arriving job: events %v, want none", cache.Events)
	}
}
