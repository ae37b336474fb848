package monitor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor/monitortest"
)

// fakePods is a PodActivity over a set of active pod UIDs.
type fakePods struct {
	active map[string]bool
	synced bool
}

func (f *fakePods) Active(uid string) bool { return f.active[uid] }
func (f *fakePods) HasSynced() bool        { return f.synced }

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

const (
	uidLive = "11111111-0000-4000-8000-000000000001"
	uidLeft = "22222222-0000-4000-8000-000000000002"
	uidLink = "33333333-0000-4000-8000-000000000003"
)

func TestSweepRemovesGonePodsAfterGrace(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	region := monitortest.H200(monitortest.V1).Bytes()
	live := filepath.Join(root, uidLive+"_main")
	gone := filepath.Join(root, uidLeft+"_main")
	writeFile(t, filepath.Join(live, "a.cache"), region)
	writeFile(t, filepath.Join(gone, "a.cache"), region)
	writeFile(t, filepath.Join(gone, "sub", "b.cache"), region)
	// A link in the root named like a container of a gone pod, to a
	// directory with files: neither it nor what it points to may go.
	target := filepath.Join(outside, "victim")
	writeFile(t, filepath.Join(target, "keep.txt"), []byte("x"))
	link := filepath.Join(root, uidLink+"_main")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	// The gone pod's directory holds a link out too: RemoveAll must remove
	// the link, not what it points to.
	if err := os.Symlink(target, filepath.Join(gone, "out")); err != nil {
		t.Fatal(err)
	}
	// Not a container's directory.
	other := filepath.Join(root, "lost+found")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}

	clk := clocktesting.NewFakeClock(time.Unix(1_764_633_600, 0))
	pods := &fakePods{active: map[string]bool{uidLive: true}}
	s := NewSweeper(root, pods, SweepConfig{Grace: 5 * time.Minute, Clock: clk})

	// Until the index has synced, every pod looks gone: nothing is marked.
	if removed := s.Sweep(); removed != nil {
		t.Fatalf("removed %v before the pod index synced", removed)
	}
	clk.Step(10 * time.Minute)
	pods.synced = true
	if removed := s.Sweep(); removed != nil {
		t.Fatalf("removed %v on the first sweep that saw the pod gone", removed)
	}
	clk.Step(5*time.Minute - time.Second)
	if removed := s.Sweep(); removed != nil {
		t.Fatalf("removed %v before the grace period ended", removed)
	}
	clk.Step(time.Second)
	if removed := s.Sweep(); !slices.Equal(removed, []string{gone}) {
		t.Fatalf("removed %v, want [%s]", removed, gone)
	}
	if exists(t, gone) {
		t.Errorf("%s still exists", gone)
	}
	for _, kept := range []string{live, filepath.Join(live, "a.cache"), link, target, filepath.Join(target, "keep.txt"), other} {
		if !exists(t, kept) {
			t.Errorf("%s was removed", kept)
		}
	}

	// Much later, the live pod's directory and the link are still there.
	clk.Step(time.Hour)
	s.Sweep()
	clk.Step(time.Hour)
	if removed := s.Sweep(); removed != nil {
		t.Errorf("removed %v, want nothing more", removed)
	}
	if !exists(t, live) || !exists(t, link) || !exists(t, filepath.Join(target, "keep.txt")) {
		t.Error("a live pod's directory or a link in the root was removed")
	}
}

// A pod that comes back (the index missed it for a while) restarts the
// grace period.
func TestSweepGraceRestartsWhenPodReturns(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, uidLeft+"_main")
	writeFile(t, filepath.Join(dir, "a.cache"), nil)
	clk := clocktesting.NewFakeClock(time.Unix(1_764_633_600, 0))
	pods := &fakePods{active: map[string]bool{}, synced: true}
	s := NewSweeper(root, pods, SweepConfig{Grace: 5 * time.Minute, Clock: clk})

	s.Sweep() // gone from now
	clk.Step(4 * time.Minute)
	pods.active[uidLeft] = true
	s.Sweep()
	pods.active[uidLeft] = false
	clk.Step(2 * time.Minute)
	if removed := s.Sweep(); removed != nil {
		t.Fatalf("removed %v 6 minutes after the pod first left, though it came back", removed)
	}
	clk.Step(5 * time.Minute)
	if removed := s.Sweep(); len(removed) != 1 {
		t.Fatalf("removed %v, want %s once gone for the whole grace period", removed, dir)
	}
}

// Run sweeps on its own every interval of its clock.
func TestSweeperRun(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, uidLeft+"_main")
	writeFile(t, filepath.Join(dir, "a.cache"), nil)
	clk := clocktesting.NewFakeClock(time.Unix(1_764_633_600, 0))
	pods := &fakePods{active: map[string]bool{}, synced: true}
	s := NewSweeper(root, pods, SweepConfig{Grace: 3 * time.Minute, Interval: time.Minute, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()

	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run never started its ticker")
		}
		time.Sleep(time.Millisecond)
	}
	// Tick until the directory goes: the first tick (at 1 minute) marks
	// it, so it may go no earlier than 1+3 minutes after the start.
	start := clk.Now()
	for exists(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not removed by %s of fake time", dir, clk.Since(start))
		}
		clk.Step(time.Minute)
		time.Sleep(time.Millisecond)
	}
	if elapsed := clk.Since(start); elapsed < 4*time.Minute {
		t.Errorf("%s removed after %s, before its grace period ended", dir, elapsed)
	}
}

func TestRemoveContainerDirRefusesLinks(t *testing.T) {
	target := t.TempDir()
	writeFile(t, filepath.Join(target, "keep"), []byte("x"))
	link := filepath.Join(t.TempDir(), uidLink+"_main")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := removeContainerDir(link); err == nil {
		t.Error("removeContainerDir removed a symbolic link")
	}
	if !exists(t, link) || !exists(t, filepath.Join(target, "keep")) {
		t.Error("the link or its target was removed")
	}
}
