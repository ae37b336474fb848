package vgpu

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseNodeConfigShipped(t *testing.T) {
	data, err := os.ReadFile("testdata/config.json")
	if err != nil {
		t.Fatal(err)
	}
	file, err := ParseNodeConfig(data)
	if err != nil {
		t.Fatalf("ParseNodeConfig: %v", err)
	}
	got, ok := file.Lookup("aio-node67")
	want := NodeConfig{
		Name: "aio-node67", OperatingMode: ModeHAMiCore, DeviceMemoryScaling: 1.8, DeviceSplitCount: 10,
		MIGStrategy: MIGStrategyNone, FilterDevices: &FilterDevices{UUID: []string{}, Index: []int{}},
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Lookup(aio-node67) = %+v, %v; want %+v", got, ok, want)
	}
	got, ok = file.Lookup("gpu-mig-1")
	if !ok || got.OperatingMode != ModeMIG || got.DeviceCoreScaling != 2 || got.FilterDevices.Index[0] != 3 {
		t.Fatalf("Lookup(gpu-mig-1) = %+v, %v", got, ok)
	}
	if _, ok := file.Lookup("aio-node6"); ok {
		t.Fatal("Lookup must match the node name exactly")
	}
}

func TestParseNodeConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		field      string
		want       []string
	}{
		{"misspelt field", `{"nodeconfig":[{"name":"n1","devicesplitcout":4}]}`, "", []string{`"devicesplitcout"`}},
		{"wrong type", `{"nodeconfig":[{"name":"n1","devicesplitcount":"4"}]}`, "nodeconfig.devicesplitcount", []string{"got string, want int32"}},
		{"trailing data", `{"nodeconfig":[]} {}`, "", []string{"after the JSON object"}},
		{"not JSON", `nodeconfig: []`, "", []string{NodeConfigKey}},
		{"empty", ``, "", []string{"empty"}},
		{"no name", `{"nodeconfig":[{"operatingmode":"mig"}]}`, "nodeconfig[0].name", []string{"empty"}},
		{"duplicate name", `{"nodeconfig":[{"name":"n1"},{"name":"n2"},{"name":"n1"}]}`, "nodeconfig[2].name", []string{`"n1"`, "nodeconfig[0]"}},
		{"unknown mode", `{"nodeconfig":[{"name":"n1","operatingmode":"hami"}]}`, "nodeconfig[0].operatingmode", []string{`"hami"`}},
		{"negative split", `{"nodeconfig":[{"name":"n1","devicesplitcount":-2}]}`, "nodeconfig[0].devicesplitcount", []string{`"-2"`}},
		{"negative core scaling", `{"nodeconfig":[{"name":"n1","devicecorescaling":-1}]}`, "nodeconfig[0].devicecorescaling", nil},
		{"negative memory scaling", `{"nodeconfig":[{"name":"n1","devicememoryscaling":-1}]}`, "nodeconfig[0].devicememoryscaling", nil},
		{"unknown MIG strategy", `{"nodeconfig":[{"name":"n1","migstrategy":"all"}]}`, "nodeconfig[0].migstrategy", []string{`"all"`}},
		{"bad filter uuid", `{"nodeconfig":[{"name":"n1","filterdevices":{"uuid":["GPU-a,b"]}}]}`, "nodeconfig[0].filterdevices.uuid[0]", []string{`"GPU-a,b"`}},
		{"negative filter index", `{"nodeconfig":[{"name":"n1","filterdevices":{"index":[0,-1]}}]}`, "nodeconfig[0].filterdevices.index[1]", []string{`"-1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNodeConfig([]byte(tc.json))
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) {
				t.Fatalf("ParseNodeConfig = %+v, %v; want a *ConfigError", got, err)
			}
			if cfgErr.Field != tc.field {
				t.Errorf("error %q names field %q, want %q", err, cfgErr.Field, tc.field)
			}
			for _, fragment := range append([]string{NodeConfigKey}, tc.want...) {
				if !strings.Contains(err.Error(), fragment) {
					t.Errorf("error %q does not mention %q", err, fragment)
				}
			}
		})
	}
}

// FuzzParseNodeConfig: parsing never panics, and an accepted file written back as JSON
// parses to the same file.
func FuzzParseNodeConfig(f *testing.F) {
	for _, path := range []string{"testdata/config.json", "../../config/node-config.json"} {
		shipped, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(shipped))
	}
	f.Add(`{}`)
	f.Add(`{"nodeconfig":null}`)
	f.Add(`{"nodeconfig":[{"name":"a","filterdevices":{}}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		file, err := ParseNodeConfig([]byte(text))
		if err != nil {
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) || cfgErr.Reason == "" || !strings.HasPrefix(err.Error(), NodeConfigKey+": ") {
				t.Fatalf("ParseNodeConfig(%q) error %q (%T), want a *ConfigError naming %s with a reason", text, err, err, NodeConfigKey)
			}
			return
		}
		for i, entry := range file.NodeConfig {
			if found, ok := file.Lookup(entry.Name); entry.Name == "" || !ok || !reflect.DeepEqual(found, entry) {
				t.Fatalf("%q accepted, but entry %d (%q) is not what Lookup finds for its name", text, i, entry.Name)
			}
		}
		out, err := json.Marshal(file)
		if err != nil {
			t.Fatalf("accepted file %+v does not marshal: %v", file, err)
		}
		again, err := ParseNodeConfig(out)
		if err != nil {
			t.Fatalf("accepted %q, but not its re-encoding %q: %v", text, out, err)
		}
		if !reflect.DeepEqual(again, file) {
			t.Fatalf("%q parses to %+v, its re-encoding to %+v", text, file, again)
		}
	})
}
