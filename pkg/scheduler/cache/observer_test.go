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
)

// ledgerSpy records what a device ledger would be told.
type ledgerSpy struct{ calls []string }

func (s *ledgerSpy) NodeChanged(n *api.NodeInfo) {
	var tasks []string
	for _, t := range n.Tasks {
		tasks = append(tasks, t.Name+"="+t.Status.String())
	}
	sort.Strings(tasks)
	s.calls = append(s.calls, fmt.Sprintf("changed %s [%s]", n.Name, strings.Join(tasks, " ")))
}

func (s *ledgerSpy) NodeRemoved(name string) { s.calls = append(s.calls, "removed "+name) }

func (s *ledgerSpy) take() []string {
	out := s.calls
	s.calls = nil
	return out
}

// TestNodeObserver: the device-ledger hook hears of every change to a node or the pods on
// it, once per change, and nothing about nodes the cache does not schedule onto.
func TestNodeObserver(t *testing.T) {
	ctx := context.Background()
	env := bindEnv(t)
	spy := &ledgerSpy{}
	env.sc.AddNodeObserver(spy)
	capture := &bindingCapture{err: errors.New("refused")}
	capture.install(env)

	steps := []struct {
		what string
		do   func()
		want []string
	}{
		{"node update", func() { env.sc.onNodeSet(newNode("n1", "8", nil)) }, []string{"changed n1 []"}},
		{"pending pod", func() { env.add(t, newPod("p1", "1", inGroup("pg1"))) }, nil},
		{"running pod", func() { env.add(t, newPod("p2", "1", onNode("n1"), inPhase(corev1.PodRunning))) }, []string{"changed n1 [p2=Running]"}},
		{"bind accepted", func() {
			if err := env.sc.Bind(placed(t, env, "p1", "n1", nil)); err != nil {
				t.Fatal(err)
			}
		}, []string{"changed n1 [p1=Binding p2=Running]"}},
		{"bind refused by the API server", func() { env.sc.processNextBind(ctx) }, []string{"changed n1 [p2=Running]"}},
		{"pod finished", func() {
			env.sc.onPodUpdate(nil, newPod("p2", "1", onNode("n1"), inPhase(corev1.PodSucceeded), resourceVersion("2")))
		}, []string{"changed n1 []"}},
		{"pod on a node not known", func() { env.add(t, newPod("p3", "1", onNode("n2"), inPhase(corev1.PodRunning))) }, nil},
		{"node deleted", func() { env.sc.onNodeDelete(newNode("n1", "8", nil)) }, []string{"removed n1"}},
		{"pod on the deleted node", func() { env.add(t, newPod("p4", "1", onNode("n1"), inPhase(corev1.PodRunning))) }, nil},
	}
	for _, s := range steps {
		s.do()
		if got := spy.take(); !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: observer told %q, want %q", s.what, got, s.want)
		}
	}
}
