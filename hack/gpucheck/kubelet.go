package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// kubeletStandIn plays the kubelet's side of the device-plugin API: the Registration service
// on kubelet.sock, and, for each plugin that registers, a client of its endpoint that keeps a
// ListAndWatch stream open and calls Allocate, as kubelet's device manager does.
type kubeletStandIn struct {
	pluginapi.UnimplementedRegistrationServer
	dir  string
	logf func(format string, args ...any)

	mu      sync.Mutex
	plugins map[string]*pluginClient // by resource name
	changed chan struct{}            // closed and replaced when a plugin registers or lists
}

// pluginClient is kubelet's connection to one registered resource.
type pluginClient struct {
	resource string
	endpoint string
	options  *pluginapi.DevicePluginOptions
	client   pluginapi.DevicePluginClient
	conn     *grpc.ClientConn
	// devices is the last list ListAndWatch sent; lists counts the lists received.
	devices []*pluginapi.Device
	lists   int
	// allocated are the device IDs already handed to containers, which kubelet never hands
	// out twice.
	allocated map[string]bool
}

func newKubeletStandIn(dir string, logf func(string, ...any)) *kubeletStandIn {
	return &kubeletStandIn{dir: dir, logf: logf, plugins: map[string]*pluginClient{}, changed: make(chan struct{})}
}

// serve listens on kubelet.sock in the directory until ctx ends.
func (k *kubeletStandIn) serve(ctx context.Context) (func(), error) {
	socket := filepath.Join(k.dir, filepath.Base(pluginapi.KubeletSocket))
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(socket)
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, k)
	go func() { _ = srv.Serve(listener) }()
	k.logf("kubelet: Registration service listening on %s", socket)
	return func() {
		srv.Stop()
		k.mu.Lock()
		for _, p := range k.plugins {
			_ = p.conn.Close()
		}
		k.mu.Unlock()
	}, nil
}

// Register accepts a plugin as kubelet does: the API version must be kubelet's, and the
// endpoint a socket in the device-plugin directory. Kubelet then connects to the plugin in
// the background; so does this.
func (k *kubeletStandIn) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.logf("kubelet: Register resource=%s endpoint=%s version=%s options=%+v", req.ResourceName, req.Endpoint, req.Version, req.Options)
	if req.Version != pluginapi.Version {
		return nil, fmt.Errorf("version %q is not supported, want %q", req.Version, pluginapi.Version)
	}
	if req.Endpoint == "" || filepath.Base(req.Endpoint) != req.Endpoint {
		return nil, fmt.Errorf("endpoint %q: want a socket name in %s", req.Endpoint, k.dir)
	}
	go k.connect(req)
	return &pluginapi.Empty{}, nil
}

func (k *kubeletStandIn) connect(req *pluginapi.RegisterRequest) {
	socket := filepath.Join(k.dir, req.Endpoint)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		k.logf("kubelet: connect to %s: %v", socket, err)
		return
	}
	client := pluginapi.NewDevicePluginClient(conn)
	ctx := context.Background()
	options, err := client.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		k.logf("kubelet: %s GetDevicePluginOptions: %v", req.ResourceName, err)
		_ = conn.Close()
		return
	}
	stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		k.logf("kubelet: %s ListAndWatch: %v", req.ResourceName, err)
		_ = conn.Close()
		return
	}
	p := &pluginClient{resource: req.ResourceName, endpoint: req.Endpoint, options: options, client: client, conn: conn,
		allocated: map[string]bool{}}
	k.mu.Lock()
	if old := k.plugins[req.ResourceName]; old != nil {
		_ = old.conn.Close()
	}
	k.plugins[req.ResourceName] = p
	k.notifyLocked()
	k.mu.Unlock()
	for {
		resp, err := stream.Recv()
		if err != nil {
			k.logf("kubelet: %s ListAndWatch ended: %v", req.ResourceName, err)
			return
		}
		k.mu.Lock()
		p.devices, p.lists = resp.Devices, p.lists+1
		k.notifyLocked()
		k.mu.Unlock()
		k.logf("kubelet: %s ListAndWatch list #%d: %s", req.ResourceName, p.lists, describeDevices(resp.Devices))
	}
}

func (k *kubeletStandIn) notifyLocked() {
	close(k.changed)
	k.changed = make(chan struct{})
}

// waitListed waits until each resource has registered and sent its first device list.
func (k *kubeletStandIn) waitListed(ctx context.Context, resources []string) error {
	for {
		k.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(resources), func(r string) bool {
			p := k.plugins[r]
			return p != nil && p.lists > 0
		})
		changed := k.changed
		k.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("resources %v did not register and list their devices: %w", missing, ctx.Err())
		case <-changed:
		}
	}
}

// snapshot returns the registered resources and a copy of their device lists.
func (k *kubeletStandIn) snapshot() map[string][]*pluginapi.Device {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string][]*pluginapi.Device{}
	for name, p := range k.plugins {
		out[name] = slices.Clone(p.devices)
	}
	return out
}

// allocate picks n healthy devices of resource that no container holds yet and calls the
// plugin's Allocate for one container with them, as kubelet's device manager does at
// container admission.
func (k *kubeletStandIn) allocate(ctx context.Context, resource string, n int) ([]string, *pluginapi.ContainerAllocateResponse, error) {
	k.mu.Lock()
	p := k.plugins[resource]
	if p == nil {
		k.mu.Unlock()
		return nil, nil, fmt.Errorf("resource %s is not registered", resource)
	}
	var ids []string
	for _, d := range p.devices {
		if len(ids) == n {
			break
		}
		if d.Health == pluginapi.Healthy && !p.allocated[d.ID] {
			ids = append(ids, d.ID)
		}
	}
	k.mu.Unlock()
	if len(ids) < n {
		return nil, nil, fmt.Errorf("resource %s: %d free healthy devices, the container needs %d", resource, len(ids), n)
	}
	resp, err := p.client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
	})
	if err != nil {
		return ids, nil, fmt.Errorf("%s Allocate of %d devices: %w", resource, n, err)
	}
	if len(resp.ContainerResponses) != 1 {
		return ids, nil, fmt.Errorf("%s Allocate: %d container responses for 1 container", resource, len(resp.ContainerResponses))
	}
	k.mu.Lock()
	for _, id := range ids {
		p.allocated[id] = true
	}
	k.mu.Unlock()
	return ids, resp.ContainerResponses[0], nil
}

func describeDevices(devices []*pluginapi.Device) string {
	healthy := 0
	for _, d := range devices {
		if d.Health == pluginapi.Healthy {
			healthy++
		}
	}
	s := fmt.Sprintf("%d devices, %d healthy", len(devices), healthy)
	for i, d := range devices {
		if i == 2 {
			s += fmt.Sprintf(", ... %s", devices[len(devices)-1].ID)
			break
		}
		s += fmt.Sprintf(", %s", d.ID)
		if d.Topology != nil && len(d.Topology.Nodes) > 0 {
			s += fmt.Sprintf(" (NUMA %d)", d.Topology.Nodes[0].ID)
		}
	}
	return s
}
