package deviceshare

import (
	"strings"
	"testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/conf"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/devicewatch"
)

func TestParseArguments(t *testing.T) {
	defaultCM := devicewatch.Key{Namespace: "kube-system", Name: "volcano-vgpu-device-config"}
	for _, tc := range []struct {
		name string
		args conf.Arguments
		want arguments
		// wantErr: fragments the error must contain; nil for no error.
		wantErr []string
	}{
		{name: "nothing set: off, no policy", args: conf.Arguments{}, want: arguments{deviceConfig: defaultCM}},
		{name: "enabled, no policy: the weight does not matter",
			args: conf.Arguments{VGPUEnableArg: true, ScheduleWeightArg: 10}, want: arguments{vgpuEnable: true, deviceConfig: defaultCM}},
		{name: "policy without weight still orders nodes, with weight 1",
			args: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: "binpack"},
			want: arguments{vgpuEnable: true, policy: policyBinpack, weight: 1, deviceConfig: defaultCM}},
		{name: "policy with a weight",
			args: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: "spread", ScheduleWeightArg: 10},
			want: arguments{vgpuEnable: true, policy: policySpread, weight: 10, deviceConfig: defaultCM}},
		{name: "an explicit weight 0 keeps upstream's behaviour: GPU order only",
			args: conf.Arguments{VGPUEnableArg: true, SchedulePolicyArg: "binpack", ScheduleWeightArg: 0},
			want: arguments{vgpuEnable: true, policy: policyBinpack, deviceConfig: defaultCM}},
		{name: "quoted values as upstream configurations write them",
			args: conf.Arguments{VGPUEnableArg: "true", SchedulePolicyArg: "binpack", ScheduleWeightArg: "5"},
			want: arguments{vgpuEnable: true, policy: policyBinpack, weight: 5, deviceConfig: defaultCM}},
		{name: "node lock and ConfigMap are accepted",
			args: conf.Arguments{VGPUEnableArg: true, NodeLockEnableArg: false,
				KnownGeometriesCMNameArg: "volcano-vgpu-device-config", KnownGeometriesCMNamespaceArg: "kube-system"},
			want: arguments{vgpuEnable: true, deviceConfig: defaultCM}},
		{name: "another ConfigMap",
			args: conf.Arguments{KnownGeometriesCMNameArg: "gpu-slices", KnownGeometriesCMNamespaceArg: "gpu-system"},
			want: arguments{deviceConfig: devicewatch.Key{Namespace: "gpu-system", Name: "gpu-slices"}}},
		{name: "unknown policy", args: conf.Arguments{SchedulePolicyArg: "binPack"},
			wantErr: []string{SchedulePolicyArg, `"binPack"`, "binpack", "spread"}},
		{name: "negative weight", args: conf.Arguments{SchedulePolicyArg: "binpack", ScheduleWeightArg: -1},
			wantErr: []string{ScheduleWeightArg, "-1"}},
		{name: "weight not a number", args: conf.Arguments{ScheduleWeightArg: "heavy"}, wantErr: []string{ScheduleWeightArg, "heavy"}},
		{name: "enable not a bool", args: conf.Arguments{VGPUEnableArg: "maybe"}, wantErr: []string{VGPUEnableArg, "maybe"}},
		{name: "node lock not a bool", args: conf.Arguments{NodeLockEnableArg: 3}, wantErr: []string{NodeLockEnableArg}},
		{name: "empty ConfigMap name", args: conf.Arguments{KnownGeometriesCMNameArg: ""}, wantErr: []string{KnownGeometriesCMNameArg, "empty"}},
		{name: "empty ConfigMap namespace", args: conf.Arguments{KnownGeometriesCMNamespaceArg: ""}, wantErr: []string{KnownGeometriesCMNamespaceArg, "empty"}},
		{name: "ConfigMap name no object can have", args: conf.Arguments{KnownGeometriesCMNameArg: "Device_Config"},
			wantErr: []string{KnownGeometriesCMNameArg, `"Device_Config"`}},
		{name: "namespace no namespace can have", args: conf.Arguments{KnownGeometriesCMNamespaceArg: "kube.system"},
			wantErr: []string{KnownGeometriesCMNamespaceArg, `"kube.system"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseArguments(tc.args)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("parseArguments = %+v, want an error", got)
				}
				for _, fragment := range tc.wantErr {
					if !strings.Contains(err.Error(), fragment) {
						t.Errorf("error %q does not mention %q", err, fragment)
					}
				}
				if _, err := newPlugin(tc.args); err == nil {
					t.Errorf("the builder accepted arguments parseArguments refuses")
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArguments: %v", err)
			}
			if got != tc.want {
				t.Errorf("parseArguments = %+v, want %+v", got, tc.want)
			}
		})
	}
}
