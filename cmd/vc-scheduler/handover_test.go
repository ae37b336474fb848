package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// handOverEnv is a leader and a standby electing on one fake API server with a Lease of
// lease seconds and a renew deadline of 1 s, the leader stopping with bindsAnswered, and the
// pod "late" Pending. The standby, once it leads, reads the pod: what its barrier would see.
type handOverEnv struct {
	kube   *kubefake.Clientset
	o      *options
	leader context.CancelFunc
	// leaderDone gets the leader's runAsLeader error once it has handed over.
	leaderDone chan error
	// standbyRead gets the pod as the standby first read it on leading, and when.
	standbyRead chan readPod
}

type readPod struct {
	pod *corev1.Pod
	at  time.Time
}

func startHandOver(t *testing.T, lease time.Duration, stop func(kube *kubefake.Clientset) bool) *handOverEnv {
	t.Helper()
	env := &handOverEnv{
		kube: kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late", UID: "uid-late"},
			Spec: corev1.PodSpec{SchedulerName: "volcano"}}),
		o:           newOptions(),
		leaderDone:  make(chan error, 1),
		standbyRead: make(chan readPod, 1),
	}
	le := &env.o.leaderElection
	le.ResourceName = "volcano"
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = durationOf(lease), durationOf(time.Second), durationOf(100*time.Millisecond)

	leaderCtx, stopLeader := context.WithCancel(context.Background())
	env.leader = stopLeader
	leading := make(chan struct{})
	leaderLock, standbyLock := newTestLock(t, env.o, env.kube), newTestLock(t, env.o, env.kube)
	go func() {
		env.leaderDone <- runAsLeader(leaderCtx, env.o, leaderLock, func(ctx context.Context) {
			close(leading)
			<-ctx.Done()
		}, func() bool { return stop(env.kube) })
	}()
	select {
	case <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("the first replica did not lead within 10 s")
	}
	standbyCtx, stopStandby := context.WithCancel(context.Background())
	t.Cleanup(stopStandby)
	go func() {
		_ = runAsLeader(standbyCtx, env.o, standbyLock, func(ctx context.Context) {
			pod, err := env.kube.CoreV1().Pods("ns").Get(ctx, "late", metav1.GetOptions{})
			if err != nil {
				t.Errorf("the new leader's read of pod ns/late: %v", err)
			}
			env.standbyRead <- readPod{pod, time.Now()}
			<-ctx.Done()
		}, func() bool { return true })
	}()
	return env
}

func newTestLock(t *testing.T, o *options, kube *kubefake.Clientset) resourcelock.Interface {
	t.Helper()
	lock, err := newLeaseLock(o, kube)
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

// signal stops the leader, as SIGTERM does, and waits until it has handed the Lease over.
func (env *handOverEnv) signal(t *testing.T) time.Time {
	t.Helper()
	signalled := time.Now()
	env.leader()
	select {
	case err := <-env.leaderDone:
		if err != nil {
			t.Fatalf("the leader's runAsLeader after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not hand over within 10 s of SIGTERM")
	}
	return signalled
}

// A Binding the leader cut off in flight at SIGTERM, which the API server applies after the
// leader has stopped: the next leader reads the cluster only after it has landed, so that its
// barrier (cache.CatchUp) sees the pod bound with its assignment and its GPUs taken. The
// leader holds the Lease for lease duration - renew deadline past its exit (here 1 s); the
// Binding lands 300 ms after the leader's stop.
func TestNextLeaderReadsAfterTheBindingsCutOffAtShutdown(t *testing.T) {
	landed := make(chan time.Time, 1)
	env := startHandOver(t, 2*time.Second, func(kube *kubefake.Clientset) bool {
		go func() {
			time.Sleep(300 * time.Millisecond)
			pod, err := kube.CoreV1().Pods("ns").Get(context.Background(), "late", metav1.GetOptions{})
			if err == nil {
				pod.Spec.NodeName = "n1"
				_, err = kube.CoreV1().Pods("ns").Update(context.Background(), pod, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("applying the Binding cut off: %v", err)
			}
			landed <- time.Now()
		}()
		return false // the Binding of ns/late was cut off in flight
	})
	env.signal(t)
	select {
	case read := <-env.standbyRead:
		if read.pod == nil || read.pod.Spec.NodeName == "" {
			t.Errorf("the new leader read pod ns/late unbound: it led before the Binding cut off at the old leader's shutdown landed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not lead within 10 s of the leader's exit")
	}
	<-landed
}

// When every Binding was answered, the Lease is released at once: the standby leads long
// before the Lease (10 s) would lapse.
func TestNextLeaderLeadsAtOnceWhenEveryBindingWasAnswered(t *testing.T) {
	env := startHandOver(t, 10*time.Second, func(*kubefake.Clientset) bool { return true })
	signalled := env.signal(t)
	select {
	case read := <-env.standbyRead:
		if took := read.at.Sub(signalled); took > 5*time.Second {
			t.Errorf("the standby led %v after SIGTERM, want it at its next try", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not lead within 10 s of the leader's exit")
	}
}
