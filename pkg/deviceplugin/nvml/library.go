package nvml

import (
	"errors"
	"fmt"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DefaultLibraryPath is the NVML library go-nvml loads when no path is
// given; the dynamic loader searches its usual paths for it.
const DefaultLibraryPath = "libnvidia-ml.so.1"

// defaultEventWait is how long one NVML event wait blocks. It bounds how
// late WatchHealth notices that its context is done, and so how long a
// stopping plugin keeps its successor (and the pods the kubelet admits
// meanwhile) waiting; a wake-up per second costs nothing.
const defaultEventWait = time.Second

// Options tune a Library. The zero value is the production setting.
type Options struct {
	// LibraryPath is the NVML library to load (real backend only);
	// empty means DefaultLibraryPath.
	LibraryPath string
	// XIDs decides which XID events make a GPU unhealthy; nil means
	// DefaultXIDPolicy(). Production callers pass XIDPolicyFromEnv's result.
	XIDs *XIDPolicy
	// EventWait is how long one NVML event wait blocks; zero means 1 s.
	EventWait time.Duration
	// XIDSeen, when set, is told of every XID event the health watcher receives, critical or
	// not, with the UUID of its GPU ("" when NVML cannot say): the device plugin counts them
	// for its metrics.
	XIDSeen func(uuid string, xid uint64)
}

// Library implements Backend over a go-nvml Interface.
type Library struct {
	lib gonvml.Interface
	// source names the backend in errors and logs ("NVML libnvidia-ml.so.1",
	// "fake NVML").
	source string
	// sysfsRoot is where NUMA nodes are looked up; empty skips the lookup
	// (the fake has no PCI devices).
	sysfsRoot string
	xids      XIDPolicy
	eventWait time.Duration
	xidSeen   func(uuid string, xid uint64)

	mu          sync.Mutex
	initialised bool
	watching    bool
	// unhealthy maps a GPU UUID to the reason it was marked unhealthy.
	unhealthy map[string]string
}

var _ Backend = (*Library)(nil)

// NewReal returns a Library over the real NVML library. Nothing is loaded
// until Init, which fails with a clear error when the library is missing.
func NewReal(opts Options) *Library {
	path := opts.LibraryPath
	if path == "" {
		path = DefaultLibraryPath
	}
	return newLibrary(gonvml.New(gonvml.WithLibraryPath(path)), "NVML "+path, "/sys", opts)
}

func newLibrary(lib gonvml.Interface, source, sysfsRoot string, opts Options) *Library {
	xids := DefaultXIDPolicy()
	if opts.XIDs != nil {
		xids = *opts.XIDs
	}
	wait := opts.EventWait
	if wait <= 0 {
		wait = defaultEventWait
	}
	seen := opts.XIDSeen
	if seen == nil {
		seen = func(string, uint64) {}
	}
	return &Library{
		lib:       lib,
		source:    source,
		sysfsRoot: sysfsRoot,
		xids:      xids,
		eventWait: wait,
		xidSeen:   seen,
		unhealthy: map[string]string{},
	}
}

// Init loads the library and initialises NVML.
func (l *Library) Init() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.initialised {
		return nil
	}
	switch ret := l.lib.Init(); ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("initialise %s: library not found: is the NVIDIA driver installed and its "+
			"libraries visible to this container (NVIDIA container runtime or a driver-root mount)?", l.source)
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("initialise %s: the NVIDIA kernel driver is not loaded: %w", l.source, ret)
	default:
		return fmt.Errorf("initialise %s: %w", l.source, ret)
	}
	l.initialised = true
	return nil
}

// Shutdown releases NVML. Calling it on a Library that was never
// initialised does nothing.
func (l *Library) Shutdown() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.initialised {
		return nil
	}
	l.initialised = false
	if ret := l.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("shut down %s: %w", l.source, ret)
	}
	return nil
}

// errNotInitialised guards every NVML call: with the real library a call
// made before a successful Init jumps to an unresolved symbol and kills the
// process instead of returning an error.
var errNotInitialised = errors.New("NVML is not initialised (Init was not called or failed)")

func (l *Library) ready() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.initialised {
		return fmt.Errorf("%s: %w", l.source, errNotInitialised)
	}
	return nil
}

// Driver describes the driver NVML talks to.
func (l *Library) Driver() (DriverInfo, error) {
	if err := l.ready(); err != nil {
		return DriverInfo{}, err
	}
	var info DriverInfo
	var ret gonvml.Return
	if info.DriverVersion, ret = l.lib.SystemGetDriverVersion(); ret != gonvml.SUCCESS {
		return DriverInfo{}, fmt.Errorf("%s: get driver version: %w", l.source, ret)
	}
	if info.NVMLVersion, ret = l.lib.SystemGetNVMLVersion(); ret != gonvml.SUCCESS {
		return DriverInfo{}, fmt.Errorf("%s: get NVML version: %w", l.source, ret)
	}
	if info.CUDADriverVersion, ret = l.lib.SystemGetCudaDriverVersion(); ret != gonvml.SUCCESS {
		return DriverInfo{}, fmt.Errorf("%s: get CUDA driver version: %w", l.source, ret)
	}
	return info, nil
}

// markUnhealthy records that a GPU is unhealthy and says whether this is
// news (the first reason wins; later ones are only logged by the caller).
func (l *Library) markUnhealthy(uuid, reason string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, known := l.unhealthy[uuid]; known {
		return false
	}
	l.unhealthy[uuid] = reason
	return true
}

func (l *Library) unhealthyReason(uuid string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reason, ok := l.unhealthy[uuid]
	return reason, ok
}
