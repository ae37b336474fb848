package monitor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor/monitortest"
)

func TestParseContainerDirName(t *testing.T) {
	tests := []struct {
		name, podUID, container string
		wantErr                 string
	}{
		{name: "0b8a3c1e-5d2f-4a7b-9c1d-2e3f4a5b6c7d_cuda", podUID: "0b8a3c1e-5d2f-4a7b-9c1d-2e3f4a5b6c7d", container: "cuda"},
		{name: "6d1b8f0c1f1e4d43a0b36f8a1f0f2a11_trainer-0", podUID: "6d1b8f0c1f1e4d43a0b36f8a1f0f2a11", container: "trainer-0"},
		{name: "nounderscore", wantErr: `no "_"`},
		{name: "_ctr", wantErr: "not a pod UID"},
		{name: "uid_", wantErr: "not a container name"},
		{name: "uid_Bad_Name", wantErr: "not a container name"},
		{name: "uid_-lead", wantErr: "not a container name"},
		{name: "ui/d_ctr", wantErr: "not a pod UID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid, ctr, err := ParseContainerDirName(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.name) {
					t.Errorf("error %v, want one naming %q and containing %q", err, tt.name, tt.wantErr)
				}
				return
			}
			if err != nil || uid != tt.podUID || ctr != tt.container {
				t.Errorf("= (%q, %q, %v), want (%q, %q)", uid, ctr, err, tt.podUID, tt.container)
			}
		})
	}
}

func TestScanRoot(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	newer := time.Now().Add(-time.Minute)
	write := func(rel string, data []byte, mtime time.Time) string {
		path := filepath.Join(root, rel)
		writeFile(t, path, data)
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return path
	}
	v1 := monitortest.H200(monitortest.V1).Bytes()
	v0 := monitortest.H200(monitortest.V0).Bytes()

	// One healthy container.
	write("aaaa-1_main/1f0e.cache", v1, newer)
	// A container whose CUDA processes have not started yet.
	if err := os.MkdirAll(filepath.Join(root, "bbbb-2_idle"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The newest file is broken: fall back to the older one and say why.
	broken := write("cccc-3_worker/new.cache", []byte{1, 2, 3}, newer)
	write("cccc-3_worker/old.cache", v1, old)
	// More than two files (the upstream monitor gave up here): the newest
	// valid region wins, other files are ignored.
	write("dddd-4_sidecar/old.cache", v0, old)
	newest := write("dddd-4_sidecar/new.cache", v1, newer)
	write("dddd-4_sidecar/notes.txt", []byte("x"), newer)
	write("dddd-4_sidecar/lock", nil, newer)
	// A directory that is not a container's, and a stray file at the root.
	if err := os.MkdirAll(filepath.Join(root, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("stray.cache", v1, newer)
	// Only broken files.
	onlyBroken := write("eeee-5_bad/a.cache", make([]byte, 2_008_953), newer)

	scan, err := ScanRoot(root)
	if err != nil {
		t.Fatalf("ScanRoot: %v", err)
	}

	got := map[string]ContainerRegion{}
	for _, c := range scan.Containers {
		got[c.PodUID+"/"+c.Container] = c
	}
	if len(got) != 3 {
		t.Errorf("containers %v, want aaaa-1/main, cccc-3/worker, dddd-4/sidecar", keys(got))
	}
	if c, ok := got["aaaa-1/main"]; !ok || c.Region.Devices[0].Used.Total != 1_616_904_192 {
		t.Errorf("aaaa-1/main = %+v", c)
	}
	if c := got["cccc-3/worker"]; c.Region == nil || !strings.HasSuffix(c.Region.Path, "old.cache") {
		t.Errorf("cccc-3/worker should use old.cache, got %+v", c.Region)
	}
	if c := got["dddd-4/sidecar"]; c.Region == nil || c.Region.Path != newest || c.Region.Major != 1 || len(c.CacheFiles) != 2 {
		t.Errorf("dddd-4/sidecar should use %s (v1) of 2 cache files, got %+v", newest, c)
	}

	if len(scan.Waiting) != 1 || scan.Waiting[0].PodUID != "bbbb-2" || scan.Waiting[0].Container != "idle" {
		t.Errorf("Waiting = %+v, want bbbb-2/idle", scan.Waiting)
	}

	var problems []string
	for _, p := range scan.Problems {
		problems = append(problems, p.Error())
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{broken + ": 3 bytes, too short", "lost+found", onlyBroken + ": not initialised"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems do not mention %q:\n%s", want, all)
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3:\n%s", len(problems), all)
	}
}

func TestScanRootMissing(t *testing.T) {
	scan, err := ScanRoot(filepath.Join(t.TempDir(), "not-yet"))
	if err != nil || len(scan.Containers)+len(scan.Waiting)+len(scan.Problems) != 0 {
		t.Errorf("ScanRoot(missing) = %+v, %v; want an empty scan", scan, err)
	}
}

func keys(m map[string]ContainerRegion) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// What monitortest.WriteHolding leaves in a container's directory (the e2e writes it for a
// pod on the real node) is read as that container holding more than its limit on the GPU,
// with nothing else left in the directory.
func TestScanReadsWriteHolding(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "aaaa-1_main")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	const uuid = "GPU-00000000-0000-0000-0000-000000000007"
	if _, err := monitortest.WriteHolding(dir, uuid, 1200, 1000); err != nil {
		t.Fatal(err)
	}
	scan, err := ScanRoot(root)
	if err != nil || len(scan.Containers) != 1 || len(scan.Problems)+len(scan.Refused)+len(scan.Waiting) != 0 {
		t.Fatalf("scan = %+v, %v; want one container and nothing else", scan, err)
	}
	want := []Device{{UUID: uuid, LimitBytes: 1000 << 20, SMLimitPercent: 100,
		Used: Memory{Data: 1200 << 20, Total: 1200 << 20}, MonitorUsedBytes: 1200 << 20}}
	if got := scan.Containers[0].Region.Devices; !reflect.DeepEqual(got, want) {
		t.Errorf("devices %+v, want %+v", got, want)
	}
	if files := scan.Containers[0].CacheFiles; len(files) != 1 {
		t.Errorf("cache files %v, want only the region", files)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want only the region", entries, err)
	}
}
