package main

import (
	"os"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// TestMain turns off client-go's watch-list streaming: BenchmarkCycleWithPendingGangs runs the
// binary's cache over volcano.sh/apis' fake clientset, which predates it and never sends the
// bookmark that ends the initial list, so a reflector over it would wait forever. The binary
// links kube-scheduler's plugins, whose feature package hands client-go's gates to
// component-base's (so KUBE_FEATURE_WatchListClient is not read).
func TestMain(m *testing.M) {
	if err := utilfeature.DefaultMutableFeatureGate.Set("WatchListClient=false"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
