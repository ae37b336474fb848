package main

import (
	"context"
	"testing"
	"time"

	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// replica is one vc-scheduler's election on the shared fake API server: the Lease as it read
// it at start and, once it leads, whether its cache may skip the catch-up.
type replica struct {
	lock    resourcelock.Interface
	atStart leaseAtStart
	skips   chan bool
	stop    context.CancelFunc
	done    chan error
}

// startReplica reads the Lease as a starting replica does, then runs for it; answered is what
// its stop reports about its Bindings.
func startReplica(t *testing.T, o *options, kube *kubefake.Clientset, answered bool) *replica {
	t.Helper()
	r := readingReplica(t, o, kube)
	r.run(t, o, answered)
	return r
}

// readingReplica is a replica that has read the Lease at start and not yet run for it.
func readingReplica(t *testing.T, o *options, kube *kubefake.Clientset) *replica {
	t.Helper()
	r := &replica{lock: newTestLock(t, o, kube), skips: make(chan bool, 1), done: make(chan error, 1)}
	var err error
	if r.atStart, err = readLeaseAtStart(context.Background(), o, kube, r.lock.Identity()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *replica) run(t *testing.T, o *options, answered bool) {
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	t.Cleanup(stop)
	go func() {
		r.done <- runAsLeader(ctx, o, r.lock, func(ctx context.Context) {
			r.skips <- r.atStart.handedOver(ctx)
			<-ctx.Done()
		}, func() bool { return answered })
	}()
}

// leads waits for the replica to lead and returns whether it skips the catch-up.
func (r *replica) leads(t *testing.T) bool {
	t.Helper()
	select {
	case skip := <-r.skips:
		return skip
	case <-time.After(10 * time.Second):
		t.Fatal("the replica did not lead within 10 s")
		return false
	}
}

// exits stops the replica, as SIGTERM does, and waits until it has handed the Lease over.
func (r *replica) exits(t *testing.T) {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("runAsLeader after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replica did not exit within 10 s of SIGTERM")
	}
}

func leaseOptions(lease time.Duration) *options {
	o := newOptions()
	le := &o.leaderElection
	le.ResourceName = "volcano"
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = durationOf(lease), durationOf(time.Second), durationOf(100*time.Millisecond)
	return o
}

// The catch-up is skipped only where the cache's first lists followed the last leader's
// hand-over and no leader came between; everywhere else it runs.
func TestNewLeaderSkipsTheCatchUpOnlyAfterAHandOverBeforeItStarted(t *testing.T) {
	t.Run("no Lease yet", func(t *testing.T) {
		kube := kubefake.NewClientset()
		if !startReplica(t, leaseOptions(2*time.Second), kube, true).leads(t) {
			t.Error("the first leader of a new Lease caught up: nobody led before it")
		}
	})
	t.Run("handed over before the start", func(t *testing.T) {
		kube, o := kubefake.NewClientset(), leaseOptions(2*time.Second)
		old := startReplica(t, o, kube, true)
		old.leads(t)
		old.exits(t)
		if !startReplica(t, o, kube, true).leads(t) {
			t.Error("a replica started after the Lease was handed over caught up")
		}
	})
	t.Run("leader still running at the start", func(t *testing.T) {
		kube, o := kubefake.NewClientset(), leaseOptions(2*time.Second)
		old := startReplica(t, o, kube, true)
		old.leads(t)
		standby := startReplica(t, o, kube, true)
		old.exits(t)
		if standby.leads(t) {
			t.Error("a standby started while another replica led skipped the catch-up: its cache may lack that leader's last binds")
		}
	})
	t.Run("Bindings cut off at the last exit", func(t *testing.T) {
		kube, o := kubefake.NewClientset(), leaseOptions(2*time.Second)
		old := startReplica(t, o, kube, false)
		old.leads(t)
		old.exits(t)
		if startReplica(t, o, kube, true).leads(t) {
			t.Error("a replica started while the Lease was held for Bindings cut off in flight skipped the catch-up")
		}
	})
	t.Run("another leader between the start and this one", func(t *testing.T) {
		kube, o := kubefake.NewClientset(), leaseOptions(2*time.Second)
		first := startReplica(t, o, kube, true)
		first.leads(t)
		first.exits(t)
		// Both start with the Lease free; the late one runs for it only once the other leads.
		late := readingReplica(t, o, kube)
		between := startReplica(t, o, kube, true)
		between.leads(t)
		late.run(t, o, true)
		between.exits(t)
		if late.leads(t) {
			t.Error("a replica skipped the catch-up although another led after its start")
		}
	})
}
