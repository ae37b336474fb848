//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// SIGTERM to the leading replica while it binds a burst of vGPU gangs (800 pods filling 10
// nodes of 8 GPUs), a standby beside it,
// as a rolling update or a node drain does: the leader exits 0 within 2 s, having released
// its Lease, so the standby leads within a few seconds (not the 15 s lease; 5 s more when a
// Binding was cut off in flight, for which the leader holds the Lease lease duration - renew
// deadline past its exit); every pod ends bound exactly once with its assignment (no GPU
// booked past its size); and every pod has its Scheduled Event but those the replicas' logs
// count as dropped: cut off by the leader's 2 s (Events queued, or Bindings whose answer never
// came), or late while the API server was saturated (never lost without a word). The standby
// schedules only once its cache has the leader's last binds (CatchUp), so none of their GPUs
// is booked again.
func TestSIGTERMHandsOverWithinTwoSeconds(t *testing.T) {
	e := newSchedulerEnv(t)
	nodes := map[string][]vgpu.NodeDevice{}
	for i := range 10 {
		name := fmt.Sprintf("g%d", i)
		nodes[e.name+"-"+name] = e.gpuNode(name, 8, 10, 81920, 0)
	}
	le := []string{"--leader-elect=true", "--leader-elect-resource-name", e.name, "--leader-elect-lease-duration", "15s",
		"--leader-elect-renew-deadline", "10s", "--leader-elect-retry-period", "1s"}
	// The pods wait for the leader, so that its first cycle places them all and it is still
	// binding them when the signal comes.
	const gangs, size = 100, 8
	for i := range gangs {
		e.vgpuGang(fmt.Sprintf("burst%02d", i), "", size, 8192, 0)
	}
	const leading = "Became leader"
	leader, _ := e.scheduler(seedConf(t), le...)
	leader.logContains(t, 30*time.Second, leading)
	standby, _ := e.scheduler(seedConf(t), le...)
	// A replica runs for the Lease once its informers have synced, after reading the Lease
	// held: it must catch up when it leads. (One held still before that would start its
	// informers after the hand-over, and need no catch-up.)
	standby.logContains(t, 30*time.Second, "Attempting to acquire leader lease")
	e.waitBoundCount("burst", "at least 40", func(b int) bool { return b >= 40 }, 60*time.Second)
	// The standby is held still until the leader is gone, so that its pod watch is behind
	// the leader's last binds when it takes the Lease, as a standby on a loaded node is.
	_ = standby.cmd.Process.Signal(syscall.SIGSTOP)
	signalled := time.Now()
	_ = leader.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-leader.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not exit within 10 s of SIGTERM")
	}
	exited := time.Since(signalled)
	_ = standby.cmd.Process.Signal(syscall.SIGCONT)
	ctx := context.Background()
	boundAtExit, _, err := e.boundPods(ctx, "burst")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the leader exited %v after SIGTERM, %d of %d pods bound", exited.Round(time.Millisecond), boundAtExit, gangs*size)
	if exited > 2*time.Second {
		t.Errorf("the leader took %v to exit after SIGTERM, want at most 2 s", exited.Round(time.Millisecond))
	}
	if code := leader.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the leader exited with %d after SIGTERM, want 0", code)
	}
	if regexp.MustCompile(`"Events dropped".*reason="(queue full|API error)"`).MatchString(leader.log.String()) {
		t.Errorf("the leader dropped Events for want of room or by the API server's refusal before it was stopped")
	}
	cutOff := 0
	if m := regexp.MustCompile(`Events still queued at shutdown were not written.* count=(\d+)`).FindStringSubmatch(leader.log.String()); m != nil {
		cutOff, _ = strconv.Atoi(m[1])
	}
	// A Binding cancelled in flight may have bound its pod: no Scheduled Event is written
	// for it, and the log counts it.
	bindsCutOff := 0
	if m := regexp.MustCompile(`"Handed back what was not started at shutdown".* bindsCutOff=(\d+)`).FindStringSubmatch(leader.log.String()); m != nil {
		bindsCutOff, _ = strconv.Atoi(m[1])
	}
	t.Logf("the leader's log counts %d Events cut off at shutdown, %d binds cut off in flight", cutOff, bindsCutOff)
	leadsWithin := 5 * time.Second
	if regexp.MustCompile(`"Holding the Lease past exit`).MatchString(leader.log.String()) {
		leadsWithin += 5 * time.Second // 15 s - 10 s
		t.Logf("the leader holds the Lease 5 s past its exit, for its Bindings cut off")
	}
	standby.logContains(t, leadsWithin, leading)
	t.Logf("the standby leads %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	standby.logContains(t, 30*time.Second, "Cache caught up with the pods' binds")
	if m := regexp.MustCompile(`"Cache caught up with the pods' binds".* waitedFor=(\d+) took="([^"]+)"`).FindStringSubmatch(standby.log.String()); m != nil {
		t.Logf("the standby waited %s for %s of the leader's binds to reach its cache", m[2], m[1])
	}

	e.waitBound("burst", gangs*size, 120*time.Second)
	bound, problems, err := e.checkLedger(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if bound != gangs*size || len(problems) > 0 {
		t.Errorf("%d pods bound, want %d; ledger problems: %v", bound, gangs*size, problems)
	}
	// The standby stops too, so that both processes' logs say what they dropped in all: cut off
	// at shutdown, or Normal Events dropped as late while the API server was saturated.
	_ = standby.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-standby.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not exit within 10 s of SIGTERM")
	}
	dropped := droppedInAll(t, leader.log.String()) + droppedInAll(t, standby.log.String()) + bindsCutOff
	t.Logf("the two processes dropped %d Events in all, binds cut off included", dropped)
	eventually(t, 30*time.Second, "every pod's Scheduled Event but those dropped", func(ctx context.Context) (bool, string, error) {
		evs, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		if err != nil {
			return false, err.Error(), nil
		}
		scheduled := map[string]bool{}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "Pod" {
				scheduled[ev.InvolvedObject.Name] = true
			}
		}
		// What was dropped may have been other Events, or writes in flight that landed.
		return len(scheduled) >= gangs*size-dropped, fmt.Sprintf("%d of %d pods have one, %d dropped", len(scheduled), gangs*size, dropped), nil
	})
}

// droppedInAll is the Events a stopped vc-scheduler's log says it dropped in its life.
func droppedInAll(t *testing.T, log string) int {
	t.Helper()
	m := regexp.MustCompile(`"Events dropped in this process's life".* queuefull=(\d+) late=(\d+) APIerror=(\d+) shutdown=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		return 0
	}
	n := 0
	for _, v := range m[1:] {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}
