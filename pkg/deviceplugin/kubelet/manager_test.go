package kubelet

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
)

// reRegisterDeadline is how soon after a kubelet restart the plugins must
// be registered again.
const reRegisterDeadline = 5 * time.Second

// fakeKubelet serves the Registration service on kubelet.sock in dir, as
// kubelet does, and reports each registration.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	server        *grpc.Server
	registrations chan *pluginapi.RegisterRequest
}

func startFakeKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	listener, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{server: grpc.NewServer(), registrations: make(chan *pluginapi.RegisterRequest, 16)}
	pluginapi.RegisterRegistrationServer(k.server, k)
	go k.server.Serve(listener)
	t.Cleanup(k.server.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.registrations <- req
	return &pluginapi.Empty{}, nil
}

// awaitRegistrations waits for one registration of each of the four
// resources and returns "resource endpoint version" for each, sorted.
func (k *fakeKubelet) awaitRegistrations(t *testing.T, within time.Duration) []string {
	t.Helper()
	deadline := time.After(within)
	var got []string
	for len(got) < len(wantRegistrations) {
		select {
		case req := <-k.registrations:
			if req.Options == nil || req.Options.GetPreferredAllocationAvailable || req.Options.PreStartRequired {
				t.Errorf("registration of %s offers options %v, want none", req.ResourceName, req.Options)
			}
			got = append(got, req.ResourceName+" "+req.Endpoint+" "+req.Version)
		case <-deadline:
			t.Fatalf("only %d registrations within %v: %v", len(got), within, got)
		}
	}
	sort.Strings(got)
	return got
}

var wantRegistrations = []string{
	"volcano.sh/vgpu-cores nvidia-vgpu-cores.sock v1beta1",
	"volcano.sh/vgpu-memory nvidia-vgpu-memory.sock v1beta1",
	"volcano.sh/vgpu-memory-percentage nvidia-vgpu-memory-percentage.sock v1beta1",
	"volcano.sh/vgpu-number nvidia-vgpu-number.sock v1beta1",
}

// pluginClient connects to a plugin's socket, as kubelet does after a
// registration.
func pluginClient(t *testing.T, dir, socket string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, socket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func watchDevices(t *testing.T, ctx context.Context, client pluginapi.DevicePluginClient) pluginapi.DevicePlugin_ListAndWatchClient {
	t.Helper()
	stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func nextList(t *testing.T, stream pluginapi.DevicePlugin_ListAndWatchClient) []string {
	t.Helper()
	got := make(chan []string, 1)
	failed := make(chan error, 1)
	go func() {
		response, err := stream.Recv()
		if err != nil {
			failed <- err
			return
		}
		got <- summary(response.Devices)
	}()
	select {
	case list := <-got:
		return list
	case err := <-failed:
		t.Fatalf("ListAndWatch: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no device list within 5 s")
	}
	return nil
}

// recordingAllocator answers with one env naming the device count.
type recordingAllocator struct{}

func (recordingAllocator) Allocate(_ context.Context, req *pluginapi.ContainerAllocateRequest) (*pluginapi.ContainerAllocateResponse, error) {
	if len(req.DevicesIds) == 0 {
		return nil, errors.New("no devices")
	}
	return &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"DEVICES": req.DevicesIds[0]}}, nil
}

func TestManagerServesRegistersAndFollowsKubelet(t *testing.T) {
	dir := t.TempDir()
	kubelet := startFakeKubelet(t, dir)
	inventory := NewInventory([]nvml.GPU{
		{UUID: uuidA, MemoryMiB: 2, Healthy: true},
		{UUID: uuidB, MemoryMiB: 3, Healthy: true},
	})
	resources := testResources(1)
	resources.SplitCount = 2
	resources.CoreScaling = 0.01
	manager, err := NewManager(Config{
		PluginDir:  dir,
		Resources:  resources,
		Allocators: Allocators{Count: recordingAllocator{}},
		// Never within the test: kubelet restarts must be noticed through
		// the directory's changes.
		PollInterval: time.Hour,
	}, inventory)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		for _, socket := range []string{"nvidia-vgpu-number.sock", "nvidia-vgpu-memory.sock", "nvidia-vgpu-cores.sock", "nvidia-vgpu-memory-percentage.sock"} {
			if _, err := os.Stat(filepath.Join(dir, socket)); !os.IsNotExist(err) {
				t.Errorf("socket %s left after Run returned: %v", socket, err)
			}
		}
	}()

	if diff := cmp.Diff(wantRegistrations, kubelet.awaitRegistrations(t, reRegisterDeadline)); diff != "" {
		t.Fatalf("registrations (-want +got):\n%s", diff)
	}

	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	number := pluginClient(t, dir, "nvidia-vgpu-number.sock")
	memory := pluginClient(t, dir, "nvidia-vgpu-memory.sock")
	cores := pluginClient(t, dir, "nvidia-vgpu-cores.sock")
	numberStream := watchDevices(t, streamCtx, number)
	memoryStream := watchDevices(t, streamCtx, memory)
	coresStream := watchDevices(t, streamCtx, cores)

	t.Run("ListAndWatch lists the devices", func(t *testing.T) {
		for _, c := range []struct {
			stream pluginapi.DevicePlugin_ListAndWatchClient
			want   []string
		}{
			{numberStream, []string{uuidA + "-0=H", uuidA + "-1=H", uuidB + "-0=H", uuidB + "-1=H"}},
			{memoryStream, []string{uuidA + "-memory-0=H", uuidA + "-memory-1=H", uuidB + "-memory-0=H", uuidB + "-memory-1=H", uuidB + "-memory-2=H"}},
			{coresStream, []string{uuidA + "-core-0=H", uuidB + "-core-0=H"}},
		} {
			if diff := cmp.Diff(c.want, nextList(t, c.stream)); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		}
	})

	t.Run("a GPU turning unhealthy updates every resource", func(t *testing.T) {
		inventory.SetHealth(nvml.HealthEvent{UUID: uuidB, Healthy: false, Reason: "XID 79"})
		for _, c := range []struct {
			stream pluginapi.DevicePlugin_ListAndWatchClient
			want   []string
		}{
			{numberStream, []string{uuidA + "-0=H", uuidA + "-1=H", uuidB + "-0=U", uuidB + "-1=U"}},
			{memoryStream, []string{uuidA + "-memory-0=H", uuidA + "-memory-1=H", uuidB + "-memory-0=U", uuidB + "-memory-1=U", uuidB + "-memory-2=U"}},
			{coresStream, []string{uuidA + "-core-0=H", uuidB + "-core-0=U"}},
		} {
			if diff := cmp.Diff(c.want, nextList(t, c.stream)); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		}
	})

	t.Run("Allocate goes to the resource's allocator", func(t *testing.T) {
		req := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{uuidA + "-1"}}}}
		got, err := number.Allocate(ctx, req)
		if err != nil || len(got.ContainerResponses) != 1 || got.ContainerResponses[0].Envs["DEVICES"] != uuidA+"-1" {
			t.Errorf("vgpu-number Allocate: %v, %v; want the allocator's answer", got, err)
		}
		got, err = memory.Allocate(ctx, req)
		if err != nil || len(got.ContainerResponses) != 1 || len(got.ContainerResponses[0].Envs) != 0 {
			t.Errorf("vgpu-memory Allocate: %v, %v; want one empty response", got, err)
		}
		_, err = number.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{}}})
		if err == nil {
			t.Error("vgpu-number Allocate: the allocator's error was not passed to kubelet")
		}
	})

	// The kubelet's device manager can drop a registration of ours while it cleans up after
	// one it replaced (see Manager.dropOrphans): the server it no longer watches registers
	// again; those it still watches do not.
	t.Run("a resource the kubelet stops watching registers again", func(t *testing.T) {
		percentageCtx, stopPercentage := context.WithCancel(ctx)
		percentage := watchDevices(t, percentageCtx, pluginClient(t, dir, "nvidia-vgpu-memory-percentage.sock"))
		nextList(t, percentage)
		stopPercentage()
		select {
		case req := <-kubelet.registrations:
			if req.ResourceName != "volcano.sh/vgpu-memory-percentage" {
				t.Errorf("registered %s again, want only the resource whose stream closed", req.ResourceName)
			}
		case <-time.After(reRegisterDeadline):
			t.Fatalf("no registration within %s of the kubelet's stream closing", reRegisterDeadline)
		}
		select {
		case req := <-kubelet.registrations:
			t.Errorf("registered %s again, although the kubelet watches it", req.ResourceName)
		case <-time.After(2 * orphanDelay):
		}
	})

	t.Run("kubelet restart that clears the directory", func(t *testing.T) {
		stopStreams()
		kubelet.server.Stop()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		restarted := startFakeKubelet(t, dir)
		if diff := cmp.Diff(wantRegistrations, restarted.awaitRegistrations(t, reRegisterDeadline)); diff != "" {
			t.Fatalf("registrations after restart (-want +got):\n%s", diff)
		}
		stream := watchDevices(t, ctx, pluginClient(t, dir, "nvidia-vgpu-cores.sock"))
		if diff := cmp.Diff([]string{uuidA + "-core-0=H", uuidB + "-core-0=U"}, nextList(t, stream)); diff != "" {
			t.Errorf("devices from the re-created socket (-want +got):\n%s", diff)
		}
		kubelet = restarted
	})

	t.Run("kubelet restart that leaves the plugin sockets", func(t *testing.T) {
		kubelet.server.Stop() // removes kubelet.sock only
		restarted := startFakeKubelet(t, dir)
		if diff := cmp.Diff(wantRegistrations, restarted.awaitRegistrations(t, reRegisterDeadline)); diff != "" {
			t.Fatalf("registrations after restart (-want +got):\n%s", diff)
		}
		kubelet = restarted
	})

	t.Run("no registration without a restart", func(t *testing.T) {
		select {
		case req := <-kubelet.registrations:
			t.Errorf("registered %s again although kubelet did not restart", req.ResourceName)
		case <-time.After(300 * time.Millisecond):
		}
	})
}

func TestNewManagerRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Resources)
		gpus    []nvml.GPU
		wantErr string
	}{
		{"invalid resources", func(r *Resources) { r.SplitCount = 0 }, nil, "split count 0"},
		{"two resources on one socket", func(r *Resources) { r.Names.Cores = "example.com/vgpu-number" }, nil,
			"volcano.sh/vgpu-number and example.com/vgpu-number would share socket nvidia-vgpu-number.sock"},
		{"memory list over kubelet's limit", func(*Resources) {}, gpusOf(h200MiB),
			"memory factor 1 MiB: the memory device list of 1 GPUs would take"},
		{"count list over kubelet's limit", func(r *Resources) { r.SplitCount = 1 << 20; r.MemoryFactor = 1024 }, gpusOf(h200MiB),
			"split count 1048576: the count device list of 1 GPUs would take"},
		{"cores list over kubelet's limit", func(r *Resources) { r.CoreScaling = 1e6; r.MemoryFactor = 1024 }, gpusOf(h200MiB),
			"core scaling 1e+06: the cores device list of 1 GPUs would take"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testResources(1)
			tt.edit(&r)
			_, err := NewManager(Config{PluginDir: t.TempDir(), Resources: r}, NewInventory(tt.gpus))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewManager: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
