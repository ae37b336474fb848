package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Allocator answers kubelet's Allocate for one container of one resource.
// The vgpu-number server's allocator does the real work (package
// allocate); the memory and cores servers' may only check the request.
type Allocator interface {
	Allocate(ctx context.Context, req *pluginapi.ContainerAllocateRequest) (*pluginapi.ContainerAllocateResponse, error)
}

// server is the device-plugin gRPC server of one resource. Its socket
// lives in the kubelet's device-plugin directory; start and stop are
// called only from the Manager's loop.
type server struct {
	pluginapi.UnimplementedDevicePluginServer

	res       resource
	inventory *Inventory
	socket    string

	grpc *grpc.Server
	// served is closed when the gRPC server stops serving, whatever the
	// reason.
	served chan struct{}
	// socketFile identifies the socket file this server created, to notice
	// when kubelet deletes it (it clears the directory when it restarts).
	socketFile fileID
	// registeredWith identifies the kubelet socket the server last
	// registered through; zero when not registered.
	registeredWith fileID
	// streams counts the kubelet's ListAndWatch streams open now; ended
	// hears when one closes (Manager.dropOrphans).
	streams atomic.Int32
	ended   chan<- struct{}
}

func newServer(res resource, inventory *Inventory, dir string) *server {
	return &server{res: res, inventory: inventory, socket: filepath.Join(dir, res.socketName())}
}

// start listens on the socket, replacing a stale file left by an earlier
// run, and serves in the background.
func (s *server) start() error {
	if err := os.Remove(s.socket); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("%s: remove stale socket %s: %w", s.res.name, s.socket, err)
	}
	listener, err := net.Listen("unix", s.socket)
	if err != nil {
		return fmt.Errorf("%s: listen on %s: %w", s.res.name, s.socket, err)
	}
	id, err := statFileID(s.socket)
	if err != nil {
		listener.Close()
		return fmt.Errorf("%s: %w", s.res.name, err)
	}
	s.grpc = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(s.grpc, s)
	s.served = make(chan struct{})
	s.socketFile = id
	s.registeredWith = fileID{}
	go func(g *grpc.Server, served chan struct{}) {
		defer close(served)
		if err := g.Serve(listener); err != nil {
			klog.ErrorS(err, "Device plugin server stopped", "resource", s.res.name, "socket", s.socket)
		}
	}(s.grpc, s.served)
	klog.InfoS("Serving device plugin", "resource", s.res.name, "socket", s.socket)
	return nil
}

// stop ends the server and every open stream. Closing the listener
// removes the socket path, so stop must come before the next start.
func (s *server) stop() {
	if s.grpc == nil {
		return
	}
	s.grpc.Stop()
	s.grpc = nil
	s.registeredWith = fileID{}
}

// socketIntact says whether the server still serves and its socket file
// is still the one it created.
func (s *server) socketIntact() bool {
	if s.grpc == nil {
		return false
	}
	select {
	case <-s.served:
		return false
	default:
	}
	id, err := statFileID(s.socket)
	return err == nil && id == s.socketFile
}

// GetDevicePluginOptions offers neither preferred allocation nor a
// pre-start hook: kubelet's choice of device IDs does not matter, since
// the scheduler's assignment decides the GPUs.
func (s *server) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the resource's devices, then a new list each time the
// inventory changes in a way that changes this resource's devices.
func (s *server) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	s.streams.Add(1)
	defer func() {
		s.streams.Add(-1)
		select {
		case s.ended <- struct{}{}:
		default: // a check is already due
		}
	}()
	var sent []*pluginapi.Device
	first := true
	for {
		gpus, changed := s.inventory.snapshot()
		devices := s.res.devices(gpus)
		if first || !sameDevices(sent, devices) {
			response := &pluginapi.ListAndWatchResponse{Devices: devices}
			if size := proto.Size(response); size > kubeletMessageLimit {
				// Kubelet will drop it; nothing better can be sent.
				klog.ErrorS(nil, "Device list is larger than kubelet accepts; raise the memory factor",
					"resource", s.res.name, "devices", len(devices), "bytes", size, "limitBytes", kubeletMessageLimit)
			}
			if err := stream.Send(response); err != nil {
				return fmt.Errorf("%s: send device list: %w", s.res.name, err)
			}
			s.inventory.markAdvertised(time.Now())
			klog.V(2).InfoS("Sent device list to kubelet", "resource", s.res.name, "devices", len(devices),
				"healthy", countHealthy(devices))
			sent, first = devices, false
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// Allocate answers each container of the request through the resource's
// allocator; without one, with an empty response.
func (s *server) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	response := &pluginapi.AllocateResponse{}
	for _, container := range req.ContainerRequests {
		answer := &pluginapi.ContainerAllocateResponse{}
		if s.res.allocator != nil {
			var err error
			if answer, err = s.res.allocator.Allocate(ctx, container); err != nil {
				klog.ErrorS(err, "Allocate refused", "resource", s.res.name, "devices", len(container.DevicesIds))
				return nil, err
			}
		}
		response.ContainerResponses = append(response.ContainerResponses, answer)
	}
	return response, nil
}

// GetPreferredAllocation is never called (GetDevicePluginOptions does not
// offer it); it answers with no preference.
func (s *server) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// PreStartContainer is never called (not requested at registration).
func (s *server) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func sameDevices(a, b []*pluginapi.Device) bool {
	return slices.EqualFunc(a, b, func(x, y *pluginapi.Device) bool {
		return x.ID == y.ID && x.Health == y.Health
	})
}

func countHealthy(devices []*pluginapi.Device) int {
	n := 0
	for _, d := range devices {
		if d.Health == pluginapi.Healthy {
			n++
		}
	}
	return n
}
