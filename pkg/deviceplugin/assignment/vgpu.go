package assignment

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/podresources"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// rejectionSettle is how long after the kubelet last received a device list
// a pod bound before it may still turn out to have been rejected. The kubelet
// writes a rejection's Failed status within milliseconds; seconds leave room
// for a busy node.
const rejectionSettle = 3 * time.Second

// rejectionPoll is how often the node's pods are listed again while a
// rejection may still arrive.
const rejectionPoll = 50 * time.Millisecond

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
	// settle is rejectionSettle, shorter in tests.
	settle time.Duration
	// holdingsErr is the last error asking the kubelet for its pods.
	holdingsErr string
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
	return &VGPU{client: client, cfg: cfg, newCacheName: uuid.NewString, settle: rejectionSettle}, nil
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
//
// A candidate whose assignment is not one the scheduler would make (it does
// not match its container's request, or names GPUs this node lacks), or
// whose containers set the variables of their slice themselves or mount over
// HAMi-core's paths (checkSpec), is refused, with a Warning Event on it. With
// the kubelet's list of its pods the next candidate is then tried: a forged
// pod cannot make kubelet reject the pod it is admitting. Without the list,
// the refused pod may be the very one the kubelet admits, and serving the
// next candidate would start the admitted container on another pod's GPUs,
// its own limits laid over that pod's, and leave that pod's entry taken; so
// the refusal refuses the Allocate.
func (a *VGPU) allocate(ctx context.Context, count int, last bool) (*pluginapi.ContainerAllocateResponse, error) {
	holdings := a.kubeletHoldings(ctx)
	candidates, reasons, err := a.candidates(ctx, count, holdings)
	if err != nil {
		return nil, err
	}
	for _, c := range candidates {
		container, err := containerFor(c, a.cfg, a.cfg.GPUs.GPUs())
		if err == nil {
			err = a.checkSpec(c.pod)
		}
		if err != nil {
			a.refuse(ctx, c, err)
			if holdings == nil {
				return nil, fmt.Errorf("%w; without the kubelet's list of the pods it admits, the container being admitted on node %s may be that pod's, so no other pod's assignment is served to it",
					err, a.cfg.NodeName)
			}
			reasons = append(reasons, err.Error())
			continue
		}
		response, err := a.serve(ctx, c, container)
		if err != nil {
			if last || !apierrors.IsConflict(err) {
				a.fail(ctx, c, err)
			}
			return nil, err
		}
		return response, nil
	}
	return nil, noTargetError(a.cfg.NodeName, count, reasons)
}

// kubeletHoldings asks the kubelet which pods it holds; nil when it cannot
// tell, which is logged once per change of error.
func (a *VGPU) kubeletHoldings(ctx context.Context) podresources.Holdings {
	if a.cfg.KubeletPods == nil {
		return nil
	}
	holdings, err := a.cfg.KubeletPods.Holdings(ctx, string(a.cfg.Names.Count))
	if err != nil {
		if msg := err.Error(); msg != a.holdingsErr {
			a.holdingsErr = msg
			klog.ErrorS(err, "Cannot ask the kubelet which pods it admits; serving the earliest bound pod instead", "node", a.cfg.NodeName)
		}
		return nil
	}
	a.holdingsErr = ""
	return holdings
}

// candidates lists the pods that can be the one kubelet is admitting, most
// likely first (findCandidates): from the kubelet's own list of its pods
// (holdings) when it could be asked, else from the pods' annotations alone.
//
// Without the kubelet's list, the earliest bound candidate is not the one
// when kubelet rejected it without calling Allocate: it does so for want of
// healthy devices while this plugin was away (kubelet or plugin restarting,
// re-registering) and then admits the next pod. The rejected pod stays
// Pending here until kubelet's Failed status reaches the API server, and
// serving its assignment would hand the admitted container another pod's
// GPUs and limits. So while another candidate waits too, nothing is served
// until rejectionSettle after the kubelet last received a device list:
// kubelet's status takes a rejected pod out by then. This costs at most
// rejectionSettle once per (re-)registration or health change, and nothing
// in steady state.
func (a *VGPU) candidates(ctx context.Context, count int, holdings podresources.Holdings) ([]candidate, []string, error) {
	advertised := a.cfg.Advertised()
	settled := advertised.Add(a.settle)
	for {
		pods, err := listNodePods(ctx, a.client, a.cfg.NodeName)
		if err != nil {
			return nil, nil, err
		}
		candidates, reasons := findCandidates(pods, a.cfg, count, holdings)
		// The kubelet's list never holds a pod it rejected, so there is
		// nothing to wait for. The bind time is the API server's clock and the
		// advertisement the node's: they are not compared.
		if holdings != nil || len(candidates) < 2 || !time.Now().Before(settled) {
			return candidates, reasons, nil
		}
		klog.V(4).InfoS("Waiting for a rejection by the kubelet before serving the earliest bound pod",
			"pod", klog.KObj(candidates[0].pod), "advertised", advertised, "until", settled)
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(rejectionPoll):
		}
	}
}

// checkSpec refuses a pod whose containers set, in env or possibly through
// envFrom, the variables that choose the GPUs and HAMi-core's limits, or
// mount a volume over the paths that load HAMi-core or set its limits: the
// kubelet lays a container's own env and mounts over this plugin's answer,
// so the answer would not hold. The chart's admission policy refuses the
// same pods at creation; this holds where it is not installed.
func (a *VGPU) checkSpec(pod *corev1.Pod) error {
	policy := vgpu.EnvPolicy{AllowDisableControl: a.cfg.AllowDisableControl, EnvFrom: a.cfg.EnvFrom}
	if err := policy.CheckPod(pod); err != nil {
		return err
	}
	return vgpu.CheckMounts(pod)
}

// serve builds the container's response, prepares the host, and records
// on the pod that the container was served.
func (a *VGPU) serve(ctx context.Context, c candidate, container *corev1.Container) (*pluginapi.ContainerAllocateResponse, error) {
	pod := c.pod
	response, err := containerResponse(a.cfg, string(pod.UID), container, c.devices(), a.cfg.GPUs.GPUs(), a.newCacheName())
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := prepareHost(a.cfg, string(pod.UID), container, response.Envs); err != nil {
		return nil, fmt.Errorf("pod %s/%s container %q: %w", pod.Namespace, pod.Name, container.Name, err)
	}
	if c.again {
		klog.InfoS("Allocated vGPUs again: the kubelet asks for a container served before (it restarted, or lost the answer)",
			"pod", klog.KObj(pod), "container", container.Name, "entry", c.entry, "gpus", response.Envs[vgpu.EnvVisibleDevices])
		return response, nil
	}
	annotations, complete, err := servedAnnotations(c)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := patchPod(ctx, a.client, pod, pod.ResourceVersion, annotations); err != nil {
		return nil, err
	}
	if complete {
		a.releaseLock(ctx)
	}
	klog.InfoS("Allocated vGPUs", "pod", klog.KObj(pod), "container", container.Name, "entry", c.entry,
		"gpus", response.Envs[vgpu.EnvVisibleDevices], "complete", complete)
	return response, nil
}

// EventReasonRefused is the reason of the Warning Event on a pod whose
// vGPU assignment is refused.
const EventReasonRefused = "VGPUAssignmentRefused"

// refuse ends a candidate's hand-off without serving it, as fail does, and
// says why on the pod.
func (a *VGPU) refuse(ctx context.Context, c candidate, err error) {
	a.cfg.Recorder.Event(c.pod, corev1.EventTypeWarning, EventReasonRefused, err.Error())
	a.fail(ctx, c, err)
}

// fail ends the pod's hand-off after err. It is best effort: the error
// goes back to kubelet either way.
func (a *VGPU) fail(ctx context.Context, c candidate, err error) {
	klog.ErrorS(err, "Allocate failed; marking the pod's vGPU hand-off failed", "pod", klog.KObj(c.pod), "entry", c.entry)
	if err := patchPod(ctx, a.client, c.pod, "", failedAnnotations()); err != nil {
		klog.ErrorS(err, "Cannot mark the pod's vGPU hand-off failed", "pod", klog.KObj(c.pod))
	}
	a.releaseLock(ctx)
}
