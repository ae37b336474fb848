//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// kubeconfigPath is the admin kubeconfig of the cluster under test.
func kubeconfigPath() string {
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return p
	}
	return filepath.Join(repoRoot(), ".cache", "testbed", "pki", "admin.kubeconfig")
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binary builds the project's programs once per test run and returns the path of one.
func binary(t *testing.T, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "volcano-vgpu-e2e-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/...", "./test/standin")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

// process is a program of the project running against the cluster for one test.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// syncBuffer is a log that the process writes and the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs a project binary with args; it is stopped when the test ends, and its log is
// printed when the test failed.
func start(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startProgram(t, binary(t, bin), args...)
}

// startProgram is start for a program at path (a tool under .cache/bin).
func startProgram(t *testing.T, path string, args ...string) *process {
	t.Helper()
	bin := filepath.Base(path)
	p := &process{name: bin, cmd: exec.Command(path, args...), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- log of %s %s (%d bytes) ---\n%s", p.name, strings.Join(args, " "), len(p.log.String()), tail(p.log.String(), 60))
		}
	})
	return p
}

// stop ends the process with SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process at once, as a crash would.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logContains waits until the process's log has the text.
func (p *process) logContains(t *testing.T, timeout time.Duration, text string) {
	t.Helper()
	eventually(t, timeout, p.name+" logs "+text, func(context.Context) (bool, string, error) {
		return strings.Contains(p.log.String(), text), tail(p.log.String(), 5), nil
	})
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
