package assignment

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// maxAttempts bounds how often one Allocate starts over because the pod
// changed between reading and patching it (kubelet writing its status,
// say).
const maxAttempts = 3

// VGPU answers Allocate for the vGPU count resource: it serves the next
// container of the pod kubelet is admitting from the pod's assignment.
type VGPU struct {
	client kubernetes.Interface
	cfg    Config
	// newCacheName names a container's shared-region file.
	newCacheName func() string
	// mu serves one container at a time, so that two calls can never pick
	// the same entry.
	mu sync.Mutex
	// releases are the node lock releases still running.
	releases sync.WaitGroup
}

// lockReleaseTimeout bounds one background release of the node lock.
const lockReleaseTimeout = 30 * time.Second

// releaseLock releases the node lock in the background: the container's
// start need not wait for a read and a write of the node, which most
// clusters (the lock is off by default) would make for nothing.
func (a *VGPU) releaseLock(ctx context.Context) {
	a.releases.Add(1)
	go func() {
		defer a.releases.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockReleaseTimeout)
		defer cancel()
		releaseNodeLock(ctx, a.client, a.cfg.NodeName)
	}()
}

// NewVGPU returns the allocator for the count resource.
func NewVGPU(client kubernetes.Interface, cfg Config) (*VGPU, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	return &VGPU{client: client, cfg: cfg, newCacheName: uuid.NewString}, nil
}

// Allocate serves the container kubelet admits with len(req.DevicesIds)
// vGPUs. The device IDs themselves are kubelet's pick among fakes and mean
// nothing; the scheduler's assignment on the pod decides the GPUs.
//
// Once the pod is identified, a failure marks its hand-off failed and
// releases the node lock, so that the scheduler neither waits for it nor
// keeps the node locked; kubelet then rejects the pod with the error.
func (a *VGPU) Allocate(ctx context.Context, req *pluginapi.ContainerAllocateRequest) (*pluginapi.ContainerAllocateResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	count := len(req.DevicesIds)
	for attempt := 1; ; attempt++ {
		response, err := a.allocate(ctx, count, attempt == maxAttempts)
		if apierrors.IsConflict(err) && attempt < maxAttempts {
			klog.V(2).InfoS("Pod changed while serving it; starting over", "node", a.cfg.NodeName, "attempt", attempt, "err", err)
			continue
		}
		return response, err
	}
}

// allocate makes one attempt. A conflict is left to the caller to retry,
// unless this is the last attempt.
func (a *VGPU) allocate(ctx context.Context, count int, last bool) (*pluginapi.ContainerAllocateResponse, error) {
	pods, err := listNodePods(ctx, a.client, a.cfg.NodeName)
	if err != nil {
		return nil, err
	}
	t, err := findTarget(pods, a.cfg.NodeName, count)
	if err != nil {
		return nil, err
	}
	response, err := a.serve(ctx, t)
	if err != nil {
		if last || !apierrors.IsConflict(err) {
			a.fail(ctx, t, err)
		}
		return nil, err
	}
	return response, nil
}

// serve builds the container's response, prepares the host, and records
// on the pod that the container was served.
func (a *VGPU) serve(ctx context.Context, t target) (*pluginapi.ContainerAllocateResponse, error) {
	pod := t.pod
	container, err := containerFor(t, a.cfg.Names)
	if err != nil {
		return nil, err
	}
	response, err := containerResponse(a.cfg, string(pod.UID), container, t.devices(), a.cfg.GPUs.GPUs(), a.newCacheName())
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := prepareHost(a.cfg, string(pod.UID), container); err != nil {
		return nil, fmt.Errorf("pod %s/%s container %q: %w", pod.Namespace, pod.Name, container.Name, err)
	}
	annotations, complete, err := servedAnnotations(t)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := patchPod(ctx, a.client, pod, pod.ResourceVersion, annotations); err != nil {
		return nil, err
	}
	if complete {
		a.releaseLock(ctx)
	}
	klog.InfoS("Allocated vGPUs", "pod", klog.KObj(pod), "container", container.Name, "entry", t.entry,
		"gpus", response.Envs[envVisibleDevices], "complete", complete)
	return response, nil
}

// fail ends the pod's hand-off after err. It is best effort: the error
// goes back to kubelet either way.
func (a *VGPU) fail(ctx context.Context, t target, err error) {
	klog.ErrorS(err, "Allocate failed; marking the pod's vGPU hand-off failed", "pod", klog.KObj(t.pod), "entry", t.entry)
	if err := patchPod(ctx, a.client, t.pod, "", failedAnnotations()); err != nil {
		klog.ErrorS(err, "Cannot mark the pod's vGPU hand-off failed", "pod", klog.KObj(t.pod))
	}
	a.releaseLock(ctx)
}
