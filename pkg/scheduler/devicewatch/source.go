// Package devicewatch serves the scheduler the vGPU device configuration (the "nvidia:"
// section of the device ConfigMap's device-config.yaml, vgpu.NvidiaConfig): the resource
// names in force and the known MIG geometries.
//
// Which ConfigMap holds it is resolved as the device plugin resolves it
// (vgpu.FindDeviceConfig): the one named, then, for the default name, the same name in the
// fallback namespace, then the shipped defaults. A Source watches every ConfigMap of that
// list, and only those (a field selector on each name in its namespace), and resolves again
// whenever one changes, so a lookup costs a lock and no API call.
//
//   - No ConfigMap: the shipped defaults (vgpu.DefaultNvidiaConfig).
//   - A ConfigMap that does not parse: the last good configuration stays (the defaults when
//     there was none); the reason is logged once per resourceVersion and recorded as a
//     Warning Event on the ConfigMap.
//
// Which ConfigMap is in force: deviceshare's component selects the one the scheduler
// configuration names (Select), at start and after every reload, outside any session;
// sessions and the cache's deriver read the configuration in use (InUse), the default
// ConfigMap's until something is selected. A change of that configuration, or of which
// ConfigMap is in use, calls the OnChange function, so that state derived from the old names
// can be derived again.
package devicewatch

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// InvalidReason is the reason of the Warning Event recorded on a ConfigMap that is rejected.
const InvalidReason = "InvalidDeviceConfig"

// syncTimeout bounds how long the first Select of a ConfigMap waits for its first read. A
// scheduler that went on without it would read vGPU requests under the wrong names; one
// that waits longer than this would hold up start-up (or a reload) while the API server
// cannot answer.
const syncTimeout = 10 * time.Second

// Key names a device ConfigMap.
type Key = vgpu.ConfigMapRef

// DefaultKey is the ConfigMap upstream's components read: vgpu.DeviceConfigMapName in
// vgpu.DefaultConfigNamespace.
func DefaultKey() Key { return vgpu.DefaultDeviceConfigMap() }

func ref(k Key) klog.ObjectRef { return klog.KRef(k.Namespace, k.Name) }

// Source serves the device configuration of ConfigMaps by Key. Its methods are safe for
// concurrent use.
type Source struct {
	// client is nil for a static Source, which serves static for every Key.
	client   kubernetes.Interface
	static   vgpu.NvidiaConfig
	recorder record.EventRecorder

	mu sync.Mutex
	// watches are the ConfigMaps read, one watch each.
	watches map[Key]*configMapWatch
	// resolved are the Keys selected so far, each resolved over its list of ConfigMaps.
	resolved map[Key]*resolution
	inUse    Key
	onChange func()
}

// configMapWatch is the watch of one ConfigMap.
type configMapWatch struct {
	store  cache.Store
	synced cache.InformerSynced
}

// resolution is the configuration in force for one selected Key. Its fields other than key
// and from are guarded by Source.mu.
type resolution struct {
	key Key
	// from are the ConfigMaps looked at (vgpu.DeviceConfigMaps).
	from   []Key
	config vgpu.NvidiaConfig
	// reported is the ConfigMap (namespace/name@resourceVersion) rejected last.
	reported string
}

// NewSource is a Source that reads ConfigMaps with client. recorder, when not nil, records
// the Events on rejected ConfigMaps.
func NewSource(client kubernetes.Interface, recorder record.EventRecorder) *Source {
	return &Source{client: client, recorder: recorder, watches: map[Key]*configMapWatch{},
		resolved: map[Key]*resolution{}, inUse: DefaultKey()}
}

// Static is a Source that serves c for every ConfigMap and reads nothing: for a scheduler
// without an API server, such as benchmarks and tests.
func Static(c vgpu.NvidiaConfig) *Source {
	return &Source{static: c, inUse: DefaultKey()}
}

// OnChange sets the function called, outside any lock, after the configuration in use
// changed.
func (s *Source) OnChange(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = f
}

// Select makes the configuration of the ConfigMap key names the one in use and returns it.
// The first Select of a key starts its watches, which end with ctx, and waits (up to
// syncTimeout) for their first read. It is for the program's set-up and configuration
// reloads, never for a scheduling session.
func (s *Source) Select(ctx context.Context, key Key) vgpu.NvidiaConfig {
	if s.client == nil {
		return s.static
	}
	s.mu.Lock()
	r, started := s.resolutionFor(ctx, key)
	var synced []cache.InformerSynced
	for _, k := range r.from {
		synced = append(synced, s.watches[k].synced)
	}
	s.mu.Unlock()
	if started {
		wait, cancel := context.WithTimeout(ctx, syncTimeout)
		if !cache.WaitForCacheSync(wait.Done(), synced...) {
			klog.ErrorS(nil, "Device ConfigMap not read in time; using the last good configuration", "configMap", ref(key), "timeout", syncTimeout)
		}
		cancel()
		s.resolve(r)
	}

	s.mu.Lock()
	changed := s.inUse != key
	s.inUse = key
	c, notify := r.config, s.onChange
	s.mu.Unlock()
	if changed {
		klog.InfoS("Device ConfigMap in use", "configMap", ref(key), "resourceNames", c.ResourceNames())
		if notify != nil {
			notify()
		}
	}
	return c
}

// InUse returns the configuration in use (see the package comment). It never waits: until
// the ConfigMap is read it is the shipped defaults, and OnChange tells when that changes.
func (s *Source) InUse() vgpu.NvidiaConfig {
	if s.client == nil {
		return s.static
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.resolved[s.inUse]; ok {
		return r.config
	}
	return vgpu.DefaultNvidiaConfig()
}

// resolutionFor returns the key's resolution, starting the watches of its ConfigMaps when
// it is new (started). Called under mu.
func (s *Source) resolutionFor(ctx context.Context, key Key) (r *resolution, started bool) {
	if r, ok := s.resolved[key]; ok {
		return r, false
	}
	r = &resolution{key: key, from: vgpu.DeviceConfigMaps(key), config: vgpu.DefaultNvidiaConfig()}
	s.resolved[key] = r
	for _, k := range r.from {
		if _, ok := s.watches[k]; !ok {
			s.watches[k] = s.watch(ctx, k)
		}
	}
	return r, true
}

// watch starts watching one ConfigMap until ctx ends. Every change resolves again the keys
// whose list holds it.
func (s *Source) watch(ctx context.Context, key Key) *configMapWatch {
	configMaps := s.client.CoreV1().ConfigMaps(key.Namespace)
	only := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
	}
	changed := func() { s.resolveAll(key) }
	// The client says whether it streams watch-list's initial events (a fake one does not,
	// and a reflector waiting for their bookmark would not sync), as generated informers do.
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				only(&o)
				return configMaps.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				only(&o)
				return configMaps.Watch(ctx, o)
			},
		}, s.client),
		ObjectType: &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { changed() },
			UpdateFunc: func(any, any) { changed() },
			DeleteFunc: func(any) { changed() },
		},
	})
	go controller.Run(ctx.Done())
	return &configMapWatch{store: store, synced: controller.HasSynced}
}

// resolveAll resolves again every selected key whose list holds the ConfigMap.
func (s *Source) resolveAll(changed Key) {
	s.mu.Lock()
	var affected []*resolution
	for _, r := range s.resolved {
		for _, k := range r.from {
			if k == changed {
				affected = append(affected, r)
			}
		}
	}
	s.mu.Unlock()
	for _, r := range affected {
		s.resolve(r)
	}
}

// get reads a watched ConfigMap from its watch's store (vgpu.ConfigMapGetter).
func (s *Source) get(key Key) (*corev1.ConfigMap, error) {
	notFound := apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	w, ok := s.watches[key]
	if !ok {
		return nil, notFound
	}
	obj, exists, err := w.store.GetByKey(key.Namespace + "/" + key.Name)
	if err != nil {
		return nil, err
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !exists || !ok {
		return nil, notFound
	}
	return cm, nil
}

// resolve works out the key's configuration from what its watches hold: the configuration
// found, else (a ConfigMap that does not parse) a report and the last good one.
func (s *Source) resolve(r *resolution) {
	s.mu.Lock()
	found, err := vgpu.FindDeviceConfig(r.key, s.get)
	if err != nil {
		s.mu.Unlock()
		s.reject(r, err)
		return
	}
	changed := !reflect.DeepEqual(r.config, found.Config)
	r.config = found.Config
	notify := s.onChange
	if !changed || s.inUse != r.key {
		notify = nil
	}
	s.mu.Unlock()
	if changed {
		from := "defaults"
		if found.From != (Key{}) {
			from = found.From.String()
		}
		klog.InfoS("Device configuration changed", "configMap", ref(r.key), "from", from, "resourceNames", found.Config.ResourceNames())
	}
	if notify != nil {
		notify()
	}
}

// reject reports a ConfigMap that does not parse, once per resourceVersion.
func (s *Source) reject(r *resolution, err error) {
	var bad *vgpu.ConfigMapError
	if !errors.As(err, &bad) {
		klog.ErrorS(err, "Device ConfigMap unreadable; keeping the last good configuration", "configMap", ref(r.key))
		return
	}
	cm := bad.ConfigMap
	s.mu.Lock()
	id := cm.Namespace + "/" + cm.Name + "@" + cm.ResourceVersion
	repeated := r.reported == id
	r.reported = id
	s.mu.Unlock()
	if repeated {
		return
	}
	klog.ErrorS(err, "Device ConfigMap rejected; keeping the last good configuration", "configMap", klog.KObj(cm),
		"resourceVersion", cm.ResourceVersion)
	if s.recorder != nil {
		s.recorder.Eventf(cm, corev1.EventTypeWarning, InvalidReason, "%v; the scheduler keeps its last good configuration", err)
	}
}
