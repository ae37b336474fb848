package tasktopology

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// The PodGroup annotations the plugin reads, Volcano's (v1.15) names. Volcano's job
// controller copies a VolcanoJob's annotations to its PodGroup. A task is a job's pods of one
// VolcanoJob task: the pods' volcano.sh/task-spec annotation (else label) names it.
const (
	// AffinityAnnotation lists groups of tasks whose pods prefer one node, groups separated by
	// ";" and tasks by ",": "ps,worker;chief" draws ps and worker pods together, and chief
	// pods to one another.
	AffinityAnnotation = "volcano.sh/task-topology-affinity"
	// AntiAffinityAnnotation lists groups of tasks whose pods prefer different nodes, in the
	// same form: "ps;worker,chief" keeps ps pods apart, and worker pods from chief pods.
	AntiAffinityAnnotation = "volcano.sh/task-topology-anti-affinity"
	// TaskOrderAnnotation lists tasks, separated by ",", in the order their pods are placed.
	TaskOrderAnnotation = "volcano.sh/task-topology-task-order"
)

// Condition is the PodGroup condition of a job whose task-topology annotations are ignored.
const Condition schedulingv1beta1.PodGroupConditionType = "TaskTopologyAnnotationInvalid"

// Rule kinds, ranked as Volcano ranks them when it orders a job's tasks into buckets: a task
// takes the rank of the strongest kind of rule that names it.
const (
	rankInterAntiAffinity = 1 + iota
	rankSelfAffinity
	rankInterAffinity
	rankSelfAntiAffinity
)

// pair is two task names; a task with itself for a rule between its own pods.
type pair struct{ a, b string }

// rules are a job's task topology, read from its annotations.
type rules struct {
	// affine and anti hold each pair both ways.
	affine, anti map[pair]bool
	// rank is the rank of each task a rule names; a task without one is left to the other
	// plugins.
	rank map[string]int
	// order is each task's place in the task order counted from the end (the first named
	// has the largest); 0 for a task it does not name.
	order map[string]int
}

// unknownTaskError is a rule naming a task the job has no pod of (yet).
type unknownTaskError struct{ message string }

func (e *unknownTaskError) Error() string { return e.message }

// readRules reads the job's rules from its PodGroup annotations, checking every name against
// tasks (the job's task names): the rules, or an error naming the annotation, its value and
// what is wrong (an *unknownTaskError when a name is not one of tasks).
func readRules(annotations map[string]string, tasks map[string]bool) (*rules, error) {
	r := &rules{affine: map[pair]bool{}, anti: map[pair]bool{}, rank: map[string]int{}, order: map[string]int{}}
	for _, kind := range []struct {
		key         string
		pairs       map[pair]bool
		self, inter int
	}{
		{AffinityAnnotation, r.affine, rankSelfAffinity, rankInterAffinity},
		{AntiAffinityAnnotation, r.anti, rankSelfAntiAffinity, rankInterAntiAffinity},
	} {
		value, ok := annotations[kind.key]
		if !ok {
			continue
		}
		for _, text := range strings.Split(value, ";") {
			group, err := readGroup(kind.key, value, text, tasks)
			if err != nil {
				return nil, err
			}
			r.add(group, kind.pairs, kind.self, kind.inter)
		}
	}
	if value, ok := annotations[TaskOrderAnnotation]; ok {
		order, err := readGroup(TaskOrderAnnotation, value, value, tasks)
		if err != nil {
			return nil, err
		}
		for i, name := range order {
			r.order[name] = len(order) - i
		}
	}
	return r, nil
}

// readGroup reads the task names of one group (text) of the annotation key's value: names
// separated by ",", spaces around them and empty names left out.
func readGroup(key, value, text string, tasks map[string]bool) ([]string, error) {
	var group []string
	for _, name := range strings.Split(text, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			continue
		case slices.Contains(group, name):
			return nil, fmt.Errorf("annotation %s %q: task %q is named twice in %q", key, value, name, strings.TrimSpace(text))
		case !tasks[name]:
			return nil, &unknownTaskError{fmt.Sprintf("annotation %s %q: the job has no task %q (its tasks: %s)", key, value, name,
				strings.Join(slices.Sorted(maps.Keys(tasks)), ", "))}
		}
		group = append(group, name)
	}
	return group, nil
}

// add records a group of one kind: a lone task's rule is with its own pods (self), a larger
// group's between each two of its tasks (inter).
func (r *rules) add(group []string, pairs map[pair]bool, self, inter int) {
	if len(group) == 1 {
		pairs[pair{group[0], group[0]}] = true
		r.raise(group[0], self)
		return
	}
	for i, a := range group {
		for _, b := range group[:i] {
			pairs[pair{a, b}], pairs[pair{b, a}] = true, true
		}
		r.raise(a, inter)
	}
}

// raise gives the task the rank if it has none higher.
func (r *rules) raise(task string, rank int) { r.rank[task] = max(r.rank[task], rank) }

// attraction is what the pods of tasks (each task's pod count) add up to for a pod of task:
// one for each pod of a task it is affine to, minus one for each it is anti-affine to. With
// antiOnly, the anti-affinity alone.
func (r *rules) attraction(task string, tasks map[string]int, antiOnly bool) int {
	sum := 0
	for other, n := range tasks {
		p := pair{task, other}
		if !antiOnly && r.affine[p] {
			sum += n
		}
		if r.anti[p] {
			sum -= n
		}
	}
	return sum
}
