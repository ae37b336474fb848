// Command imagebuild writes a container image as an OCI archive without a Docker engine or a
// registry, with go-containerregistry: one reproducible layer (owner root, mtime 0) holding the
// files it is given, on an empty base, plus the shared libraries a cgo binary loads (taken
// from this machine, as a distroless base would carry them).
//
//	imagebuild -ref localhost/vc-scheduler:dev -out vc-scheduler.tar \
//	  -file bin/vc-scheduler:/vc-scheduler -entrypoint /vc-scheduler -user 65532:65532 \
//	  -label org.opencontainers.image.version=dev
//
// -symlink DST:TARGET adds a symbolic link (the tests' image that points HAMi-core's paths
// elsewhere, as a hostile image would).
//
// The archive is what `ctr images import` and `docker load` take; the index carries the
// image's name for containerd.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type spec struct {
	ref, out, user string
	entrypoint     listFlag
	args           listFlag
	files          listFlag // SRC:DST, DST absolute; SRC a file
	symlinks       listFlag // DST:TARGET, DST absolute
	labels         listFlag // KEY=VALUE
	env            listFlag // KEY=VALUE
	sharedLibsOf   listFlag // binaries whose shared libraries (ldd) go into the image
}

func main() {
	var s spec
	flag.StringVar(&s.ref, "ref", "", "image name, e.g. localhost/vc-scheduler:dev")
	flag.StringVar(&s.out, "out", "", "OCI archive to write")
	flag.StringVar(&s.user, "user", "", "user[:group] the image runs as (empty: root)")
	flag.Var(&s.entrypoint, "entrypoint", "entrypoint element (repeatable)")
	flag.Var(&s.args, "arg", "default argument (repeatable)")
	flag.Var(&s.files, "file", "SRC:DST file to add (repeatable)")
	flag.Var(&s.symlinks, "symlink", "DST:TARGET symbolic link to add (repeatable)")
	flag.Var(&s.labels, "label", "KEY=VALUE image label (repeatable)")
	flag.Var(&s.env, "env", "KEY=VALUE environment variable (repeatable)")
	flag.Var(&s.sharedLibsOf, "shared-libs-of", "add the shared libraries this file (one of the added sources) loads (repeatable)")
	flag.Parse()
	if err := build(s); err != nil {
		fmt.Fprintf(os.Stderr, "imagebuild %s: %v\n", s.ref, err)
		os.Exit(1)
	}
}

func build(s spec) error {
	if s.ref == "" || s.out == "" || len(s.entrypoint) == 0 {
		return fmt.Errorf("-ref, -out and -entrypoint are required")
	}
	files := map[string]string{} // DST -> SRC
	for _, f := range s.files {
		src, dst, ok := strings.Cut(f, ":")
		if !ok || !path.IsAbs(dst) {
			return fmt.Errorf("-file %q: want SRC:/absolute/DST", f)
		}
		files[path.Clean(dst)] = src
	}
	for _, bin := range s.sharedLibsOf {
		libs, err := sharedLibraries(bin)
		if err != nil {
			return err
		}
		for _, l := range libs {
			files[l] = l
		}
	}
	links := map[string]string{} // DST -> TARGET
	for _, l := range s.symlinks {
		dst, target, ok := strings.Cut(l, ":")
		if !ok || !path.IsAbs(dst) || target == "" {
			return fmt.Errorf("-symlink %q: want /absolute/DST:TARGET", l)
		}
		links[path.Clean(dst)] = target
	}
	layerTar, err := layerOf(files, links)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return err
	}
	labels := map[string]string{}
	for _, l := range s.labels {
		k, v, _ := strings.Cut(l, "=")
		labels[k] = v
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Config = v1.Config{Entrypoint: s.entrypoint, Cmd: s.args, User: s.user, Labels: labels,
		Env: append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/"}, s.env...)}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return writeArchive(img, s.ref, s.out)
}

// layerOf is a tar of the files (DST -> SRC), the symbolic links (DST -> TARGET) and their
// parent directories, sorted, owned by root, dated 0, so the same inputs give the same digest.
func layerOf(files, links map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	dsts := make([]string, 0, len(files)+len(links))
	for d := range files {
		dsts = append(dsts, d)
	}
	for d := range links {
		if _, ok := files[d]; ok {
			return nil, fmt.Errorf("%s is both a file and a symbolic link", d)
		}
		dsts = append(dsts, d)
	}
	sort.Strings(dsts)
	for _, dst := range dsts {
		var parents []string
		for p := path.Dir(dst); p != "/" && !dirs[p]; p = path.Dir(p) {
			dirs[p] = true
			parents = append([]string{p}, parents...)
		}
		for _, p := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		if target, ok := links[dst]; ok {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(dst, "/"), Linkname: target,
				Mode: 0o777, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(files[dst])
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(files[dst])
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := addFile(tw, strings.TrimPrefix(dst, "/"), mode, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// addFile writes one regular file, owned by root and dated 0 like everything the archives hold.
func addFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// lddLine matches "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and the loader's
// "/lib64/ld-linux-x86-64.so.2 (0x...)".
var lddLine = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)`)

// sharedLibraries lists the absolute paths of the libraries bin loads at start (none for a
// static binary).
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %v: %s", bin, err, out)
	}
	var libs []string
	for _, m := range lddLine.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, filepath.Clean(m[1]))
	}
	return libs, nil
}

// writeArchive writes img as an OCI image layout, tarred, named ref for containerd.
func writeArchive(img v1.Image, ref, out string) error {
	dir, err := os.MkdirTemp("", "imagebuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// tarDir writes the directory's regular files as a tar, in a fixed order and with fixed
// metadata.
func tarDir(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		if err := addFile(tw, filepath.ToSlash(n), 0o644, data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
