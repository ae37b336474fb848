package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func auditLine(agent, verb, resource string) string {
	return `{"verb":"` + verb + `","userAgent":"` + agent + `/v1","objectRef":{"resource":"` + resource + `"}}` + "\n"
}

// Writes before the mark are not counted; writes after it are, in the file the run started in
// and, when the API server rotated the log during the run, in the new file too.
func TestCountWritesAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	write := func(path string, lines ...string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
			t.Fatal(err)
		}
	}
	write(log, auditLine("vc-scheduler", "update", "podgroups"))
	mark := markAudit(log)
	write(log, auditLine("vc-scheduler", "create", "events"), auditLine("kwok", "patch", "pods"))
	if err := os.Rename(log, filepath.Join(dir, "audit-2026-12-03T16-00-00.000.log")); err != nil {
		t.Fatal(err)
	}
	write(log, auditLine("vc-scheduler", "update", "podgroups"))
	got, err := countWrites(mark, "vc-scheduler", "")
	if err != nil {
		t.Fatal(err)
	}
	if got["create events"] != 1 || got["update podgroups"] != 1 || len(got) != 2 {
		t.Errorf("counts %v, want one event create and one PodGroup update", got)
	}

	// Rotated twice: the file the run started in is gone, and the count would be short.
	if err := os.Remove(filepath.Join(dir, "audit-2026-12-03T16-00-00.000.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := countWrites(mark, "vc-scheduler", ""); err == nil || !strings.Contains(err.Error(), "rotated during the run") {
		t.Errorf("count after the run's file was deleted: %v, want an error saying it was rotated", err)
	}
}

// With a namespace prefix, only writes on objects in namespaces that start with it count: the
// preemption benchmark's count leaves out what the same binary does for other tests on the
// cluster, and cluster-scoped writes.
func TestCountWritesOfNamespaces(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	mark := markAudit(log)
	line := func(ns, resource string) string {
		return `{"verb":"create","userAgent":"vc-scheduler/v1","objectRef":{"resource":"` + resource + `","namespace":"` + ns + `"}}` + "\n"
	}
	data := line("bench-preempt-low", "events") + line("bench-preempt-high", "events") + line("e2e-abc", "events") + line("", "queues")
	if err := os.WriteFile(log, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := countWrites(mark, "vc-scheduler", "bench-preempt-")
	if err != nil {
		t.Fatal(err)
	}
	if got["create events"] != 2 || len(got) != 1 {
		t.Errorf("counts %v, want the two events of the bench's namespaces", got)
	}
}
