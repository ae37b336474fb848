package hook

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInstallCopiesAndReplacesWhole(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "vgpu")
	for _, f := range Files {
		if err := os.WriteFile(filepath.Join(src, f), []byte("new "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "libvgpu.so"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second run finds everything in place
		if err := Install(src, dst); err != nil {
			t.Fatal(err)
		}
		for _, f := range Files {
			got, err := os.ReadFile(filepath.Join(dst, f))
			if err != nil || string(got) != "new "+f {
				t.Errorf("%s = %q (%v), want %q", f, got, err, "new "+f)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dst, "*.installing")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestInstallWithoutImageFilesKeepsTheHost(t *testing.T) {
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "libvgpu.so"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Install(filepath.Join(t.TempDir(), "absent"), dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "libvgpu.so")); string(got) != "host" {
		t.Errorf("libvgpu.so = %q, want the host's", got)
	}
}

func TestInstallNamesAMissingImageFile(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "libvgpu.so"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Install(src, t.TempDir()); err == nil {
		t.Error("an image with libvgpu.so but no ld.so.preload was accepted")
	}
}
