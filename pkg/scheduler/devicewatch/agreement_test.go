package devicewatch

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/settings"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// TestSchedulerAndDevicePluginAgree: given the same device ConfigMaps, the scheduler (a
// Source on the default ConfigMap) and the device plugin (settings.Load) put the same
// resource names in force, so a pod's requests mean the same to both.
func TestSchedulerAndDevicePluginAgree(t *testing.T) {
	fallback := Key{Namespace: vgpu.FallbackConfigNamespace, Name: vgpu.DeviceConfigMapName}
	other := Key{Namespace: "gpu-system", Name: vgpu.DeviceConfigMapName}
	inKubeSystem := sliceNames
	inKubeSystem.Count = "example.com/kube-system-slices"
	tests := []struct {
		name string
		cms  []runtime.Object
		want vgpu.ResourceNames
	}{
		{name: "none: the shipped names", want: vgpu.DefaultResourceNames()},
		{name: "kube-system only", cms: []runtime.Object{configMap(DefaultKey(), "1", sliceYAML(inKubeSystem))}, want: inKubeSystem},
		{name: "volcano-system only", cms: []runtime.Object{configMap(fallback, "1", sliceYAML(sliceNames))}, want: sliceNames},
		{name: "both: kube-system's", cms: []runtime.Object{configMap(DefaultKey(), "1", sliceYAML(inKubeSystem)),
			configMap(fallback, "1", sliceYAML(sliceNames))}, want: inKubeSystem},
		{name: "another namespace is no choice", cms: []runtime.Object{configMap(other, "1", sliceYAML(sliceNames))},
			want: vgpu.DefaultResourceNames()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := kubefake.NewClientset(tt.cms...)

			scheduler := NewSource(client, nil).Select(ctx, DefaultKey()).ResourceNames()
			plugin, err := settings.Load(ctx, settings.Sources{Node: "n1", GetConfigMap: settings.ConfigMapGetterFor(client),
				NodeConfigPath: filepath.Join(t.TempDir(), "absent.json")})
			if err != nil {
				t.Fatal(err)
			}
			if got := plugin.Device.ResourceNames(); got != scheduler {
				t.Errorf("device plugin names %+v, scheduler names %+v: they disagree", got, scheduler)
			}
			if scheduler != tt.want {
				t.Errorf("names %+v, want %+v", scheduler, tt.want)
			}
		})
	}
}
