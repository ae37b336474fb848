//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// chaosRounds is short in make test and long in make chaos (CHAOS=1), so the short version
// cannot rot and the long one finds what only repetition shows.
func chaosRounds(short, long int) int {
	if os.Getenv("CHAOS") != "" {
		return long
	}
	return short
}

// gangsWhole reports every gang (pods "<gang>-<i>") that is partly bound.
func (e *schedulerEnv) gangsWhole(ctx context.Context, prefix string) ([]string, error) {
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	bound, total := map[string]int{}, map[string]int{}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		gang := p.Name[:strings.LastIndex(p.Name, "-")]
		total[gang]++
		if p.Spec.NodeName != "" {
			bound[gang]++
		}
	}
	var partial []string
	for gang, n := range total {
		if b := bound[gang]; b != 0 && b != n {
			partial = append(partial, fmt.Sprintf("%s: %d of %d bound", gang, b, n))
		}
	}
	return partial, nil
}

// Two replicas with leader election, each with a pod watch 2 s behind the API server
// (delayedPodWatch); gangs arrive while the leader works, and at a random point of its binding
// the leader is stopped, by SIGTERM or SIGKILL in turn, and comes back as the standby. A new
// leader's watch has then not brought the old leader's last binds. Every other pair of rounds
// the standby is also frozen (SIGSTOP) from before the round's gangs
// are created until the leader is gone, so its pod watch has not brought the pods the leader
// created and bound meanwhile: the window a new leader's catch-up must close. Each time the
// other replica takes over within the lease; a watch judges every GPU's ledger after every pod
// event of the whole test, so nothing is ever booked twice, not even for an instant; in the
// end every gang is bound whole.
func TestChaosLeaderKills(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	nodes := map[string][]vgpu.NodeDevice{}
	// Room for every gang of the long run: 3 nodes x 4 GPUs x 8 slots of 1024 MiB.
	for _, name := range []string{"le-a", "le-b", "le-c"} {
		nodes[e.name+"-"+name] = e.gpuNode(name, 4, 8, 8192, 0)
	}
	e.neverOverbooked(nodes)
	queue := e.queue("leader", nil)
	const lease = 4 * time.Second
	// Every replica's pod watch is lag behind the API server, its Lease and lists are not.
	const lag = 2 * time.Second
	lagging := delayedPodWatch(t, programKubeconfig(t, schedulerAccount), lag)
	replica := func() *process {
		p, _ := e.scheduler(seedConf(t), "--kubeconfig", lagging, "-v", "3", "--leader-elect=true", "--leader-elect-resource-name", e.name,
			"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
			"--listen-address", freeAddress(t), "--healthz-address", freeAddress(t))
		return p
	}
	const leading = "Became leader"
	replicas := []*process{replica(), replica()}
	leaderOf := func() (*process, *process) {
		t.Helper()
		var leader, standby *process
		eventually(t, 30*time.Second, "one replica leads", func(context.Context) (bool, string, error) {
			a, b := strings.Contains(replicas[0].log.String(), leading), strings.Contains(replicas[1].log.String(), leading)
			switch {
			case a && !b:
				leader, standby = replicas[0], replicas[1]
			case b && !a:
				leader, standby = replicas[1], replicas[0]
			}
			return leader != nil, fmt.Sprintf("a leads %v, b leads %v", a, b), nil
		})
		return leader, standby
	}
	const gangsPerRound = 2
	rounds := chaosRounds(4, 20)
	var worst time.Duration
	for round := 1; round <= rounds; round++ {
		leader, standby := leaderOf()
		frozen := round%4 == 1 || round%4 == 2 // with SIGTERM and with SIGKILL
		if frozen {
			_ = standby.cmd.Process.Signal(syscall.SIGSTOP)
		}
		for g := range gangsPerRound {
			e.vgpuGang(fmt.Sprintf("lead-%02d-%d", round, g), queue, 2, 1000, 10)
		}
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond) // a random point of its work
		signal := syscall.SIGTERM
		if round%2 == 0 {
			signal = syscall.SIGKILL
		}
		_ = leader.cmd.Process.Signal(signal)
		stopped := time.Now()
		select {
		case <-leader.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the leader did not exit within 10 s of %v", round, signal)
		}
		if frozen {
			_ = standby.cmd.Process.Signal(syscall.SIGCONT)
		}
		standby.logContains(t, 3*lease, leading)
		if took := time.Since(stopped); took > worst {
			worst = took
		}
		t.Logf("round %d: %v, standby frozen %v: it led %v later", round, signal, frozen, time.Since(stopped).Round(time.Millisecond))
		replicas = []*process{standby, replica()}
	}
	t.Logf("%d hand-overs; the standby led at most %v after the leader was stopped (lease %v)", rounds, worst.Round(time.Millisecond), lease)
	// A standby started in the round before may still be reading its first lists through the
	// lagging watch when the leader stops: the lag counts once.
	if worst > lease+lag+2*time.Second {
		t.Errorf("takeover took %v, more than the lease (%v), the watch's lag (%v) and two seconds' slack", worst, lease, lag)
	}
	e.waitBound("lead-", 2*gangsPerRound*rounds, 60*time.Second)
	if partial, err := e.gangsWhole(ctx, "lead-"); err != nil || len(partial) > 0 {
		t.Errorf("gangs partly bound: %v %v", partial, err)
	}
	if _, problems, err := e.checkLedger(ctx, nodes); err != nil || len(problems) > 0 {
		t.Errorf("at the end: %v %v", problems, err)
	}
}

// kube-apiserver restarts in the middle of the scheduler's work: the scheduler keeps running
// (the same process), binds what arrives afterwards, and books nothing twice. One round in
// make test, three in make chaos; each logs how long the controllers took to catch up and how
// soon after that both gangs were bound (0.1 to 3 s in the runs of 2026-12-03).
func TestChaosAPIServerRestart(t *testing.T) {
	e := newSchedulerEnv(t)
	ctx := context.Background()
	// Room for every round of the long run: 2 GPUs x 8 slots of 1024 MiB.
	nodes := map[string][]vgpu.NodeDevice{e.name + "-api": e.gpuNode("api", 2, 8, 8192, 0)}
	queue := e.queue("api", nil)
	sched, _ := e.scheduler(seedConf(t))
	for round := 1; round <= chaosRounds(1, 3); round++ {
		// The scheduler is up and scheduling; the next gang arrives as the API server goes.
		e.vgpuGang(fmt.Sprintf("before-%d", round), queue, 1, 1000, 10)
		e.waitBound(fmt.Sprintf("before-%d-", round), 1, 60*time.Second)
		e.vgpuGang(fmt.Sprintf("during-%d", round), queue, 2, 1000, 10)
		restart := time.Now()
		out, err := exec.Command(filepath.Join(repoRoot(), "hack/testbed/apiserver-restart.sh")).CombinedOutput()
		if err != nil {
			t.Fatalf("restart kube-apiserver: %v\n%s", err, out)
		}
		back := time.Now()
		e.vgpuGang(fmt.Sprintf("after-%d", round), queue, 2, 1000, 10)
		e.waitBound(fmt.Sprintf("during-%d-", round), 2, 90*time.Second)
		e.waitBound(fmt.Sprintf("after-%d-", round), 2, 90*time.Second)
		t.Logf("round %d: restart and controllers caught up in %s; both gangs bound %s later", round,
			back.Sub(restart).Round(time.Second), time.Since(back).Round(100*time.Millisecond))
		select {
		case <-sched.done:
			t.Fatalf("the scheduler exited when the API server restarted:\n%s", tail(sched.log.String(), 20))
		default:
		}
	}
	if _, problems, err := e.checkLedger(ctx, nodes); err != nil || len(problems) > 0 {
		t.Errorf("ledger: %v %v", problems, err)
	}
}
