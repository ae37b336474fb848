package settings

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// DefaultNodeConfigPath is where the node ConfigMap is mounted in the
// device plugin's container.
const DefaultNodeConfigPath = "/config/" + vgpu.NodeConfigKey

// ConfigMapGetter fetches one ConfigMap; it returns an error that
// apierrors.IsNotFound recognises when there is none.
type ConfigMapGetter func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

// ConfigMapGetterFor gets ConfigMaps one by one from the API server: the
// device plugin reads only the one it needs and watches nothing.
func ConfigMapGetterFor(client kubernetes.Interface) ConfigMapGetter {
	return func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
		return client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}

// Sources are where Load finds the configuration.
type Sources struct {
	// Node is the node the plugin runs on.
	Node string
	// Flags are the parsed command-line flags; nil when there are none.
	Flags *Flags
	// GetConfigMap fetches the device ConfigMap.
	GetConfigMap ConfigMapGetter
	// NodeConfigPath is config.json; empty means DefaultNodeConfigPath.
	// A missing file means no node overrides.
	NodeConfigPath string
}

// Load reads the device ConfigMap and the node config file and resolves
// the node's configuration (see the package comment for the precedence).
// Errors name the ConfigMap, file or flag and the field that is wrong.
func Load(ctx context.Context, src Sources) (Config, error) {
	device, deviceSource, err := loadDeviceConfig(ctx, src.GetConfigMap)
	if err != nil {
		return Config{}, err
	}
	path := src.NodeConfigPath
	if path == "" {
		path = DefaultNodeConfigPath
	}
	nodeConfig, err := loadNodeConfig(path)
	if err != nil {
		return Config{}, err
	}
	c, err := Resolve(src.Node, device, src.Flags, nodeConfig)
	if err != nil {
		return Config{}, err
	}
	klog.InfoS("vGPU configuration in force", "node", src.Node, "deviceConfig", deviceSource, "nodeConfig", path, "config", c.String())
	return c, nil
}

// loadDeviceConfig reads device-config.yaml from the device ConfigMap in
// the default namespace, else in the fallback namespace, as upstream does.
// With no ConfigMap in either, the shipped defaults apply. The second
// result names where the configuration came from.
func loadDeviceConfig(ctx context.Context, get ConfigMapGetter) (vgpu.NvidiaConfig, string, error) {
	// unreadable is set when the default namespace could not be read for a
	// reason other than absence: then defaults must not be used, because
	// the scheduler may be reading resource names from that ConfigMap.
	var unreadable error
	for _, namespace := range []string{vgpu.DefaultConfigNamespace, vgpu.FallbackConfigNamespace} {
		source := namespace + "/" + vgpu.DeviceConfigMapName
		cm, err := get(ctx, namespace, vgpu.DeviceConfigMapName)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil && unreadable == nil:
			unreadable = fmt.Errorf("ConfigMap %s: %w", source, err)
			continue
		case err != nil:
			return vgpu.NvidiaConfig{}, "", fmt.Errorf("%w; ConfigMap %s: %w", unreadable, source, err)
		}
		if unreadable != nil {
			klog.ErrorS(unreadable, "Using the device ConfigMap of the fallback namespace", "configMap", source)
		}
		data, ok := cm.Data[vgpu.DeviceConfigKey]
		if !ok {
			return vgpu.NvidiaConfig{}, "", fmt.Errorf("ConfigMap %s: no key %s", source, vgpu.DeviceConfigKey)
		}
		device, err := vgpu.ParseDeviceConfig([]byte(data))
		if err != nil {
			return vgpu.NvidiaConfig{}, "", fmt.Errorf("ConfigMap %s: %w", source, err)
		}
		return device, "ConfigMap " + source, nil
	}
	if unreadable != nil {
		return vgpu.NvidiaConfig{}, "", fmt.Errorf("%w, and there is none in namespace %s", unreadable, vgpu.FallbackConfigNamespace)
	}
	klog.InfoS("No device ConfigMap; using the shipped defaults", "name", vgpu.DeviceConfigMapName,
		"namespaces", []string{vgpu.DefaultConfigNamespace, vgpu.FallbackConfigNamespace})
	return vgpu.DefaultNvidiaConfig(), "defaults", nil
}

// loadNodeConfig reads config.json; a missing file is an empty one (the
// node ConfigMap is optional).
func loadNodeConfig(path string) (vgpu.NodeConfigFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		klog.V(2).InfoS("No node config file; no per-node settings", "path", path)
		return vgpu.NodeConfigFile{}, nil
	}
	if err != nil {
		return vgpu.NodeConfigFile{}, fmt.Errorf("node config: %w", err)
	}
	file, err := vgpu.ParseNodeConfig(data)
	if err != nil {
		return vgpu.NodeConfigFile{}, fmt.Errorf("node config %s: %w", path, err)
	}
	return file, nil
}
