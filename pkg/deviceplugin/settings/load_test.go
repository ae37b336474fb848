package settings

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// fakeConfigMaps serves ConfigMaps by namespace; a namespace mapped to an
// error fails with it, one that is absent answers NotFound. It records the
// names asked for.
type fakeConfigMaps struct {
	data  map[string]map[string]string
	fail  map[string]error
	asked []string
}

func (f *fakeConfigMaps) get(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	f.asked = append(f.asked, namespace+"/"+name)
	if err := f.fail[namespace]; err != nil {
		return nil, err
	}
	data, ok := f.data[namespace]
	if !ok || name != vgpu.DeviceConfigMapName {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}, nil
}

func deviceYAML(split string) map[string]string {
	return map[string]string{vgpu.DeviceConfigKey: "nvidia:\n  deviceSplitCount: " + split + "\n"}
}

func TestLoadDeviceConfigMap(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, vgpu.DeviceConfigMapName, nil)
	tests := []struct {
		name      string
		cms       fakeConfigMaps
		wantSplit int32
		wantErr   []string
	}{
		{
			name:      "kube-system first",
			cms:       fakeConfigMaps{data: map[string]map[string]string{"kube-system": deviceYAML("3"), "volcano-system": deviceYAML("4")}},
			wantSplit: 3,
		},
		{
			name:      "falls back to volcano-system",
			cms:       fakeConfigMaps{data: map[string]map[string]string{"volcano-system": deviceYAML("4")}},
			wantSplit: 4,
		},
		{
			name:      "none anywhere: shipped defaults",
			cms:       fakeConfigMaps{},
			wantSplit: vgpu.DefaultNvidiaConfig().DeviceSplitCount,
		},
		{
			name: "kube-system unreadable, volcano-system has one",
			cms: fakeConfigMaps{data: map[string]map[string]string{"volcano-system": deviceYAML("4")},
				fail: map[string]error{"kube-system": forbidden}},
			wantSplit: 4,
		},
		{
			name:    "kube-system unreadable and none in volcano-system: not the defaults",
			cms:     fakeConfigMaps{fail: map[string]error{"kube-system": forbidden}},
			wantErr: []string{"ConfigMap kube-system/volcano-vgpu-device-config", "forbidden", "none in namespace volcano-system"},
		},
		{
			name: "both unreadable",
			cms: fakeConfigMaps{fail: map[string]error{"kube-system": forbidden,
				"volcano-system": apierrors.NewServiceUnavailable("etcd down")}},
			wantErr: []string{"kube-system/volcano-vgpu-device-config", "volcano-system/volcano-vgpu-device-config", "etcd down"},
		},
		{
			name:    "ConfigMap without the key",
			cms:     fakeConfigMaps{data: map[string]map[string]string{"kube-system": {"config.yaml": "nvidia: {}"}}},
			wantErr: []string{"ConfigMap kube-system/volcano-vgpu-device-config: no key device-config.yaml"},
		},
		{
			name:    "bad field names ConfigMap, file and field",
			cms:     fakeConfigMaps{data: map[string]map[string]string{"volcano-system": deviceYAML("-1")}},
			wantErr: []string{"ConfigMap volcano-system/volcano-vgpu-device-config: device-config.yaml: nvidia.deviceSplitCount \"-1\""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cms := tt.cms
			got, err := Load(context.Background(), Sources{Node: testNode, GetConfigMap: cms.get,
				NodeConfigPath: filepath.Join(t.TempDir(), "absent.json")})
			for _, asked := range cms.asked {
				if !strings.HasSuffix(asked, "/"+vgpu.DeviceConfigMapName) {
					t.Errorf("asked for ConfigMap %s, want only %s", asked, vgpu.DeviceConfigMapName)
				}
			}
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want one containing %q", tt.wantErr)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Device.DeviceSplitCount != tt.wantSplit {
				t.Errorf("split count %d, want %d", got.Device.DeviceSplitCount, tt.wantSplit)
			}
		})
	}
}

func TestLoadNodeConfigFile(t *testing.T) {
	tests := []struct {
		name      string
		content   *string // nil: no file
		wantSplit int32
		wantMode  string
		wantErr   string
	}{
		{name: "no file: the flag beats the ConfigMap", wantSplit: 5, wantMode: vgpu.ModeHAMiCore},
		{
			name:      "entry for this node",
			content:   ptr(`{"nodeconfig":[{"name":"gpu-node-1","operatingmode":"mig","devicesplitcount":6}]}`),
			wantSplit: 6, wantMode: vgpu.ModeMIG,
		},
		{
			name:    "bad field names file and field",
			content: ptr(`{"nodeconfig":[{"name":"gpu-node-1","devicesplitcount":-2}]}`),
			wantErr: `config.json: nodeconfig[0].devicesplitcount "-2": must not be negative`,
		},
		{
			name:    "misspelt field is an error",
			content: ptr(`{"nodeconfig":[{"name":"gpu-node-1","deviceSplitCnt":4}]}`),
			wantErr: "deviceSplitCnt",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if tt.content != nil {
				if err := os.WriteFile(path, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// ConfigMap 3, flag 5, node entry (when there is one) wins.
			cms := fakeConfigMaps{data: map[string]map[string]string{"kube-system": deviceYAML("3")}}
			got, err := Load(context.Background(), Sources{Node: testNode, GetConfigMap: cms.get, NodeConfigPath: path,
				Flags: parseFlags(t, "--device-split-count=5")})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Errorf("error %v, want one naming %s and containing %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Device.DeviceSplitCount != tt.wantSplit || got.Mode != tt.wantMode {
				t.Errorf("split %d mode %s, want %d %s", got.Device.DeviceSplitCount, got.Mode, tt.wantSplit, tt.wantMode)
			}
		})
	}
}

func TestConfigMapGetterFor(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "volcano-system", Name: vgpu.DeviceConfigMapName},
		Data:       deviceYAML("8"),
	})
	got, err := Load(context.Background(), Sources{Node: testNode, GetConfigMap: ConfigMapGetterFor(client),
		NodeConfigPath: filepath.Join(t.TempDir(), "absent.json")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Device.DeviceSplitCount != 8 {
		t.Errorf("split count %d, want 8 from volcano-system", got.Device.DeviceSplitCount)
	}
	for _, action := range client.Actions() {
		if action.GetVerb() != "get" || action.GetResource().Resource != "configmaps" {
			t.Errorf("unexpected API call %s %s", action.GetVerb(), action.GetResource().Resource)
		}
	}
}

func ptr[T any](v T) *T { return &v }
