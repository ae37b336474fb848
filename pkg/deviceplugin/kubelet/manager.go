// Package kubelet serves the vGPU resources to the kubelet through
// the device-plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1):
// one gRPC server per resource, each on its own socket in the kubelet's
// device-plugin directory and registered with the kubelet.
//
// All advertise fake devices derived from the node's GPUs: split-count
// vGPUs per GPU, the GPU's memory in units of the memory factor,
// 100 x core-scaling cores per GPU, and 100 percent of memory per GPU (the
// memory percentage resource, which upstream's plugin does not advertise,
// so that a pod asking it finds it on the node). Kubelet's choice among
// them is ignored; only their count matters, and the vgpu-number server's
// Allocator serves the scheduler's assignment instead.
//
// The Manager follows kubelet restarts: kubelet deletes every socket in
// the directory when it starts, so the Manager watches the directory (and
// polls it, should a change go unnoticed), re-creates what is gone and
// registers again as soon as the kubelet's socket is back.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// defaultPollInterval is how often the sockets are checked besides the
// directory's changes: a kubelet restart the watch missed is answered
// within it plus one registration.
const defaultPollInterval = time.Second

// registerTimeout bounds one registration call, so that a kubelet that
// accepts connections but does not answer cannot stall the loop.
const registerTimeout = 5 * time.Second

// Allocators answer Allocate for each resource; a nil one answers every
// container with an empty response.
type Allocators struct {
	Count, Memory, Cores, MemoryPercentage Allocator
}

// Config configures a Manager.
type Config struct {
	// PluginDir is the kubelet's device-plugin directory; empty means
	// pluginapi.DevicePluginPath. The kubelet's socket is
	// "kubelet.sock" in it.
	PluginDir  string
	Resources  Resources
	Allocators Allocators
	// PollInterval is how often sockets are checked; zero means 1 s.
	PollInterval time.Duration
}

// Manager runs the device-plugin servers and keeps them registered.
type Manager struct {
	dir           string
	kubeletSocket string
	pollInterval  time.Duration
	servers       []*server
	// problems holds the last error logged per server, so that a kubelet
	// that stays away is logged once, not every poll.
	problems map[*server]string
	// streamEnded hears from the servers when a kubelet stream closes.
	streamEnded chan struct{}
}

// NewManager checks cfg and prepares the servers; Run starts them.
func NewManager(cfg Config, inventory *Inventory) (*Manager, error) {
	if err := cfg.Resources.validate(); err != nil {
		return nil, fmt.Errorf("device plugin resources: %w", err)
	}
	// No server registers a list the kubelet would drop, whatever the caller checked.
	if err := cfg.Resources.checkListSizes(inventory.GPUs()); err != nil {
		return nil, fmt.Errorf("device plugin resources: %w", err)
	}
	dir := cfg.PluginDir
	if dir == "" {
		dir = pluginapi.DevicePluginPath
	}
	m := &Manager{
		dir:           dir,
		kubeletSocket: filepath.Join(dir, filepath.Base(pluginapi.KubeletSocket)),
		pollInterval:  cfg.PollInterval,
		problems:      make(map[*server]string),
		streamEnded:   make(chan struct{}, 1),
	}
	if m.pollInterval <= 0 {
		m.pollInterval = defaultPollInterval
	}
	sockets := make(map[string]string)
	for _, res := range cfg.Resources.list(cfg.Allocators) {
		if res.name == "" {
			return nil, errors.New("device plugin resources: a resource name is empty")
		}
		if other, dup := sockets[res.socketName()]; dup {
			return nil, fmt.Errorf("device plugin resources: %s and %s would share socket %s", other, res.name, res.socketName())
		}
		sockets[res.socketName()] = string(res.name)
		s := newServer(res, inventory, dir)
		s.ended = m.streamEnded
		m.servers = append(m.servers, s)
	}
	return m, nil
}

// Run serves and registers the resources until ctx is done, then
// stops the servers and removes their sockets. Failures (kubelet absent,
// registration refused) are logged and retried at the next change in the
// directory or the next poll.
func (m *Manager) Run(ctx context.Context) error {
	defer func() {
		for _, s := range m.servers {
			s.stop()
		}
	}()
	changed := m.watchDir(ctx)
	ticker := time.NewTicker(m.pollInterval)
	defer ticker.Stop()
	retryDelay := firstRetry
	var orphanCheck <-chan time.Time
	for {
		var retry <-chan time.Time
		if m.reconcile(ctx) {
			retry = time.After(retryDelay)
			retryDelay = min(2*retryDelay, m.pollInterval)
		} else {
			retryDelay = firstRetry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-changed:
		case <-retry:
		case <-m.streamEnded:
			orphanCheck = time.After(orphanDelay)
		case <-orphanCheck:
			orphanCheck = nil
			m.dropOrphans()
		}
	}
}

// orphanDelay is how long after a kubelet stream closed the servers are checked for one the
// kubelet no longer watches (dropOrphans): long enough for the kubelet to finish with the
// client whose stream closed.
const orphanDelay = 250 * time.Millisecond

// dropOrphans makes a registered server that no kubelet stream watches register again. The
// kubelet watches every resource it registered; when the stream of a registration it
// replaced ends after the new one connected, its device manager disconnects the resource's
// current client instead and marks the resource unhealthy (kubelet v1.35,
// pkg/kubelet/cm/devicemanager/plugin/v1beta1/handler.go runClient, manager.go
// PluginDisconnected), and pods asking for it are refused ("no healthy devices present") until
// the plugin registers again. A plugin restart right after a kubelet restart does that.
func (m *Manager) dropOrphans() {
	for _, s := range m.servers {
		if s.grpc != nil && s.registeredWith != (fileID{}) && s.streams.Load() == 0 {
			klog.InfoS("The kubelet no longer watches the device plugin; registering again", "resource", s.res.name)
			s.registeredWith = fileID{}
		}
	}
}

// firstRetry is how soon a registration that failed although the kubelet's
// socket is there is tried again; each further failure doubles it, up to
// the poll interval. The kubelet creates its socket a moment before it
// listens on it, and a watch that reacts at once may find it refusing.
const firstRetry = 50 * time.Millisecond

// watchDir reports changes in the device-plugin directory until ctx is
// done. A restarted kubelet admits the pods bound to the node within a
// second of creating its socket, and rejects those asking a resource not
// registered yet: registering at once, rather than at the next poll,
// saves them. Without a watch (inotify unavailable) only the poll runs.
func (m *Manager) watchDir(ctx context.Context) <-chan struct{} {
	changed := make(chan struct{}, 1)
	watcher, err := fsnotify.NewWatcher()
	if err == nil {
		if err = watcher.Add(m.dir); err != nil {
			watcher.Close()
		}
	}
	if err != nil {
		klog.ErrorS(err, "Cannot watch the device-plugin directory; noticing kubelet restarts by polling only", "dir", m.dir, "every", m.pollInterval)
		return changed
	}
	go func() {
		defer watcher.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-watcher.Events:
				select {
				case changed <- struct{}{}:
				default: // a reconcile is already due
				}
			case err := <-watcher.Errors:
				klog.ErrorS(err, "Watching the device-plugin directory; the poll still runs", "dir", m.dir)
			}
		}
	}()
	return changed
}

// reconcile brings every server to "serving on its socket and registered
// with the kubelet socket that exists now". Running it again changes
// nothing. It says whether something failed that is worth trying again
// soon: anything but the kubelet's socket being absent, whose return the
// directory's watch reports.
func (m *Manager) reconcile(ctx context.Context) (retry bool) {
	kubelet, kubeletErr := statFileID(m.kubeletSocket)
	for _, s := range m.servers {
		if !s.socketIntact() {
			if s.grpc != nil {
				klog.InfoS("Device plugin socket was removed (kubelet restarted?); serving again", "resource", s.res.name, "socket", s.socket)
			}
			s.stop()
			if err := s.start(); err != nil {
				m.problem(s, err)
				retry = true
				continue
			}
		}
		if kubeletErr != nil {
			m.problem(s, fmt.Errorf("%s: kubelet socket %s: %w", s.res.name, m.kubeletSocket, kubeletErr))
			continue
		}
		if s.registeredWith == kubelet {
			continue
		}
		if err := register(ctx, m.kubeletSocket, s); err != nil {
			m.problem(s, err)
			retry = true
			continue
		}
		s.registeredWith = kubelet
		delete(m.problems, s)
		klog.InfoS("Registered with kubelet", "resource", s.res.name, "endpoint", filepath.Base(s.socket), "kubeletSocket", m.kubeletSocket)
	}
	return retry
}

func (m *Manager) problem(s *server, err error) {
	if m.problems[s] == err.Error() {
		return
	}
	m.problems[s] = err.Error()
	klog.ErrorS(err, "Device plugin not registered; retrying", "resource", s.res.name, "atMostEvery", m.pollInterval)
}

func register(ctx context.Context, kubeletSocket string, s *server) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("%s: connect to kubelet at %s: %w", s.res.name, kubeletSocket, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(s.socket),
		ResourceName: string(s.res.name),
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("%s: register with kubelet at %s: %w", s.res.name, kubeletSocket, err)
	}
	return nil
}
