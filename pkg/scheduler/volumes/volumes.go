// Package volumes decides pods' volumes as kube-scheduler does, by running its volume plugins
// (k8s.io/kubernetes/pkg/scheduler/framework/plugins: volumerestrictions, nodevolumelimits,
// volumebinding, volumezone) at the points our scheduler has for them: once per task before
// its nodes are tried (PreFilter), per node (Filter), when a placement is made or undone in a
// session (Reserve, Unreserve), and in the bind worker before the Binding (PreBind, undone by
// Unreserve should the Binding fail). So a node a bound PV cannot reach, or in another zone,
// or at its CSI attach limit, is refused in kube-scheduler's words; a ReadWriteOncePod claim
// already in use refuses the pod; and a claim of a WaitForFirstConsumer class is matched to an
// available PersistentVolume that the chosen node can reach, or marked for provisioning there
// (volume.kubernetes.io/selected-node), the pod being bound only once
// kube-controller-manager's PV controller has bound it, within the bind timeout.
//
// The plugins are built, and their informers started, the first time a configuration switches
// a volume predicate on, and then live as long as the process: VolumeBinding's assume cache of
// PVs and PVCs must see every session's choices until the PV controller's own writes come back.
// So VolumeBinding's bind timeout (the predicates plugin's volumebinding.bindTimeoutSeconds)
// is that configuration's, as upstream Volcano builds the plugin once with the first session's
// arguments; a later configuration asking another is told so in the log, once.
package volumes

import (
	"context"
	"fmt"
	"sync"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumezone"

	// The feature gates the plugins consult, at Kubernetes v1.35's defaults.
	_ "k8s.io/kubernetes/pkg/features"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/api"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/framework"
)

// Source builds the plugins on first demand (an api.VolumeSource). It is the predicates
// plugin's framework.Component: Start attaches it to the scheduler cache's informers.
type Source struct {
	client kubernetes.Interface
	// ctx and factory are Start's: the plugins' informers are added to factory, the cache's,
	// and run until ctx ends.
	ctx     context.Context
	factory informers.SharedInformerFactory

	once    sync.Once
	plugins *plugins
	err     error

	// mu guards told: the last bind timeout asked for that the plugins do not have, which the
	// log has been told of.
	mu   sync.Mutex
	told time.Duration
}

var _ api.VolumeSource = (*Source)(nil)

// NewSource builds nothing yet: once started, the plugins are built over client when a
// configuration first asks for a volume predicate.
func NewSource(client kubernetes.Interface) *Source { return &Source{client: client} }

// Start makes the cache's informer factory the plugins', so that the pods and nodes
// VolumeBinding watches are the cache's informers; what the plugins add to it runs until ctx
// ends. Volumes is not called before: the scheduler loads its configuration once its
// components have started.
func (s *Source) Start(ctx context.Context, cache framework.ComponentCache) {
	s.ctx, s.factory = ctx, cache.Informers()
}

// Volumes returns the plugins checks switches on, building them (and starting their
// informers) the first time any is on, VolumeBinding waiting up to bindTimeout for the PV
// controller in PreBind. The timeout is the first build's: a different one later is logged,
// once, and not applied.
func (s *Source) Volumes(checks api.VolumeChecks, bindTimeout time.Duration) (api.VolumePlugins, error) {
	if !checks.Any() {
		return nil, nil
	}
	s.once.Do(func() {
		s.plugins, s.err = newPlugins(s.ctx, s.client, s.factory, bindTimeout)
		if s.err == nil {
			s.factory.Start(s.ctx.Done())
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	if bindTimeout != s.plugins.bindTimeout {
		s.tellTimeoutKept(bindTimeout)
	}
	return &Plugins{plugins: s.plugins, checks: checks}, nil
}

// tellTimeoutKept logs, once per value in a row, that the bind timeout asked for is not the
// one VolumeBinding was built with: plugins are built for every session, the log line is
// for the configuration.
func (s *Source) tellTimeoutKept(asked time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.told == asked {
		return
	}
	s.told = asked
	klog.InfoS("The predicates plugin's volumebinding.bindTimeoutSeconds changed; VolumeBinding keeps the one it was built with until the scheduler restarts, as upstream Volcano",
		"asked", asked, "kept", s.plugins.bindTimeout)
}

// plugins are kube-scheduler's volume plugins for the life of the process.
type plugins struct {
	binding *volumebinding.VolumeBinding
	zone    *volumezone.VolumeZone
	limits  *nodevolumelimits.CSILimits
	// handle builds a VolumeRestrictions for each placement attempt: it counts the claims in
	// use on the attempt's nodes.
	handle   handle
	features feature.Features
	synced   []toolscache.InformerSynced
	// bindTimeout is VolumeBinding's: how long its PreBind waits for the PV controller.
	bindTimeout time.Duration
}

func newPlugins(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, bindTimeout time.Duration) (*plugins, error) {
	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	h := newHandle(client, factory)
	binding, err := volumebinding.New(ctx, &config.VolumeBindingArgs{BindTimeoutSeconds: int64(bindTimeout / time.Second)}, h, fts)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's volume binding: %w", err)
	}
	zone, err := volumezone.New(ctx, nil, h, fts)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's volume zone: %w", err)
	}
	limits, err := nodevolumelimits.NewCSI(ctx, nil, h, fts)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's node volume limits: %w", err)
	}
	core, storage := factory.Core().V1(), factory.Storage().V1()
	return &plugins{
		binding: binding.(*volumebinding.VolumeBinding), zone: zone.(*volumezone.VolumeZone),
		limits: limits.(*nodevolumelimits.CSILimits), handle: h, features: fts, bindTimeout: bindTimeout,
		synced: []toolscache.InformerSynced{
			core.PersistentVolumes().Informer().HasSynced, core.PersistentVolumeClaims().Informer().HasSynced,
			storage.StorageClasses().Informer().HasSynced, storage.CSINodes().Informer().HasSynced,
			storage.CSIDrivers().Informer().HasSynced, storage.VolumeAttachments().Informer().HasSynced,
		},
	}, nil
}

// ready: the storage informers have their first lists. A scheduler that starts with a volume
// predicate on waits for them with the rest of its cache; one that a reload switches on waits
// here, its pods with volumes left pending until then.
func (p *plugins) ready() bool {
	for _, synced := range p.synced {
		if !synced() {
			return false
		}
	}
	return true
}
