package nvml

import (
	"context"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2"
)

// healthEventMask is the NVML event the watcher subscribes to. ECC events
// are not subscribed: only XID critical errors change health, and a double
// bit ECC error that matters arrives as its own XID (48) anyway.
const healthEventMask = uint64(gonvml.EventTypeXidCriticalError)

// WatchHealth watches NVML XID events until ctx is done and reports every
// GPU that turns unhealthy. It returns nil at once when the XID policy
// disables health checks, and an error when watching cannot start. Only one
// watcher runs per Library: it owns the single NVML event set.
func (l *Library) WatchHealth(ctx context.Context, report func(HealthEvent)) error {
	if err := l.ready(); err != nil {
		return err
	}
	if !l.xids.Enabled() {
		klog.InfoS("GPU health checks are disabled", "source", l.source, "env", EnvDisableHealthChecks)
		return nil
	}
	if !l.startWatching() {
		return fmt.Errorf("%s: GPU health is already being watched", l.source)
	}
	defer l.stopWatching()
	if report == nil {
		report = func(HealthEvent) {}
	}

	set, ret := l.lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("%s: create NVML event set: %w", l.source, ret)
	}
	defer func() {
		if ret := set.Free(); ret != gonvml.SUCCESS {
			klog.ErrorS(ret, "Freeing the NVML event set failed", "source", l.source)
		}
	}()

	uuids, err := l.registerHealthEvents(set, report)
	if err != nil {
		return err
	}
	klog.InfoS("Watching GPU health", "source", l.source, "gpus", len(uuids), "xids", l.xids.String())
	l.waitForEvents(ctx, set, uuids, report)
	return nil
}

func (l *Library) startWatching() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watching {
		return false
	}
	l.watching = true
	return true
}

func (l *Library) stopWatching() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watching = false
}

// registerHealthEvents subscribes every GPU to XID events and returns the
// UUIDs of all GPUs it could identify. A GPU whose events cannot be
// subscribed (other than "not supported") is marked unhealthy: a GPU that
// fails here is usually already broken, and an unwatched GPU would stay
// "healthy" for ever.
func (l *Library) registerHealthEvents(set gonvml.EventSet, report func(HealthEvent)) ([]string, error) {
	count, ret := l.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return nil, fmt.Errorf("%s: count GPUs: %w", l.source, ret)
	}
	var uuids []string
	for i := 0; i < count; i++ {
		dev, ret := l.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			klog.ErrorS(ret, "Cannot watch health of GPU: no handle", "source", l.source, "index", i)
			continue
		}
		uuid, ret := dev.GetUUID()
		if ret != gonvml.SUCCESS {
			klog.ErrorS(ret, "Cannot watch health of GPU: no UUID", "source", l.source, "index", i)
			continue
		}
		uuids = append(uuids, uuid)

		supported, ret := dev.GetSupportedEventTypes()
		switch {
		case ret == gonvml.ERROR_NOT_SUPPORTED:
			klog.InfoS("GPU cannot report events; its health is not watched", "gpu", uuid)
			continue
		case ret != gonvml.SUCCESS:
			l.setUnhealthy(uuid, fmt.Sprintf("cannot read supported NVML events: %v", ret), report)
			continue
		}
		mask := healthEventMask & supported
		if mask == 0 {
			klog.InfoS("GPU does not report XID events; its health is not watched", "gpu", uuid,
				"supportedEvents", fmt.Sprintf("%#x", supported))
			continue
		}
		switch ret := dev.RegisterEvents(mask, set); {
		case ret == gonvml.ERROR_NOT_SUPPORTED:
			klog.InfoS("GPU refused XID event registration; its health is not watched", "gpu", uuid)
		case ret != gonvml.SUCCESS:
			l.setUnhealthy(uuid, fmt.Sprintf("cannot register for NVML events: %v", ret), report)
		}
	}
	return uuids, nil
}

// waitForEvents turns NVML events into health changes until ctx is done.
func (l *Library) waitForEvents(ctx context.Context, set gonvml.EventSet, uuids []string, report func(HealthEvent)) {
	waitMs := uint32(l.eventWait / time.Millisecond)
	for ctx.Err() == nil {
		event, ret := set.Wait(waitMs)
		switch ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_TIMEOUT:
			continue
		default:
			// NVML cannot say which GPU failed, so none can be trusted.
			l.setAllUnhealthy(uuids, fmt.Sprintf("waiting for NVML events failed: %v", ret), report)
			sleepCtx(ctx, l.eventWait)
			continue
		}
		if event.EventType != gonvml.EventTypeXidCriticalError {
			klog.V(4).InfoS("Skipping NVML event that is not an XID", "eventType", event.EventType)
			continue
		}
		xid, uuid := event.EventData, eventUUID(event)
		l.xidSeen(uuid, xid)
		if !l.xids.Critical(xid) {
			klog.InfoS("Ignoring XID that does not mean the GPU is broken", "xid", xid, "gpu", uuid)
			continue
		}
		reason := fmt.Sprintf("XID %d", xid)
		if uuid == "" {
			l.setAllUnhealthy(uuids, reason+" on a GPU that NVML could not identify", report)
			continue
		}
		// MIG instances are not advertised, so an event on any instance
		// condemns the whole GPU; no filtering by GPU/compute instance.
		l.setUnhealthy(uuid, reason, report)
	}
}

// eventUUID returns the UUID of the GPU an event came from, "" if unknown.
func eventUUID(event gonvml.EventData) string {
	if event.Device == nil {
		return ""
	}
	uuid, ret := event.Device.GetUUID()
	if ret != gonvml.SUCCESS {
		return ""
	}
	return uuid
}

func (l *Library) setUnhealthy(uuid, reason string, report func(HealthEvent)) {
	if !l.markUnhealthy(uuid, reason) {
		klog.V(2).InfoS("Critical event on a GPU already unhealthy", "gpu", uuid, "reason", reason)
		return
	}
	klog.InfoS("GPU marked unhealthy", "source", l.source, "gpu", uuid, "reason", reason)
	report(HealthEvent{UUID: uuid, Healthy: false, Reason: reason})
}

func (l *Library) setAllUnhealthy(uuids []string, reason string, report func(HealthEvent)) {
	for _, uuid := range uuids {
		l.setUnhealthy(uuid, reason, report)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
