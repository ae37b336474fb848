//go:build linux

package monitor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor/monitortest"
)

// What a pod author can put in the container's cache directory (it is
// world-writable and mounted at /tmp/vgpu) must never block a scrape nor
// lead the plugin, which runs as root, to a file outside the directory.

// within runs f and fails the test if it has not returned by the deadline:
// a scan that blocks on a FIFO would never return.
func within[T any](t *testing.T, limit time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(limit):
		t.Fatalf("did not return within %s", limit)
		panic("unreachable")
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func joinErrors(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

// setNewest makes path the newest file of its directory, so that the scan
// tries it before the others.
func setNewest(t *testing.T, path string) {
	t.Helper()
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

func TestScanHostileEntries(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	good := monitortest.H200(monitortest.V1).Bytes()
	// A valid region outside the cache root: were a link followed, it
	// would show up as the container's region.
	writeFile(t, filepath.Join(outside, "elsewhere.cache"), good)
	writeFile(t, filepath.Join(outside, "ctr", "a.cache"), good)

	const (
		uidFIFO    = "aaaa-1"
		uidLink    = "bbbb-2"
		uidPasswd  = "cccc-3"
		uidDirLink = "dddd-4"
		uidMany    = "eeee-5"
		uidHuge    = "ffff-6"
		uidTrunc   = "abab-7"
	)
	// A FIFO named like a region, newer than the real region beside it.
	fifo := filepath.Join(root, uidFIFO+"_main", "x.cache")
	writeFile(t, filepath.Join(root, uidFIFO+"_main", "real.cache"), good)
	mkfifo(t, fifo)
	// Links to a host file and to a valid region outside the directory.
	link := filepath.Join(root, uidLink+"_main", "x.cache")
	symlink(t, filepath.Join(outside, "elsewhere.cache"), link)
	passwd := filepath.Join(root, uidPasswd+"_main", "x.cache")
	symlink(t, "/etc/passwd", passwd)
	// A container directory that is a link to a directory elsewhere.
	dirLink := filepath.Join(root, uidDirLink+"_main")
	symlink(t, filepath.Join(outside, "ctr"), dirLink)
	// More entries than HAMi-core ever writes.
	many := filepath.Join(root, uidMany+"_main")
	for i := 0; i <= maxDirEntries; i++ {
		writeFile(t, filepath.Join(many, strconv.Itoa(i)+".cache"), nil)
	}
	// A sparse file far larger than any region, and a truncated one.
	huge := filepath.Join(root, uidHuge+"_main", "x.cache")
	writeFile(t, huge, good)
	if err := os.Truncate(huge, 1<<40); err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(root, uidTrunc+"_main", "x.cache")
	writeFile(t, trunc, good[:100_000])

	scan := within(t, 10*time.Second, func() Scan {
		s, err := ScanRoot(root)
		if err != nil {
			t.Errorf("ScanRoot: %v", err)
		}
		return s
	})

	if len(scan.Containers) != 1 || scan.Containers[0].PodUID != uidFIFO ||
		!strings.HasSuffix(scan.Containers[0].Region.Path, "real.cache") {
		t.Errorf("containers %+v, want only %s read from real.cache", scan.Containers, uidFIFO)
	}
	refused := joinErrors(scan.Refused)
	for _, want := range []string{
		fifo + ": not a regular file (FIFO)",
		link + ": not a regular file (symbolic link)",
		passwd + ": not a regular file (symbolic link)",
		dirLink + ": symbolic link in the cache root; not followed",
		many + ": more than 256 entries",
		huge + ": 1099511627776 bytes, larger than any HAMi-core region",
	} {
		if !strings.Contains(refused, want) {
			t.Errorf("refused entries do not mention %q:\n%s", want, refused)
		}
	}
	if len(scan.Refused) != 6 {
		t.Errorf("%d refused entries, want 6:\n%s", len(scan.Refused), refused)
	}
	if problems := joinErrors(scan.Problems); !strings.Contains(problems, trunc+": version 1.2 region is 100000 bytes") {
		t.Errorf("problems do not report the truncated region:\n%s", problems)
	}
	if scan.Unread != 0 {
		t.Errorf("Unread = %d, want 0", scan.Unread)
	}
}

// The listing already refuses what is not a regular file; a name swapped
// between the listing and the open must be refused by the open itself,
// without blocking and without following a link.
func TestReadRegionAtRefusesSwappedEntries(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "region.cache")
	writeFile(t, outside, monitortest.H200(monitortest.V1).Bytes())
	mkfifo(t, filepath.Join(dir, "fifo.cache"))
	symlink(t, outside, filepath.Join(dir, "link.cache"))
	symlink(t, "/etc/passwd", filepath.Join(dir, "passwd.cache"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(dir, "sub"), filepath.Join(dir, "dirlink"))

	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, want := range map[string]string{
		"fifo.cache":   "not a regular file (FIFO)",
		"link.cache":   "symbolic link; not followed",
		"passwd.cache": "symbolic link; not followed",
	} {
		path := filepath.Join(dir, name)
		err := within(t, 10*time.Second, func() error {
			_, err := readRegionAt(f, name, path)
			return err
		})
		if err == nil || !isRefusal(err) || !strings.Contains(err.Error(), path+": "+want) {
			t.Errorf("readRegionAt(%s) = %v, want a refusal %q", name, err, want)
		}
		// ReadRegion by path refuses the same way.
		err = within(t, 10*time.Second, func() error {
			_, err := ReadRegion(path)
			return err
		})
		if err == nil || !isRefusal(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadRegion(%s) = %v, want a refusal %q", name, err, want)
		}
	}
	if d, err := openContainerDir(f, "dirlink"); err == nil || !isRefusal(err) {
		if d != nil {
			d.Close()
		}
		t.Errorf("openContainerDir(link to a directory) = %v, want a refusal", err)
	}
	if d, err := openContainerDir(f, "sub"); err != nil {
		t.Errorf("openContainerDir(directory): %v", err)
	} else {
		d.Close()
	}
}

// A file longer than any region is read no further than the largest one.
func TestReadRegionLongFile(t *testing.T) {
	if got, want := mapLength(1<<30), layoutV1.structSize+1; got != want {
		t.Errorf("mapLength(1 GiB) = %d, want %d", got, want)
	}
	if got := mapLength(100); got != 100 {
		t.Errorf("mapLength(100) = %d, want 100", got)
	}
	path := filepath.Join(t.TempDir(), "long.cache")
	data := append(monitortest.H200(monitortest.V1).Bytes(), make([]byte, 3<<20)...)
	writeFile(t, path, data)
	r, err := ReadRegion(path)
	if err != nil || r.Major != 1 || r.Devices[0].Used.Total != 1_616_904_192 {
		t.Errorf("ReadRegion(region + 3 MiB) = %+v, %v; want the region", r, err)
	}
}

// expiringContext is done once Err has been asked n times: the scan checks
// it before each directory and each file, so the test decides exactly
// where the budget runs out.
type expiringContext struct {
	context.Context
	calls, n int
}

func (c *expiringContext) Err() error {
	c.calls++
	if c.calls > c.n {
		return context.DeadlineExceeded
	}
	return nil
}

func TestScanStopsWhenBudgetIsSpent(t *testing.T) {
	root := t.TempDir()
	good := monitortest.H200(monitortest.V1).Bytes()
	for _, uid := range []string{"aaaa-1", "bbbb-2", "cccc-3"} {
		writeFile(t, filepath.Join(root, uid+"_main", "a.cache"), good)
	}
	// Directory 1 and its file, then directory 2: the budget is spent
	// before directory 2's file.
	ctx := &expiringContext{Context: context.Background(), n: 3}
	scan, err := ScanRootContext(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Containers) != 1 || scan.Containers[0].PodUID != "aaaa-1" {
		t.Errorf("containers %+v, want only aaaa-1", scan.Containers)
	}
	// bbbb-2's file, and the directory cccc-3.
	if scan.Unread != 2 {
		t.Errorf("Unread = %d, want 2", scan.Unread)
	}
}

// A scrape with a FIFO in a container directory returns, serves the other
// containers, and is bounded by the budget.
func TestCollectorWithFIFO(t *testing.T) {
	root := metricsRoot(t)
	fifo := filepath.Join(root, uidTrainer+"_main", "z.cache")
	mkfifo(t, fifo)
	setNewest(t, fifo)
	c := NewCollector(root, nil, metricsPods)
	n := within(t, 10*time.Second, func() int { return testutil.CollectAndCount(c) })
	// The 18 container series of the golden test, as without the FIFO.
	if n != 18 {
		t.Errorf("%d series, want 18", n)
	}

	// A spent budget leaves every region unread, and the scrape still
	// returns.
	c.scanContext = func(time.Duration) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d series with a spent budget, want 0", n)
	}
}
