package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// taskList is derived device state for the tests: the node's tasks and their statuses.
type taskList []string

func (l taskList) Clone() api.Devices { return append(taskList(nil), l...) }
func (taskList) Reuse()               {}

// deriverSpy derives a taskList and records every call.
type deriverSpy struct{ calls []string }

func (s *deriverSpy) Name() string { return "spy" }

// Claims: nodes labelled spy=yes.
func (s *deriverSpy) Claims(node *corev1.Node) bool { return node.Labels["spy"] == "yes" }

func (s *deriverSpy) Derive(n *api.NodeInfo) api.Devices {
	if len(n.Tasks) == 0 {
		s.calls = append(s.calls, "derive "+n.Name+" (none)")
		return nil
	}
	var tasks taskList
	for _, t := range n.Tasks {
		tasks = append(tasks, t.Name+"="+t.Status.String())
	}
	sort.Strings(tasks)
	s.calls = append(s.calls, fmt.Sprintf("derive %s [%s]", n.Name, strings.Join(tasks, " ")))
	return tasks
}

func (s *deriverSpy) take() []string {
	out := s.calls
	s.calls = nil
	return out
}

// snapshotDevices is what the next snapshot carries for the spy, by node.
func snapshotDevices(sc *SchedulerCache) map[string]api.Devices {
	out := map[string]api.Devices{}
	for name, n := range sc.Snapshot().Nodes {
		if d, ok := n.Devices["spy"]; ok {
			out[name] = d
		}
	}
	return out
}

// TestDeviceDeriver: the cache re-derives a node's device state when the node or the pods on
// it changed, once, as the next snapshot is taken, and of every node when asked
// (RederiveDevices), never for nodes it does not schedule onto, and every snapshot carries
// the state as derived.
func TestDeviceDeriver(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t)
	spy := &deriverSpy{}
	env.sc.AddDeviceDeriver(spy)
	if got := spy.take(); !reflect.DeepEqual(got, []string{"derive n1 (none)"}) {
		t.Errorf("registering derives the nodes already known: got %q", got)
	}
	capture := &bindingCapture{err: errors.New("refused")}
	capture.install(env)

	steps := []struct {
		what    string
		do      func()
		want    []string
		devices map[string]api.Devices
	}{
		{"node update", func() { env.sc.onNodeSet(st.Node("n1", st.Resources("8", "")).Obj()) }, []string{"derive n1 (none)"}, map[string]api.Devices{}},
		{"pending pod", func() { env.add(t, st.Pod("p1", "1", "").Group("pg1").Obj()) }, nil, map[string]api.Devices{}},
		{"running pod", func() { env.add(t, st.Pod("p2", "1", "").Node("n1").Phase(corev1.PodRunning).Obj()) },
			[]string{"derive n1 [p2=Running]"}, map[string]api.Devices{"n1": taskList{"p2=Running"}}},
		{"bind accepted", func() {
			if err := env.sc.Bind(placed(t, env, "p1", "n1", nil)); err != nil {
				t.Fatal(err)
			}
		}, []string{"derive n1 [p1=Binding p2=Running]"}, map[string]api.Devices{"n1": taskList{"p1=Binding", "p2=Running"}}},
		{"bind refused by the API server", func() { env.sc.processNextBind(ctx) },
			[]string{"derive n1 [p2=Running]"}, map[string]api.Devices{"n1": taskList{"p2=Running"}}},
		{"pod finished", func() {
			env.sc.onPodUpdate(nil, st.Pod("p2", "1", "").Node("n1").Phase(corev1.PodSucceeded).ResourceVersion("2").Obj())
		}, []string{"derive n1 (none)"}, map[string]api.Devices{}},
		{"pod on a node not known", func() { env.add(t, st.Pod("p3", "1", "").Node("n2").Phase(corev1.PodRunning).Obj()) }, nil, map[string]api.Devices{}},
		{"device configuration changed", env.sc.RederiveDevices, []string{"derive n1 (none)"}, map[string]api.Devices{}},
		{"node object of the pod arrives", func() { env.sc.onNodeSet(st.Node("n2", st.Resources("8", "")).Obj()) },
			[]string{"derive n2 [p3=Running]"}, map[string]api.Devices{"n2": taskList{"p3=Running"}}},
		{"node deleted with a pod on it", func() { env.sc.onNodeDelete(st.Node("n2", st.Resources("8", "")).Obj()) }, nil, map[string]api.Devices{}},
		{"pod on the deleted node", func() { env.add(t, st.Pod("p4", "1", "").Node("n2").Phase(corev1.PodRunning).Obj()) }, nil, map[string]api.Devices{}},
		{"deleted node comes back", func() { env.sc.onNodeSet(st.Node("n2", st.Resources("8", "")).Obj()) },
			[]string{"derive n2 [p3=Running p4=Running]"}, map[string]api.Devices{"n2": taskList{"p3=Running", "p4=Running"}}},
	}
	for _, s := range steps {
		s.do()
		if got := spy.take(); len(got) != 0 {
			t.Errorf("%s: derived %q before the snapshot", s.what, got)
		}
		if got := snapshotDevices(env.sc); !reflect.DeepEqual(got, s.devices) {
			t.Errorf("%s: snapshot carries %v, want %v", s.what, got, s.devices)
		}
		if got := spy.take(); !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: derived %q, want %q", s.what, got, s.want)
		}
	}

	// Many changes to a node between two snapshots: one derivation.
	for i := range 5 {
		env.add(t, st.Pod(fmt.Sprintf("q%d", i), "1", "").Node("n1").Phase(corev1.PodRunning).Obj())
	}
	env.sc.onNodeSet(st.Node("n1", st.Resources("8", "")).Obj())
	snapshotDevices(env.sc)
	if got, want := spy.take(), []string{"derive n1 [q0=Running q1=Running q2=Running q3=Running q4=Running]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("six changes, then a snapshot: derived %q, want %q", got, want)
	}
}

// TestSnapshotDevicesArePrivate: a session that changes its copy of the device state leaves
// the cache's state and other snapshots alone.
func TestSnapshotDevicesArePrivate(t *testing.T) {
	env := bindEnv(t)
	env.sc.AddDeviceDeriver(&deriverSpy{})
	env.add(t, st.Pod("p1", "1", "").Node("n1").Phase(corev1.PodRunning).Obj())
	first := env.sc.Snapshot().Nodes["n1"].Devices["spy"].(taskList)
	first[0] = "changed by a session"
	if got := snapshotDevices(env.sc)["n1"]; !reflect.DeepEqual(got, taskList{"p1=Running"}) {
		t.Errorf("the next snapshot carries %v", got)
	}
}

// TestNodesClaimedBy: the count of nodes announcing a deriver's devices follows node events
// at once, with no snapshot taken: the scheduler picks its built-in configuration by it
// before the cycle's snapshot derives anything.
func TestNodesClaimedBy(t *testing.T) {
	env := bindEnv(t)
	spy := &deriverSpy{}
	env.sc.onNodeSet(st.Node("gpu-0", st.Resources("8", "")).Labels(map[string]string{"spy": "yes"}).Obj())
	env.sc.AddDeviceDeriver(spy)
	steps := []struct {
		what string
		do   func()
		want int
	}{
		{"known before the deriver was added", func() {}, 1},
		{"a second node claimed", func() {
			env.sc.onNodeSet(st.Node("gpu-1", st.Resources("8", "")).Labels(map[string]string{"spy": "yes"}).Obj())
		}, 2},
		{"a node without the devices", func() { env.sc.onNodeSet(st.Node("cpu-0", st.Resources("8", "")).Obj()) }, 2},
		{"a node loses them", func() { env.sc.onNodeSet(st.Node("gpu-1", st.Resources("8", "")).Obj()) }, 1},
		{"a claimed node is deleted", func() {
			env.sc.onNodeDelete(st.Node("gpu-0", st.Resources("8", "")).Labels(map[string]string{"spy": "yes"}).Obj())
		}, 0},
	}
	for _, step := range steps {
		step.do()
		if got := env.sc.NodesClaimedBy(spy.Name()); got != step.want {
			t.Errorf("%s: %d nodes claimed, want %d", step.what, got, step.want)
		}
	}
	if got := env.sc.NodesClaimedBy("other"); got != 0 {
		t.Errorf("a deriver never added claims %d nodes", got)
	}
}
