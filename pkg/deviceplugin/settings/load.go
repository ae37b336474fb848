package settings

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"
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
	if deviceSource != sourceDefaults {
		c.DeviceSource = deviceSource
	}
	klog.InfoS("vGPU configuration in force", "node", src.Node, "deviceConfig", deviceSource, "nodeConfig", path, "config", c.String())
	return c, nil
}

// sourceDefaults is the device configuration's source when there is no device ConfigMap.
const sourceDefaults = "defaults"

// loadDeviceConfig reads device-config.yaml from the device ConfigMap, looked for where
// vgpu.FindDeviceConfig looks (the scheduler resolves it the same way, so both read the same
// resource names). The second result names where the configuration came from.
func loadDeviceConfig(ctx context.Context, get ConfigMapGetter) (vgpu.NvidiaConfig, string, error) {
	found, err := vgpu.FindDeviceConfig(vgpu.DefaultDeviceConfigMap(), func(ref vgpu.ConfigMapRef) (*corev1.ConfigMap, error) {
		return get(ctx, ref.Namespace, ref.Name)
	})
	if err != nil {
		return vgpu.NvidiaConfig{}, "", err
	}
	if found.From == (vgpu.ConfigMapRef{}) {
		klog.InfoS("No device ConfigMap; using the shipped defaults", "configMaps", vgpu.DeviceConfigMaps(vgpu.DefaultDeviceConfigMap()))
		return found.Config, sourceDefaults, nil
	}
	source := "ConfigMap " + found.From.String()
	if found.Skipped != nil {
		klog.ErrorS(found.Skipped, "Using a later choice of device ConfigMap", "configMap", found.From.String())
	}
	return found.Config, source, nil
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
