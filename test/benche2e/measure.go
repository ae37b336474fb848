package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procSample is a process's CPU time so far and its peak resident memory.
type procSample struct {
	cpu     time.Duration
	peakRSS int64 // bytes
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux build Go runs on.
const clockTicks = 100

// readProc reads /proc/PID/stat (utime + stime) and /proc/PID/status (VmHWM).
func readProc(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name, field 2, is in parentheses and may hold spaces: count from after it.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	s.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			s.peakRSS = kb << 10
		}
	}
	return s, nil
}

// readPIDFile samples the process whose PID the file holds.
func readPIDFile(path string) (procSample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return procSample{}, fmt.Errorf("PID file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return procSample{}, fmt.Errorf("PID file %s: %w", path, err)
	}
	return readProc(pid)
}

// auditEvent is the part of an audit.k8s.io/v1 Event the count needs.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
}

// auditMark is where a run's part of the audit log starts: the file (by inode, since the API
// server rotates it at --audit-log-maxsize, renaming it to audit-<time>.log) and the offset.
type auditMark struct {
	path   string
	inode  uint64
	offset int64
}

func markAudit(path string) auditMark {
	m := auditMark{path: path}
	if st, err := os.Stat(path); err == nil {
		m.offset = st.Size()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			m.inode = sys.Ino
		}
	}
	return m
}

// countWrites counts the writes in the API server's audit log since the mark whose client's
// user agent starts with agent and, unless nsPrefix is "", whose object is in a namespace
// that starts with nsPrefix, by "verb resource[/subresource]" (the audit policy of
// cluster-up.sh logs writes only; events.k8s.io events are named events.k8s.io/events). When
// the log was rotated since the mark, the rest of the rotated file counts too; a run during
// which it was rotated twice (the older file deleted) fails rather than count short.
func countWrites(mark auditMark, agent, nsPrefix string) (map[string]int, error) {
	counts := map[string]int{}
	cur, err := os.Stat(mark.path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w (the cluster's API server writes it; make cluster-down cluster-up if it predates that)", err)
	}
	from := mark.offset
	if sys, ok := cur.Sys().(*syscall.Stat_t); ok && mark.inode != 0 && sys.Ino != mark.inode {
		rotated, err := fileWithInode(filepath.Dir(mark.path), mark.inode)
		if err != nil {
			return nil, fmt.Errorf("audit log %s was rotated during the run and its earlier part is gone: %w", mark.path, err)
		}
		if err := countFrom(rotated, mark.offset, agent, nsPrefix, counts); err != nil {
			return nil, err
		}
		from = 0
	}
	return counts, countFrom(mark.path, from, agent, nsPrefix, counts)
}

// fileWithInode finds the file of dir with the inode.
func fileWithInode(dir string, inode uint64) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			if sys, ok := info.Sys().(*syscall.Stat_t); ok && sys.Ino == inode {
				return filepath.Join(dir, e.Name()), nil
			}
		}
	}
	return "", fmt.Errorf("no file in %s is the log the run started in", dir)
}

// countFrom adds the matching writes of one audit log file, from offset on, to counts.
func countFrom(path string, offset int64, agent, nsPrefix string, counts map[string]int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var e auditEvent
		if json.Unmarshal(scanner.Bytes(), &e) != nil || e.ObjectRef == nil || !strings.HasPrefix(e.UserAgent, agent) ||
			nsPrefix != "" && !strings.HasPrefix(e.ObjectRef.Namespace, nsPrefix) {
			continue
		}
		what := e.ObjectRef.Resource
		if e.ObjectRef.APIGroup != "" && e.ObjectRef.APIGroup != "scheduling.volcano.sh" {
			what = e.ObjectRef.APIGroup + "/" + what
		}
		if e.ObjectRef.Subresource != "" {
			what += "/" + e.ObjectRef.Subresource
		}
		counts[e.Verb+" "+what]++
	}
	return scanner.Err()
}

func perPod(writes map[string]int, pods int) float64 {
	if pods == 0 {
		return 0
	}
	total := 0
	for _, n := range writes {
		total += n
	}
	return float64(total) / float64(pods)
}

// hostDescription names the machine the numbers come from.
func hostDescription() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d cores, %s", runtime.NumCPU(), model)
}

// waitQuiet waits until the audit log shows no write that countWrites(agent, nsPrefix) would
// count for a whole period of quiet, or timeout passes. A scheduler writes its events one
// after another, some seconds behind its binds: a count started before they end would take
// an earlier phase's events for the next one's.
func waitQuiet(ctx context.Context, path, agent, nsPrefix string, quiet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		mark := markAudit(path)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		writes, err := countWrites(mark, agent, nsPrefix)
		if err != nil {
			return err
		}
		if len(writes) == 0 {
			return nil
		}
	}
	return fmt.Errorf("writes by %s still going on after %s", agent, timeout)
}
