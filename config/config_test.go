// Package config holds the configuration users edit and the chart installs: the scheduler's
// volcano-scheduler.conf (default and lab 8's), the device ConfigMap's device-config.yaml, a
// node ConfigMap example and the Volcano CRDs. These tests keep the files true to the code;
// the scheduler configurations are validated against the real plugin registry in
// cmd/vc-scheduler.
package config

import (
	"os"
	"reflect"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// The shipped device-config.yaml is the built-in default, value for value: a cluster with the
// chart's ConfigMap and one without it schedule alike.
func TestDeviceConfigIsTheBuiltInDefault(t *testing.T) {
	data, err := os.ReadFile("device-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := vgpu.ParseDeviceConfig(data)
	if err != nil {
		t.Fatalf("device-config.yaml: %v", err)
	}
	if want := vgpu.DefaultNvidiaConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("device-config.yaml differs from vgpu.DefaultNvidiaConfig():\n got %+v\nwant %+v", got, want)
	}
}

func TestNodeConfigExampleParses(t *testing.T) {
	data, err := os.ReadFile("node-config.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := vgpu.ParseNodeConfig(data)
	if err != nil {
		t.Fatalf("node-config.json: %v", err)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("node-config.json: %v", err)
	}
	if nc, ok := f.Lookup("gpu-node-1"); !ok || nc.DeviceSplitCount != 4 {
		t.Errorf("gpu-node-1's entry = %+v, want split count 4", nc)
	}
}
