package vgpu

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeviceConfigMaps(t *testing.T) {
	got := DeviceConfigMaps(DefaultDeviceConfigMap())
	want := []ConfigMapRef{{"kube-system", "volcano-vgpu-device-config"}, {"volcano-system", "volcano-vgpu-device-config"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("DeviceConfigMaps(default) = %v, want %v", got, want)
	}
	named := ConfigMapRef{Namespace: "gpu-system", Name: "slices"}
	if got := DeviceConfigMaps(named); len(got) != 1 || got[0] != named {
		t.Errorf("DeviceConfigMaps(%v) = %v, want it alone", named, got)
	}
}

// configMaps serves the ConfigMaps it holds by namespace; a namespace mapped to an error
// fails with it.
type configMaps struct {
	split map[string]string
	fail  map[string]error
}

func (c configMaps) get(ref ConfigMapRef) (*corev1.ConfigMap, error) {
	if err := c.fail[ref.Namespace]; err != nil {
		return nil, err
	}
	split, ok := c.split[ref.Namespace]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), ref.Name)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		Data: map[string]string{DeviceConfigKey: "nvidia:\n  deviceSplitCount: " + split + "\n"}}, nil
}

func TestFindDeviceConfig(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("configmaps"), DeviceConfigMapName, nil)
	tests := []struct {
		name      string
		cms       configMaps
		wantSplit int32
		wantFrom  string
		wantErr   string
	}{
		{name: "none: defaults", wantSplit: DefaultNvidiaConfig().DeviceSplitCount},
		{name: "first choice", cms: configMaps{split: map[string]string{"kube-system": "3", "volcano-system": "4"}},
			wantSplit: 3, wantFrom: "kube-system/volcano-vgpu-device-config"},
		{name: "fallback", cms: configMaps{split: map[string]string{"volcano-system": "4"}},
			wantSplit: 4, wantFrom: "volcano-system/volcano-vgpu-device-config"},
		{name: "unreadable first, fallback exists", cms: configMaps{split: map[string]string{"volcano-system": "4"},
			fail: map[string]error{"kube-system": forbidden}}, wantSplit: 4, wantFrom: "volcano-system/volcano-vgpu-device-config"},
		{name: "unreadable and no fallback", cms: configMaps{fail: map[string]error{"kube-system": forbidden}},
			wantErr: "ConfigMap kube-system/volcano-vgpu-device-config: configmaps \"volcano-vgpu-device-config\" is forbidden"},
		{name: "a bad first choice is no reason to fall back", cms: configMaps{split: map[string]string{"kube-system": "-1", "volcano-system": "4"}},
			wantErr: "ConfigMap kube-system/volcano-vgpu-device-config: device-config.yaml: nvidia.deviceSplitCount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, err := FindDeviceConfig(DefaultDeviceConfigMap(), tt.cms.get)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if found.Config.DeviceSplitCount != tt.wantSplit {
				t.Errorf("split %d, want %d", found.Config.DeviceSplitCount, tt.wantSplit)
			}
			if from := found.From; (tt.wantFrom == "" && from != ConfigMapRef{}) || (tt.wantFrom != "" && from.String() != tt.wantFrom) {
				t.Errorf("from %v, want %q", from, tt.wantFrom)
			}
		})
	}
	var bad *ConfigMapError
	_, err := FindDeviceConfig(DefaultDeviceConfigMap(), configMaps{split: map[string]string{"kube-system": "-1"}}.get)
	if !errors.As(err, &bad) || bad.ConfigMap.Namespace != "kube-system" {
		t.Errorf("error %v, want a *ConfigMapError naming kube-system's ConfigMap", err)
	}
}
