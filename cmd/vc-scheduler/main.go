// Command vc-scheduler is a drop-in replacement for Volcano's scheduler: same flags, same
// volcano-scheduler.conf, same CRDs, conditions, events and metrics, with vGPU sharing
// (the deviceshare plugin) built in.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// commandLine is every flag the binary takes: its own, upstream's and klog's.
func commandLine(opts *options, onError pflag.ErrorHandling) *pflag.FlagSet {
	fs := pflag.NewFlagSet("vc-scheduler", onError)
	opts.addFlags(fs)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	return fs
}

func main() {
	opts := newOptions()
	_ = commandLine(opts, pflag.ExitOnError).Parse(os.Args[1:])
	if opts.printVersion {
		fmt.Printf("vc-scheduler %s\n", version)
		return
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "vc-scheduler:", err)
		os.Exit(2)
	}
	klog.StartFlushDaemon(opts.logFlushFrequency)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts); err != nil {
		klog.ErrorS(err, "vc-scheduler stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
