package podresources

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const count = "volcano.sh/vgpu-number"

// fakeKubelet answers List on a unix socket, as the kubelet's PodResources
// server does.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pods []*podresourcesv1.PodResources
}

func (k *fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: k.pods}, nil
}

func container(name string, devices ...*podresourcesv1.ContainerDevices) *podresourcesv1.ContainerResources {
	return &podresourcesv1.ContainerResources{Name: name, Devices: devices}
}

func devices(resource string, ids ...string) *podresourcesv1.ContainerDevices {
	return &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}

func TestHoldingsOverTheSocket(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(server, &fakeKubelet{pods: []*podresourcesv1.PodResources{
		{Namespace: "ns", Name: "running", Containers: []*podresourcesv1.ContainerResources{
			container("main", devices(count, "GPU-a-0"), devices("volcano.sh/vgpu-memory", "GPU-a-memory-0")),
			container("sidecar"),
		}},
		// Being admitted: kubelet has allocated its memory, not yet its count.
		{Namespace: "ns", Name: "admitting", Containers: []*podresourcesv1.ContainerResources{
			container("main", devices("volcano.sh/vgpu-memory", "GPU-a-memory-1")),
		}},
	}})
	go server.Serve(listener)
	t.Cleanup(server.Stop)

	client, err := New(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	holdings, err := client.Holdings(context.Background(), count)
	if err != nil {
		t.Fatal(err)
	}
	want := Holdings{
		{Namespace: "ns", Name: "running"}:   {"main": true, "sidecar": false},
		{Namespace: "ns", Name: "admitting"}: {"main": false},
	}
	if diff := cmp.Diff(want, holdings); diff != "" {
		t.Errorf("holdings (-want +got):\n%s", diff)
	}

	for _, c := range []struct {
		pod, container string
		want           bool
	}{
		{"admitting", "main", true},
		{"running", "main", false},   // holds its vGPUs already
		{"running", "sidecar", true}, // a container of an admitted pod still without vGPUs
		{"rejected", "main", false},  // not one of the kubelet's active pods
	} {
		if got := holdings.Awaits(types.NamespacedName{Namespace: "ns", Name: c.pod}, c.container); got != c.want {
			t.Errorf("Awaits(%s, %s) = %v, want %v", c.pod, c.container, got, c.want)
		}
	}
}

func TestHoldingsWithoutKubelet(t *testing.T) {
	client, err := New(filepath.Join(t.TempDir(), "absent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Holdings(context.Background(), count); err == nil {
		t.Error("Holdings without a kubelet: no error")
	}
}

func TestListsOnlyActivePods(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.35.4": true, "v1.34.0": true, "v1.34.1-eks-abc": true,
		"v1.33.9": false, "v1.30.0": false, "": false, "garbage": false,
	} {
		if got := ListsOnlyActivePods(v); got != want {
			t.Errorf("ListsOnlyActivePods(%q) = %v, want %v", v, got, want)
		}
	}
}
