package vgpu

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ConfigMapRef names a ConfigMap.
type ConfigMapRef struct {
	Namespace, Name string
}

func (r ConfigMapRef) String() string { return r.Namespace + "/" + r.Name }

// DefaultDeviceConfigMap is the device ConfigMap both programs read unless told otherwise:
// DeviceConfigMapName in DefaultConfigNamespace.
func DefaultDeviceConfigMap() ConfigMapRef {
	return ConfigMapRef{Namespace: DefaultConfigNamespace, Name: DeviceConfigMapName}
}

// DeviceConfigMaps lists where the device configuration named by ref is looked for, first
// choice first: ref itself and, for the default ConfigMap only, one of the same name in
// FallbackConfigNamespace (where upstream's device plugin looks next). The first that
// exists is in force; with none, the shipped defaults are. A ConfigMap named otherwise (the
// scheduler's deviceshare arguments can) has no fallback.
func DeviceConfigMaps(ref ConfigMapRef) []ConfigMapRef {
	if ref != DefaultDeviceConfigMap() {
		return []ConfigMapRef{ref}
	}
	return []ConfigMapRef{ref, {Namespace: FallbackConfigNamespace, Name: ref.Name}}
}

// ConfigMapGetter returns one ConfigMap, or an error that apierrors.IsNotFound recognises
// when there is none. A program passes its client's Get, or a read of its informer's store.
type ConfigMapGetter func(ref ConfigMapRef) (*corev1.ConfigMap, error)

// FoundDeviceConfig is the device configuration FindDeviceConfig resolved.
type FoundDeviceConfig struct {
	Config NvidiaConfig
	// From is the ConfigMap it came from; the zero ConfigMapRef when there is none and
	// Config holds the shipped defaults.
	From ConfigMapRef
	// Skipped is why an earlier choice could not be read, when a later one is in force.
	Skipped error
}

// ConfigMapError is a device ConfigMap that exists but cannot be used.
type ConfigMapError struct {
	// ConfigMap is the object as read.
	ConfigMap *corev1.ConfigMap
	Err       error
}

func (e *ConfigMapError) Error() string {
	return fmt.Sprintf("ConfigMap %s/%s: %v", e.ConfigMap.Namespace, e.ConfigMap.Name, e.Err)
}

func (e *ConfigMapError) Unwrap() error { return e.Err }

// FindDeviceConfig resolves the device configuration named by ref through get, in the order
// of DeviceConfigMaps. A ConfigMap that exists but does not parse is an error
// (*ConfigMapError): falling back past it would put other resource names in force than the
// ones its owner wrote. One that cannot be read for another reason is skipped (Skipped says
// why) when a later one exists; with no later one it is an error, because defaults might
// differ from what the unreadable one says.
func FindDeviceConfig(ref ConfigMapRef, get ConfigMapGetter) (FoundDeviceConfig, error) {
	var unreadable error
	var absent []string // namespaces of the later choices found missing
	for _, at := range DeviceConfigMaps(ref) {
		cm, err := get(at)
		switch {
		case apierrors.IsNotFound(err):
			if unreadable != nil {
				absent = append(absent, at.Namespace)
			}
			continue
		case err != nil && unreadable != nil:
			unreadable = fmt.Errorf("%w; ConfigMap %s: %w", unreadable, at, err)
			continue
		case err != nil:
			unreadable = fmt.Errorf("ConfigMap %s: %w", at, err)
			continue
		}
		c, err := DeviceConfigOf(cm)
		if err != nil {
			return FoundDeviceConfig{}, err
		}
		return FoundDeviceConfig{Config: c, From: at, Skipped: unreadable}, nil
	}
	if unreadable != nil && len(absent) > 0 {
		return FoundDeviceConfig{}, fmt.Errorf("%w, and there is none in namespace %s", unreadable, strings.Join(absent, ", "))
	}
	if unreadable != nil {
		return FoundDeviceConfig{}, unreadable
	}
	return FoundDeviceConfig{Config: DefaultNvidiaConfig()}, nil
}

// DeviceConfigOf is the configuration a device ConfigMap holds under DeviceConfigKey; the
// error is a *ConfigMapError.
func DeviceConfigOf(cm *corev1.ConfigMap) (NvidiaConfig, error) {
	data, ok := cm.Data[DeviceConfigKey]
	if !ok {
		return NvidiaConfig{}, &ConfigMapError{ConfigMap: cm, Err: fmt.Errorf("no key %s", DeviceConfigKey)}
	}
	c, err := ParseDeviceConfig([]byte(data))
	if err != nil {
		return NvidiaConfig{}, &ConfigMapError{ConfigMap: cm, Err: err}
	}
	return c, nil
}
