package main

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestBadFlags: each flag value a user can get wrong stops the binary with a message that
// names the flag and what it wants (docs/bad-input.md); good values pass.
func TestBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--schedule-period", "0s"}, "--schedule-period 0s: must be positive"},
		{[]string{"--schedule-period", "-1s"}, "--schedule-period -1s: must be positive"},
		{[]string{"--node-selector", "gpu"}, `--node-selector "gpu": want key:value`},
		{[]string{"--node-selector", ":on"}, `--node-selector ":on": want key:value`},
		{[]string{"--percentage-nodes-to-find", "101"}, "--percentage-nodes-to-find 101: want 0..100"},
		{[]string{"--percentage-nodes-to-find", "-1"}, "--percentage-nodes-to-find -1: want 0..100"},
		{[]string{"--scheduler-sharding-mode", "hard", "--scheduler-sharding-name", "shard-a"},
			`--scheduler-sharding-mode "hard": not implemented by this scheduler; the mode it has is "none" (split nodes between schedulers with --node-selector)`},
		{[]string{"--log-flush-frequency", "0s"}, "--log-flush-frequency 0s: must be positive"},
		{[]string{"--node-selector", "gpu:on", "--schedule-period", "200ms", "--percentage-nodes-to-find", "50"}, ""},
		// Upstream v1.14's flags, as its chart passes them.
		{[]string{"--scheduler-sharding-mode", "none", "--gate-removal-worker-num", "5", "--log-flush-frequency", "10s"}, ""},
	} {
		opts := newOptions()
		fs := pflag.NewFlagSet("vc-scheduler", pflag.ContinueOnError)
		opts.addFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		err := opts.validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: refused with %q", tt.args, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%v: got %v, want %q", tt.args, err, tt.want)
		}
	}

	// No name at all (the flag's default list emptied) is refused.
	opts := newOptions()
	opts.schedulerNames = nil
	if err := opts.validate(); err == nil || err.Error() != "--scheduler-name: at least one name is required" {
		t.Errorf("no scheduler name: got %v", err)
	}
}

// The arguments upstream's Helm chart (v1.14) gives its scheduler Deployment parse and pass
// here, so that a Deployment made from it with only the image changed starts this scheduler.
func TestUpstreamChartArgs(t *testing.T) {
	args := []string{"--logtostderr", "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
		"--enable-healthz=true", "--enable-metrics=true", "--leader-elect=false", "--leader-elect-resource-namespace=volcano-system",
		"--kube-api-qps=2000", "--kube-api-burst=2000", "--schedule-period=1s", "--node-worker-threads=20",
		"--plugins-dir=plugins", "--scheduler-sharding-mode=none", "--gate-removal-worker-num=5", "-v=3", "2>&1"}
	opts := newOptions()
	if err := commandLine(opts, pflag.ContinueOnError).Parse(args); err != nil {
		t.Fatalf("upstream chart args: %v", err)
	}
	if err := opts.validate(); err != nil {
		t.Fatalf("upstream chart args refused: %v", err)
	}
	if opts.schedulerConf != "/volcano.scheduler/volcano-scheduler.conf" || !opts.enableMetrics || opts.leaderElection.ResourceNamespace != "volcano-system" {
		t.Errorf("parsed %+v", opts)
	}
}
