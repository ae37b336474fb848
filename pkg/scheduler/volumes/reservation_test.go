package volumes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// worker is a pod of gang train as a job controller makes it: cpu, memory and a vGPU slice
// beside its claim.
func worker(name, claim string) *corev1.Pod {
	p := podWith(name, claim)
	p.Annotations = map[string]string{"scheduling.k8s.io/group-name": "train"}
	limits := st.Resources("4", "16Gi", string(vgpu.DefaultCountResource), "1", string(vgpu.DefaultMemoryResource), "8000")
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "trainer:v1",
		Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits.DeepCopy()}}}
	return p
}

// reservationEnv is node a with its local PV pv-a and node b without one, claims data-0 and
// data-1 of the WaitForFirstConsumer class, and worker-0 of data-0 reserved on a: pv-a is
// taken in VolumeBinding's assume cache only, the API server holding it available.
type reservationEnv struct {
	p      *Plugins
	client *fake.Clientset
	nodes  []*api.NodeInfo
	step   api.ReservingStep
}

func reserved(t *testing.T, bindTimeout time.Duration) *reservationEnv {
	t.Helper()
	p, client := pluginsWithClient(t, allChecks, bindTimeout, localPV("pv-a", "a"), claim("data-0"), claim("data-1"))
	env := &reservationEnv{p: p, client: client, nodes: session([]*corev1.Node{node("a"), node("b")}, nil)}
	ctx := context.Background()
	v, s := p.PreFilter(ctx, worker("worker-0", "data-0"), env.nodes)
	if s != nil {
		t.Fatalf("PreFilter: %v", s)
	}
	if s := p.Filter(ctx, v, env.nodes[0]); s != nil {
		t.Fatalf("node a: %v, want it to fit worker-0 (its PV)", s)
	}
	step, err := p.Reserve(ctx, v, "a")
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	env.step = step.(api.ReservingStep)
	if env.pvAvailableInMemory(t) {
		t.Fatal("pv-a available to another claim once reserved")
	}
	return env
}

// pvAvailableInMemory says whether pv-a, as VolumeBinding's assume cache holds it, is free for
// another claim: worker-1's data-1 fits node a only if so.
func (env *reservationEnv) pvAvailableInMemory(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	v, s := env.p.PreFilter(ctx, worker("worker-1", "data-1"), env.nodes)
	if s != nil {
		t.Fatalf("PreFilter worker-1: %v", s)
	}
	return env.p.Filter(ctx, v, env.nodes[0]) == nil
}

// apiClaimRef is pv-a's claimRef on the API server ("" without one).
func (env *reservationEnv) apiClaimRef(t *testing.T) string {
	t.Helper()
	pv, err := env.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.ClaimRef == nil {
		return ""
	}
	return pv.Spec.ClaimRef.Name
}

// The binder drops a bind whose pod was deleted before the bind ran: the step's Unreserve
// gives pv-a back in the assume cache, and nothing was written to the API server.
func TestUnreserveGivesBackTheVolumes(t *testing.T) {
	env := reserved(t, defaultBindTimeout)
	env.step.Unreserve(context.Background())
	if !env.pvAvailableInMemory(t) {
		t.Error("pv-a still taken in the assume cache after Unreserve")
	}
	for _, a := range env.client.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("API call %s %s, want none but the informers' lists and watches", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// A bind whose PV write the API server refuses fails, and the assume cache gives pv-a back
// for other pods at once: the API server never held it taken.
func TestFailedVolumeBindGivesBackTheVolumes(t *testing.T) {
	env := reserved(t, defaultBindTimeout)
	env.client.PrependReactor("update", "persistentvolumes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("persistentvolumes"), "pv-a", nil)
	})
	_, err := env.step.PreBind(context.Background(), &api.PreBindRequest{Client: env.client, Pod: worker("worker-0", "data-0"), Node: "a"})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("PreBind: %v, want the API server's refusal", err)
	}
	if !env.pvAvailableInMemory(t) || env.apiClaimRef(t) != "" {
		t.Errorf("after the failed bind: pv-a available in memory %v, claimRef on the API server %q; want available, none",
			env.pvAvailableInMemory(t), env.apiClaimRef(t))
	}
}

// A bind the PV controller does not complete within VolumeBinding's timeout (0: none at all)
// fails in kube-scheduler's words, and the assume cache gives pv-a back. The API server here
// answers the PV's write without keeping it, so that what the cache holds is the scheduler's
// own, not a write coming back from the informer.
func TestTimedOutVolumeBindGivesBackTheVolumes(t *testing.T) {
	env := reserved(t, 0)
	var written string
	env.client.PrependReactor("update", "persistentvolumes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pv := a.(clienttesting.UpdateAction).GetObject().(*corev1.PersistentVolume)
		written = pv.Spec.ClaimRef.Name
		return true, pv, nil
	})
	_, err := env.step.PreBind(context.Background(), &api.PreBindRequest{Client: env.client, Pod: worker("worker-0", "data-0"), Node: "a"})
	if err == nil || !strings.HasPrefix(err.Error(), "binding volumes: ") {
		t.Fatalf("PreBind: %v, want VolumeBinding's timeout", err)
	}
	if written != "data-0" {
		t.Errorf("PV write claimed %q, want data-0", written)
	}
	if !env.pvAvailableInMemory(t) {
		t.Error("pv-a still taken in the assume cache after the timed-out bind")
	}
}

// VolumeBinding is built once with the first bind timeout asked for; a configuration asking
// another later gets the plugins as built.
func TestBindTimeoutIsTheFirstBuilds(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := started(ctx, client, informers.NewSharedInformerFactory(client, 0))
	for _, asked := range []time.Duration{30 * time.Second, defaultBindTimeout} {
		v, err := s.Volumes(allChecks, asked)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(*Plugins).bindTimeout; got != 30*time.Second {
			t.Errorf("asked %v: VolumeBinding waits %v, want the first build's 30s", asked, got)
		}
	}
}
