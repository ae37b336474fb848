package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

func TestCheckFlags(t *testing.T) {
	valid := func() *options {
		return &options{nodeName: "gpu-node-1", nvmlMode: "real", kubeletDir: "/var/lib/kubelet/device-plugins",
			hookPath: "/usr/local/vgpu", metricsAddress: ":9394"}
	}
	tests := []struct {
		name    string
		edit    func(*options)
		wantErr []string
	}{
		{name: "valid", edit: func(*options) {}},
		{name: "fake with GPUs", edit: func(o *options) { o.nvmlMode, o.fakeGPUs = "fake", "2xNVIDIA H200:143771" }},
		{name: "metrics on a host", edit: func(o *options) { o.metricsAddress = "127.0.0.1:9394" }},
		{name: "no node name", edit: func(o *options) { o.nodeName = "" }, wantErr: []string{"--node-name (or $NODE_NAME) is required"}},
		{name: "unknown nvml", edit: func(o *options) { o.nvmlMode = "mock" }, wantErr: []string{`--nvml "mock": want real or fake`}},
		{name: "fake without GPUs", edit: func(o *options) { o.nvmlMode = "fake" }, wantErr: []string{"--nvml=fake needs --fake-gpus"}},
		{name: "fake GPUs ignored", edit: func(o *options) { o.fakeGPUs = "1xA:1" }, wantErr: []string{"only read with --nvml=fake"}},
		{name: "no port", edit: func(o *options) { o.metricsAddress = "9394" }, wantErr: []string{`--metrics-address "9394"`}},
		{name: "port out of range", edit: func(o *options) { o.metricsAddress = ":99999" }, wantErr: []string{"port 99999: want 0 to 65535"}},
		{
			name:    "every problem at once",
			edit:    func(o *options) { o.nodeName, o.kubeletDir, o.hookPath = "", "", "" },
			wantErr: []string{"--node-name", "--kubelet-dir is empty", "--hook-path"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.edit(o)
			err := checkFlags(o)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("checkFlags: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLegacyHandshakeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{args: nil, want: false},
		{args: []string{"--legacy-handshake"}, want: true},
		{args: []string{"--legacy-handshake=false"}, want: false},
	} {
		o := &options{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addCompatibilityFlags(fs, o)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.legacyHandshake != tc.want {
			t.Errorf("%v: legacy handshake %t, want %t", tc.args, o.legacyHandshake, tc.want)
		}
	}
	// The help names the annotation and the releases that need it, so an operator can tell
	// whether to set it.
	usage := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addCompatibilityFlags(usage, &options{})
	help := usage.Lookup(legacyHandshakeFlag).Usage
	for _, want := range []string{"volcano.sh/node-vgpu-handshake", "v1.14.2", "v1.15.0"} {
		if !strings.Contains(help, want) {
			t.Errorf("help %q does not name %q", help, want)
		}
	}
}

// --env-from defaults to prefixed, takes the three modes the chart value takes, and refuses
// anything else at parse time.
func TestEnvFromFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    vgpu.EnvFromMode
		wantErr string
	}{
		{args: nil, want: vgpu.EnvFromPrefixed},
		{args: []string{"--env-from=refuse"}, want: vgpu.EnvFromRefuse},
		{args: []string{"--env-from=prefixed"}, want: vgpu.EnvFromPrefixed},
		{args: []string{"--env-from=allow"}, want: vgpu.EnvFromAllow},
		{args: []string{"--env-from=prefix"}, wantErr: `envFrom mode "prefix": want refuse, prefixed or allow`},
	} {
		o := &options{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		addEnvFlags(fs, o)
		err := fs.Parse(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.envFrom != tc.want {
			t.Errorf("%v: env-from %q, want %q", tc.args, o.envFrom, tc.want)
		}
	}
}
