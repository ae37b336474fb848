// Package devicewatch serves the scheduler the vGPU device configuration (the "nvidia:"
// section of the device ConfigMap's device-config.yaml, vgpu.NvidiaConfig): the resource
// names in force and the known MIG geometries.
//
// A Source watches each ConfigMap it is asked for, and only that one: a field selector on
// its name in its namespace, started the first time the (namespace, name) is asked for. It
// keeps the last configuration that parsed, so lookups cost a map read and no API call.
//
//   - No ConfigMap: the shipped defaults (vgpu.DefaultNvidiaConfig).
//   - A ConfigMap that does not parse: the last good configuration stays (the defaults when
//     there was none); the reason is logged once per resourceVersion and recorded as a
//     Warning Event on the ConfigMap.
//
// Which ConfigMap is in force: the deviceshare plugin asks for the one its arguments name at
// every session (Use); the cache's deriver, which sees no arguments, follows the one asked
// for last (InUse), the default one until a session has asked. A change of that
// configuration, or of which ConfigMap is in use, calls the OnChange function, so that
// state derived from the old names can be derived again.
package devicewatch

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// InvalidReason is the reason of the Warning Event recorded on a ConfigMap that is rejected.
const InvalidReason = "InvalidDeviceConfig"

// syncTimeout bounds how long the first Use of a ConfigMap waits for its first read. A
// session that went on without it would read vGPU requests under the wrong names; one that
// waits longer than this would hold up scheduling while the API server cannot answer.
const syncTimeout = 10 * time.Second

// Key names a device ConfigMap.
type Key struct {
	Namespace, Name string
}

// DefaultKey is the ConfigMap upstream's components read: vgpu.DeviceConfigMapName in
// vgpu.DefaultConfigNamespace.
func DefaultKey() Key {
	return Key{Namespace: vgpu.DefaultConfigNamespace, Name: vgpu.DeviceConfigMapName}
}

func (k Key) String() string { return k.Namespace + "/" + k.Name }

func (k Key) ref() klog.ObjectRef { return klog.KRef(k.Namespace, k.Name) }

// Source serves the device configuration of ConfigMaps by Key. Its methods are safe for
// concurrent use.
type Source struct {
	// client is nil for a static Source, which serves static for every Key.
	client   kubernetes.Interface
	static   vgpu.NvidiaConfig
	ctx      context.Context
	recorder record.EventRecorder

	mu       sync.Mutex
	watches  map[Key]*watch
	inUse    Key
	onChange func()
}

// watch is the state of one ConfigMap; its fields other than key and synced are guarded by
// Source.mu.
type watch struct {
	key    Key
	synced cache.InformerSynced
	// waited is set once a Use has waited for the first read, so that an API server that
	// cannot answer delays one session, not all.
	waited bool
	config vgpu.NvidiaConfig
	// reported is the resourceVersion of the last ConfigMap rejected.
	reported string
}

// NewSource is a Source that reads ConfigMaps with client; its watches end with ctx.
// recorder, when not nil, records the Events on rejected ConfigMaps.
func NewSource(ctx context.Context, client kubernetes.Interface, recorder record.EventRecorder) *Source {
	return &Source{client: client, ctx: ctx, recorder: recorder, watches: map[Key]*watch{}, inUse: DefaultKey()}
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

// Use returns the configuration of the ConfigMap key names and makes it the one in use.
// The first Use of a key waits (up to syncTimeout) for the ConfigMap's first read.
func (s *Source) Use(key Key) vgpu.NvidiaConfig {
	if s.client == nil {
		return s.static
	}
	s.mu.Lock()
	w := s.watchFor(key)
	wait := !w.waited
	w.waited = true
	s.mu.Unlock()
	if wait {
		ctx, cancel := context.WithTimeout(s.ctx, syncTimeout)
		if !cache.WaitForCacheSync(ctx.Done(), w.synced) {
			klog.ErrorS(nil, "Device ConfigMap not read in time; using the last good configuration", "configMap", key.ref(), "timeout", syncTimeout)
		}
		cancel()
	}

	s.mu.Lock()
	changed := s.inUse != key
	s.inUse = key
	c, notify := w.config, s.onChange
	s.mu.Unlock()
	if changed {
		klog.InfoS("Device ConfigMap in use", "configMap", key.ref(), "resourceNames", c.ResourceNames())
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
	return s.watchFor(s.inUse).config
}

// watchFor returns the key's watch, starting it when it is new. Called under mu.
func (s *Source) watchFor(key Key) *watch {
	if w, ok := s.watches[key]; ok {
		return w
	}
	w := &watch{key: key, config: vgpu.DefaultNvidiaConfig()}
	s.watches[key] = w
	informer := coreinformers.NewFilteredConfigMapInformer(s.client, key.Namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
		})
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { s.read(w, obj) },
		UpdateFunc: func(_, obj interface{}) { s.read(w, obj) },
		DeleteFunc: func(interface{}) { s.set(w, vgpu.DefaultNvidiaConfig()) },
	})
	if err != nil {
		// Only an informer already stopped refuses a handler, and this one has not started.
		panic(fmt.Sprintf("ConfigMap %s: %v", key, err))
	}
	w.synced = reg.HasSynced
	go informer.Run(s.ctx.Done())
	return w
}

// read applies a ConfigMap the watch delivered: its configuration when it parses, else a
// report and the last good one.
func (s *Source) read(w *watch, obj interface{}) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	c, err := parse(cm)
	if err == nil {
		s.set(w, c)
		return
	}
	s.mu.Lock()
	repeated := w.reported == cm.ResourceVersion
	w.reported = cm.ResourceVersion
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

// parse reads the configuration a ConfigMap holds; the error names the ConfigMap.
func parse(cm *corev1.ConfigMap) (vgpu.NvidiaConfig, error) {
	data, ok := cm.Data[vgpu.DeviceConfigKey]
	if !ok {
		return vgpu.NvidiaConfig{}, fmt.Errorf("ConfigMap %s/%s: no key %s", cm.Namespace, cm.Name, vgpu.DeviceConfigKey)
	}
	c, err := vgpu.ParseDeviceConfig([]byte(data))
	if err != nil {
		return vgpu.NvidiaConfig{}, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return c, nil
}

// set makes c the watch's configuration and tells OnChange when it changed the one in use.
func (s *Source) set(w *watch, c vgpu.NvidiaConfig) {
	s.mu.Lock()
	changed := !reflect.DeepEqual(w.config, c)
	w.config = c
	notify := s.onChange
	if !changed || s.inUse != w.key {
		notify = nil
	}
	s.mu.Unlock()
	if changed {
		klog.InfoS("Device configuration changed", "configMap", w.key.ref(), "resourceNames", c.ResourceNames())
	}
	if notify != nil {
		notify()
	}
}
