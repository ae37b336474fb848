package volumes

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework/frameworktest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

const (
	class  = "local"
	driver = "csi.example.com"
)

var allChecks = api.VolumeChecks{Binding: true, Zone: true, Limits: true}

func node(name string, labels ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

// session is the nodes as a session has them, each with the pods given for it.
func session(nodes []*corev1.Node, pods map[string][]*corev1.Pod) []*api.NodeInfo {
	var infos []*api.NodeInfo
	for _, n := range nodes {
		ni := api.NewNodeInfo(n)
		for _, p := range pods[n.Name] {
			ni.AddTask(api.NewTaskInfo(p))
		}
		infos = append(infos, ni)
	}
	return infos
}

// localPV is an available 1 GiB PV of the class that only node n reaches.
func localPV(name, n string) *corev1.PersistentVolume { return st.LocalPV(name, class, n, "1Gi") }

// csiPV is a CSI volume bound to claim, with labels (a zone).
func csiPV(name, claim string, labels map[string]string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: claim},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
}

func claim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class), Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
}

// boundClaim is claim name bound to PV pv, with the access mode given.
func boundClaim(name, pv string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	c := claim(name)
	c.Spec.AccessModes, c.Spec.VolumeName, c.Spec.StorageClassName = []corev1.PersistentVolumeAccessMode{mode}, pv, ptr.To("")
	c.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	c.Status.Phase = corev1.ClaimBound
	return c
}

func podWith(name string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

// started is a Source over client started, as the scheduler starts it, on a cache whose
// informer factory is factory.
func started(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) *Source {
	s := NewSource(client)
	s.Start(ctx, &frameworktest.ComponentCache{Factory: factory})
	return s
}

// defaultBindTimeout is the predicates plugin's default volumebinding.bindTimeoutSeconds.
const defaultBindTimeout = 600 * time.Second

// pluginsOn returns the plugins checks switch on, over a fake API server holding objs and the
// WaitForFirstConsumer class, once their informers have synced.
func pluginsOn(t *testing.T, checks api.VolumeChecks, objs ...runtime.Object) *Plugins {
	t.Helper()
	p, _ := pluginsWithClient(t, checks, defaultBindTimeout, objs...)
	return p
}

// pluginsWithClient is pluginsOn with VolumeBinding's bind timeout, returning the fake API
// server too.
func pluginsWithClient(t *testing.T, checks api.VolumeChecks, bindTimeout time.Duration, objs ...runtime.Object) (*Plugins, *fake.Clientset) {
	t.Helper()
	objs = append(objs, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)})
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := started(ctx, client, factory).Volumes(checks, bindTimeout)
	if err != nil {
		t.Fatal(err)
	}
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v not synced", typ)
		}
	}
	return v.(*Plugins), client
}

// A configuration with every volume predicate off builds nothing and lists nothing.
func TestNoCheckWatchesNothing(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := started(ctx, client, factory).Volumes(api.VolumeChecks{}, defaultBindTimeout)
	if v != nil || err != nil {
		t.Fatalf("plugins %v, error %v; want neither", v, err)
	}
	factory.WaitForCacheSync(ctx.Done())
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("API calls %v, want none", a)
	}
}

// A WaitForFirstConsumer claim fits only the node its PV reaches, in kube-scheduler's words
// elsewhere; a placement's reservation takes the PV from the next pod, and undoing it (a gang
// discarded) gives the PV back. A pod without volumes is not looked at.
func TestClaimsReserveAndUndo(t *testing.T) {
	ctx := context.Background()
	nodes := session([]*corev1.Node{node("a"), node("b")}, nil)
	p := pluginsOn(t, allChecks, localPV("pv-a", "a"), claim("first"), claim("second"))

	if v, s := p.PreFilter(ctx, podWith("plain"), nodes); v != nil || s != nil {
		t.Errorf("a pod without volumes: %v, status %v; want neither", v, s)
	}
	first, s := p.PreFilter(ctx, podWith("p1", "first"), nodes)
	if s != nil || first == nil {
		t.Fatalf("PreFilter: %v", s)
	}
	if s := p.Filter(ctx, first, nodes[0]); s != nil {
		t.Errorf("node a: %v, want it to fit (its PV)", s)
	}
	const noPV = "node(s) didn't find available persistent volumes to bind"
	if s := p.Filter(ctx, first, nodes[1]); s == nil || s.Code != api.UnschedulableAndUnresolvable || s.Reasons[0] != noPV {
		t.Errorf("node b: %+v, want UnschedulableAndUnresolvable %q", s, noPV)
	}

	step, err := p.Reserve(ctx, first, "a")
	if err != nil || step == nil || step.Name() != StepName {
		t.Fatalf("Reserve: step %v, error %v; want the volume binding step", step, err)
	}
	second, _ := p.PreFilter(ctx, podWith("p2", "second"), nodes)
	if s := p.Filter(ctx, second, nodes[0]); s == nil || s.Reasons[0] != noPV {
		t.Errorf("node a once pv-a is reserved: %+v, want %q", s, noPV)
	}
	p.Unreserve(ctx, first, "a")
	second, _ = p.PreFilter(ctx, podWith("p2", "second"), nodes)
	if s := p.Filter(ctx, second, nodes[0]); s != nil {
		t.Errorf("node a once the reservation is undone: %v, want it to fit", s)
	}
}

// A claim that does not exist refuses the pod before any node is tried, naming the claim.
func TestMissingClaimRefusesThePod(t *testing.T) {
	p := pluginsOn(t, allChecks)
	_, s := p.PreFilter(context.Background(), podWith("p", "nothing"), session([]*corev1.Node{node("a")}, nil))
	if s == nil || s.Code != api.UnschedulableAndUnresolvable || s.Reasons[0] != `persistentvolumeclaim "nothing" not found` {
		t.Errorf("status %+v, want UnschedulableAndUnresolvable naming the claim", s)
	}
}

// A bound PV labelled with a zone keeps the pod out of the other zones, unless
// predicate.VolumeZoneEnable is off.
func TestZoneOfABoundPV(t *testing.T) {
	ctx := context.Background()
	nodes := session([]*corev1.Node{node("a", corev1.LabelTopologyZone, "z1"), node("b", corev1.LabelTopologyZone, "z2")}, nil)
	objs := []runtime.Object{csiPV("pv", "data", map[string]string{corev1.LabelTopologyZone: "z1"}),
		boundClaim("data", "pv", corev1.ReadWriteOnce)}
	for _, tc := range []struct {
		checks api.VolumeChecks
		onB    string
	}{
		{allChecks, "node(s) had no available volume zone"},
		{api.VolumeChecks{Binding: true, Limits: true}, ""},
	} {
		p := pluginsOn(t, tc.checks, objs...)
		v, s := p.PreFilter(ctx, podWith("p", "data"), nodes)
		if s != nil {
			t.Fatalf("%+v: PreFilter %v", tc.checks, s)
		}
		if s := p.Filter(ctx, v, nodes[0]); s != nil {
			t.Errorf("%+v: the PV's zone: %v, want it to fit", tc.checks, s)
		}
		s = p.Filter(ctx, v, nodes[1])
		switch {
		case tc.onB == "" && s != nil:
			t.Errorf("%+v: the other zone: %v, want it to fit", tc.checks, s)
		case tc.onB != "" && (s == nil || s.Reasons[0] != tc.onB || s.Plugin != "VolumeZone"):
			t.Errorf("%+v: the other zone: %+v, want VolumeZone's %q", tc.checks, s, tc.onB)
		}
	}
}

// A node whose CSINode allows one volume of the driver takes no second one: the pods the
// session has there count, a gang's earlier placement included, unless
// predicate.NodeVolumeLimitsEnable is off.
func TestCSIAttachLimit(t *testing.T) {
	ctx := context.Background()
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: storagev1.CSINodeSpec{
		Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: "a", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)}}}}}
	objs := []runtime.Object{csiNode, csiPV("pv1", "one", nil), boundClaim("one", "pv1", corev1.ReadWriteOnce),
		csiPV("pv2", "two", nil), boundClaim("two", "pv2", corev1.ReadWriteOnce)}
	for _, tc := range []struct {
		checks api.VolumeChecks
		want   string
	}{
		{allChecks, "node(s) exceed max volume count"},
		{api.VolumeChecks{Binding: true}, ""},
	} {
		p := pluginsOn(t, tc.checks, objs...)
		empty := session([]*corev1.Node{node("a")}, nil)
		v, s := p.PreFilter(ctx, podWith("second", "two"), empty)
		if s != nil {
			t.Fatalf("%+v: PreFilter %v", tc.checks, s)
		}
		if s := p.Filter(ctx, v, empty[0]); s != nil {
			t.Errorf("%+v: an empty node: %v, want it to fit", tc.checks, s)
		}
		busy := session([]*corev1.Node{node("a")}, map[string][]*corev1.Pod{"a": {podWith("first", "one")}})
		s = p.Filter(ctx, v, busy[0])
		switch {
		case tc.want == "" && s != nil:
			t.Errorf("%+v: a node with the limit used: %v, want it to fit", tc.checks, s)
		case tc.want != "" && (s == nil || s.Reasons[0] != tc.want || s.Plugin != "NodeVolumeLimits"):
			t.Errorf("%+v: a node with the limit used: %+v, want NodeVolumeLimits' %q", tc.checks, s, tc.want)
		}
	}
}

// A ReadWriteOncePod claim a pod on any node uses refuses every node to another pod; the pod
// that uses it is not refused for its own use.
func TestReadWriteOncePodClaimInUse(t *testing.T) {
	ctx := context.Background()
	p := pluginsOn(t, allChecks, csiPV("pv", "solo", nil), boundClaim("solo", "pv", corev1.ReadWriteOncePod))
	user := podWith("user", "solo")
	nodes := session([]*corev1.Node{node("a"), node("b")}, map[string][]*corev1.Pod{"b": {user}})

	v, s := p.PreFilter(ctx, podWith("other", "solo"), nodes)
	if s != nil {
		t.Fatalf("PreFilter: %v", s)
	}
	const inUse = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
	for _, n := range nodes {
		if s := p.Filter(ctx, v, n); s == nil || s.Reasons[0] != inUse || s.Plugin != "VolumeRestrictions" {
			t.Errorf("node %s: %+v, want VolumeRestrictions' %q", n.Name, s, inUse)
		}
	}
	v, _ = p.PreFilter(ctx, user, nodes)
	if s := p.Filter(ctx, v, nodes[0]); s != nil {
		t.Errorf("the claim's own pod: %v, want it to fit", s)
	}
}

// Two pods mounting the same iSCSI disk read-write cannot share a node.
func TestInlineDiskConflict(t *testing.T) {
	ctx := context.Background()
	p := pluginsOn(t, allChecks)
	disk := func(name string) *corev1.Pod {
		pod := podWith(name)
		pod.Spec.Volumes = []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{
			ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.2:3260", IQN: "iqn.2026-12.example:disk", Lun: 0}}}}
		return pod
	}
	nodes := session([]*corev1.Node{node("a"), node("b")}, map[string][]*corev1.Pod{"a": {disk("first")}})
	v, s := p.PreFilter(ctx, disk("second"), nodes)
	if s != nil || v == nil {
		t.Fatalf("PreFilter: %v, %v", v, s)
	}
	const conflict = "node(s) had no available disk"
	if s := p.Filter(ctx, v, nodes[0]); s == nil || s.Reasons[0] != conflict {
		t.Errorf("the disk's node: %+v, want %q", s, conflict)
	}
	if s := p.Filter(ctx, v, nodes[1]); s != nil {
		t.Errorf("another node: %v, want it to fit", s)
	}
}

// Until the storage objects are listed (here the PVs never are), a pod with volumes waits,
// saying so.
func TestPodWithVolumesWaitsForTheFirstLists(t *testing.T) {
	client := fake.NewClientset(claim("data"))
	client.PrependReactor("list", "persistentvolumes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := started(ctx, client, informers.NewSharedInformerFactory(client, 0)).Volumes(allChecks, defaultBindTimeout)
	if err != nil {
		t.Fatal(err)
	}
	nodes := session([]*corev1.Node{node("a")}, nil)
	if _, s := v.PreFilter(ctx, podWith("p", "data"), nodes); s == nil || s.Reasons[0] != ErrNotSynced {
		t.Errorf("status %+v, want %q", s, ErrNotSynced)
	}
}
