package volumes

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
)

const class = "local"

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
}

// localPV is an available 1 GiB PV of the class that only node n reaches.
func localPV(name, n string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:       class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n}}},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
}

func claim(name string) *corev1.PersistentVolumeClaim {
	c := class
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &c, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
}

func podWith(name string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

// binding is the plugin on a fake API server holding objs, its informers synced.
func binding(t *testing.T, objs ...runtime.Object) *Binding {
	t.Helper()
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	objs = append(objs, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode})
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, err := New(ctx, client, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v not synced", typ)
		}
	}
	return b
}

// A WaitForFirstConsumer claim fits only the node its PV reaches, in kube-scheduler's words
// elsewhere; a placement's reservation takes the PV from the next pod, and undoing it (a gang
// discarded) gives the PV back. A pod without claims is not looked at.
func TestClaimsReserveAndUndo(t *testing.T) {
	ctx := context.Background()
	b := binding(t, node("a"), node("b"), localPV("pv-a", "a"), claim("first"), claim("second"))

	if c, s := b.PreFilter(ctx, podWith("plain")); c != nil || s != nil {
		t.Errorf("a pod without claims: claims %v, status %v; want neither", c, s)
	}
	first, s := b.PreFilter(ctx, podWith("p1", "first"))
	if s != nil || first == nil {
		t.Fatalf("PreFilter: %v", s)
	}
	if s := b.Filter(ctx, first, node("a")); s != nil {
		t.Errorf("node a: %v, want it to fit (its PV)", s)
	}
	const noPV = "node(s) didn't find available persistent volumes to bind"
	if s := b.Filter(ctx, first, node("b")); s == nil || s.Code != api.UnschedulableAndUnresolvable || s.Reasons[0] != noPV {
		t.Errorf("node b: %+v, want UnschedulableAndUnresolvable %q", s, noPV)
	}

	if err := b.Reserve(ctx, first, "a"); err != nil {
		t.Fatal(err)
	}
	second, _ := b.PreFilter(ctx, podWith("p2", "second"))
	if s := b.Filter(ctx, second, node("a")); s == nil || s.Reasons[0] != noPV {
		t.Errorf("node a once pv-a is reserved: %+v, want %q", s, noPV)
	}
	b.Unreserve(ctx, first, "a")
	second, _ = b.PreFilter(ctx, podWith("p2", "second"))
	if s := b.Filter(ctx, second, node("a")); s != nil {
		t.Errorf("node a once the reservation is undone: %v, want it to fit", s)
	}
}

// A claim that does not exist refuses the pod before any node is tried, naming the claim.
func TestMissingClaimRefusesThePod(t *testing.T) {
	b := binding(t, node("a"))
	_, s := b.PreFilter(context.Background(), podWith("p", "nothing"))
	if s == nil || s.Code != api.UnschedulableAndUnresolvable || s.Reasons[0] != `persistentvolumeclaim "nothing" not found` {
		t.Errorf("status %+v, want UnschedulableAndUnresolvable naming the claim", s)
	}
}
