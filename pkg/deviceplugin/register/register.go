// Package register publishes the node's GPUs to the scheduler in the
// node's annotations: vgpu.NodeDevicesAnnotation (the device list),
// vgpu.NodeMemoryFactorAnnotation (the MiB in one memory unit) and,
// with Options.LegacyHandshake, vgpu.NodeHandshakeAnnotation (the liveness
// handshake Volcano v1.13 to v1.14.2 and v1.15.0 need; see handshake.go).
//
// The loop is level-triggered: each pass reads the node from a cache of
// that one node, works out the annotations it should carry, and PATCHes
// only what differs. A pass with nothing to change makes no API call, so a
// node whose GPUs do not change costs the API server nothing (upstream
// re-wrote both annotations every 30 s on every node). A pass runs when a
// GPU's health changes (Trigger), when someone else changes the two
// annotations, every 30 s to pick up what NVML reports, and 5 s after a
// failure.
package register

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/nvml"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

const (
	// resyncPeriod is how often GPUs are re-read when nothing signals a
	// change, as upstream's registration loop does.
	resyncPeriod = 30 * time.Second
	// retryPeriod is how soon a failed pass is retried.
	retryPeriod = 5 * time.Second
)

// GPULister lists the node's GPUs with their current health; nvml.Backend
// implements it.
type GPULister interface {
	Devices() ([]nvml.GPU, error)
}

// Options configure a Registrar.
type Options struct {
	Client kubernetes.Interface
	// Config is the node's configuration; Config.Node names the node.
	Config settings.Config
	// GPUs lists the GPUs; those Config filters out are not published.
	GPUs GPULister
	// Clock is the real clock when nil.
	Clock clock.Clock
	// LegacyHandshake keeps vgpu.NodeHandshakeAnnotation answered for the
	// Volcano releases that require it (vgpu-device-plugin
	// --legacy-handshake). Off, the node carries no handshake: one found
	// there is removed (handshakeStep).
	LegacyHandshake bool
}

// Registrar keeps the node's vGPU annotations up to date.
type Registrar struct {
	client kubernetes.Interface
	cfg    settings.Config
	gpus   GPULister
	clock  clock.Clock
	legacy bool

	informers informers.SharedInformerFactory
	synced    cache.InformerSynced
	nodes     corelisters.NodeLister

	// trigger holds at most one pending request for a pass.
	trigger chan struct{}
	// lastAnswer is when this process last wrote the handshake, and
	// unseen the last write the cache may not show yet; only the loop
	// touches them.
	lastAnswer time.Time
	unseen     *unseenWrite
	patches    atomic.Uint64
}

// unseenWrite is a PATCH the node cache may not show yet. A pass that runs
// before the watch delivers the Registrar's own write (for a trigger that
// was already pending) would otherwise send the same PATCH again.
type unseenWrite struct {
	// before and after are the annotations this loop owns, as the cache
	// showed them when the PATCH was sent and as the PATCH left them.
	before, after map[string]string
	at            time.Time
}

// New returns a Registrar for opts.Config.Node. It watches only that node
// (a field selector on its name), never the cluster's nodes.
func New(opts Options) *Registrar {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	node := opts.Config.Node
	factory := informers.NewSharedInformerFactoryWithOptions(opts.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector(metav1.ObjectNameField, node).String()
		}))
	nodeInformer := factory.Core().V1().Nodes()
	r := &Registrar{
		client:    opts.Client,
		cfg:       opts.Config,
		gpus:      opts.GPUs,
		clock:     clk,
		legacy:    opts.LegacyHandshake,
		informers: factory,
		synced:    nodeInformer.Informer().HasSynced,
		nodes:     nodeInformer.Lister(),
		trigger:   make(chan struct{}, 1),
	}
	_, _ = nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { r.Trigger() },
		UpdateFunc: func(oldObj, newObj any) {
			// Other node updates (kubelet status, labels) cannot change
			// what this loop writes.
			oldNode, ok1 := oldObj.(*corev1.Node)
			newNode, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 || !maps.Equal(ownedAnnotations(oldNode), ownedAnnotations(newNode)) {
				r.Trigger()
			}
		},
	})
	return r
}

// Trigger asks for a pass now, e.g. after a GPU's health changed. It never
// blocks; requests made while one is pending are merged.
func (r *Registrar) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Patches is how many PATCHes of the node this Registrar has sent, failed
// ones included.
func (r *Registrar) Patches() uint64 {
	return r.patches.Load()
}

// PatchesMetricName is the counter PatchesCollector exposes.
const PatchesMetricName = "vgpu_device_plugin_node_patches_total"

// PatchesCollector exposes Patches as a Prometheus counter, so that the
// PATCH rate a node causes can be read off the metrics endpoint.
func (r *Registrar) PatchesCollector() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: PatchesMetricName,
		Help: "PATCH requests the device plugin sent to publish this node's GPU annotations, failed ones included.",
	}, func() float64 { return float64(r.Patches()) })
}

// Run keeps the annotations up to date until ctx is done.
func (r *Registrar) Run(ctx context.Context) error {
	r.informers.Start(ctx.Done())
	defer r.informers.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), r.synced) {
		return fmt.Errorf("node %s: cache not synced: %w", r.cfg.Node, ctx.Err())
	}
	klog.InfoS("Publishing GPUs in node annotations", "node", klog.KRef("", r.cfg.Node), "config", r.cfg.String())
	for {
		timer := r.clock.NewTimer(r.reconcile(ctx))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.trigger:
			timer.Stop()
		case <-timer.C():
		}
	}
}

// reconcile makes one pass and returns how long to wait before the next.
func (r *Registrar) reconcile(ctx context.Context) time.Duration {
	node, err := r.nodes.Get(r.cfg.Node)
	if err != nil {
		klog.ErrorS(err, "Cannot read the node to publish its GPUs", "node", klog.KRef("", r.cfg.Node))
		return retryPeriod
	}
	have := r.observed(node)
	next := resyncPeriod
	want := map[string]string{}

	devices, known, err := r.desiredDevices()
	if err != nil {
		klog.ErrorS(err, "Cannot read all GPUs; retrying", "node", klog.KObj(node))
		next = retryPeriod
	}
	if known && have[vgpu.NodeDevicesAnnotation] != devices {
		want[vgpu.NodeDevicesAnnotation] = devices
	}
	// The scheduler turns context reserves from MiB into units with it.
	if factor := vgpu.FormatMemoryFactor(r.cfg.Device.GPUMemoryFactor); known && have[vgpu.NodeMemoryFactorAnnotation] != factor {
		want[vgpu.NodeMemoryFactorAnnotation] = factor
	}

	now := r.clock.Now()
	current, present := have[vgpu.NodeHandshakeAnnotation]
	var remove []string
	switch action, wait := handshakeStep(r.legacy, current, present, r.lastAnswer, now); {
	// An answer that is not due yet still rides along with a PATCH that
	// goes out anyway: it costs no extra request.
	case action == handshakeWrite && (wait == 0 || len(want) > 0):
		want[vgpu.NodeHandshakeAnnotation] = vgpu.FormatReported(now)
	case action == handshakeWrite:
		next = min(next, wait)
	case action == handshakeRemove:
		remove = append(remove, vgpu.NodeHandshakeAnnotation)
	}
	if len(want) == 0 && len(remove) == 0 {
		return next
	}
	if err := r.patch(ctx, node, want, remove); err != nil {
		klog.ErrorS(err, "Cannot update the node's vGPU annotations; retrying", "node", klog.KObj(node))
		return retryPeriod
	}
	if _, ok := want[vgpu.NodeHandshakeAnnotation]; ok {
		r.lastAnswer = now
	}
	after := maps.Clone(have)
	maps.Copy(after, want)
	for _, key := range remove {
		delete(after, key)
	}
	r.unseen = &unseenWrite{before: ownedAnnotations(node), after: after, at: now}
	return next
}

// observed returns the annotations this loop owns as the node carries
// them: the cache's, or the last PATCH's while the cache still shows the
// values from before it. The cache is trusted again once it changes, or
// after a resync period in case someone wrote the old values back.
func (r *Registrar) observed(node *corev1.Node) map[string]string {
	current := ownedAnnotations(node)
	if w := r.unseen; w != nil {
		if maps.Equal(current, w.before) && r.clock.Since(w.at) < resyncPeriod {
			return w.after
		}
		r.unseen = nil
	}
	return current
}

// desiredDevices returns the device annotation the node should carry;
// known is false when it cannot be worked out. When some GPUs cannot be
// read the others are still published, with an error so that the pass is
// retried soon: a GPU that stays unreadable is gone for the scheduler too.
// When none can be read the annotation is left as it is rather than
// emptied.
func (r *Registrar) desiredDevices() (value string, known bool, err error) {
	gpus, listErr := r.gpus.Devices()
	if listErr != nil && len(gpus) == 0 {
		return "", false, listErr
	}
	value, err = NodeDevices(r.cfg, r.cfg.RegisteredGPUs(gpus))
	if err != nil {
		return "", false, err
	}
	return value, true, listErr
}

// patch merges the annotations into the node's and deletes those named in
// remove.
func (r *Registrar) patch(ctx context.Context, node *corev1.Node, annotations map[string]string, remove []string) error {
	merge := make(map[string]*string, len(annotations)+len(remove))
	for key, value := range annotations {
		merge[key] = &value
	}
	for _, key := range remove {
		merge[key] = nil // JSON null deletes the key
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": merge}})
	if err != nil {
		return err
	}
	_, err = r.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, body, metav1.PatchOptions{})
	r.patches.Add(1)
	if err != nil {
		return fmt.Errorf("patch node %s: %w", node.Name, err)
	}
	was := node.Annotations[vgpu.NodeHandshakeAnnotation]
	_, factorChanged := annotations[vgpu.NodeMemoryFactorAnnotation]
	switch _, changed := annotations[vgpu.NodeDevicesAnnotation]; {
	case changed || factorChanged:
		klog.InfoS("Published the node's GPUs", "node", klog.KObj(node), "devices", annotations[vgpu.NodeDevicesAnnotation],
			"memoryFactor", annotations[vgpu.NodeMemoryFactorAnnotation])
	case len(annotations) > 0:
		klog.V(4).InfoS("Answered the scheduler's handshake", "node", klog.KObj(node), "was", was)
	}
	if len(remove) > 0 {
		if h, err := vgpu.ParseHandshake(was); err != nil || h.State != vgpu.HandshakeReported {
			// Only a scheduler writes these: one of the releases that need
			// the handshake may still be running.
			klog.InfoS("Removed a Volcano scheduler's handshake from the node; Volcano releases up to v1.14.2, and v1.15.0, "+
				"use the node's GPUs only with vgpu-device-plugin --legacy-handshake", "node", klog.KObj(node), "was", was)
		} else {
			klog.V(2).InfoS("Removed the handshake annotation (--legacy-handshake is off)", "node", klog.KObj(node), "was", was)
		}
	}
	return nil
}

// ownedAnnotations returns the annotations this loop writes, those the
// node has.
func ownedAnnotations(node *corev1.Node) map[string]string {
	owned := make(map[string]string, 3)
	for _, key := range []string{vgpu.NodeDevicesAnnotation, vgpu.NodeMemoryFactorAnnotation, vgpu.NodeHandshakeAnnotation} {
		if value, ok := node.Annotations[key]; ok {
			owned[key] = value
		}
	}
	return owned
}
