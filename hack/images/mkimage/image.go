package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Spec describes one image.
type Spec struct {
	Tags       []string // image references written into the archive; at least one
	Output     string   // docker-archive tarball to write
	Entrypoint []string
	Cmd        []string
	Env        []string // KEY=VALUE, after a default PATH
	WorkingDir string
	User       string
	Labels     map[string]string
	Files      []Copy
	Symlinks   []Symlink
	// GzipLevel is the layer's gzip level (compress/gzip: 0 = stored, 1 = fastest ... 9).
	// Stored layers are larger but nearly free to unpack, which matters for a node that
	// imports them under an emulated CPU.
	GzipLevel int
}

// Copy puts the file or directory tree Src at Dest in the image. A Dest ending in "/" with a
// file Src means "into this directory".
type Copy struct{ Src, Dest string }

// Symlink adds a symbolic link Link -> Target.
type Symlink struct{ Link, Target string }

// defaultPath is the PATH every image gets before Spec.Env (which may override it).
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type entry struct {
	hdr tar.Header
	src string // regular files: where to read the content
}

// Build writes the image described by s and returns its digest.
func Build(s Spec) (v1.Hash, error) {
	if len(s.Tags) == 0 {
		return v1.Hash{}, errors.New("no image reference (-t)")
	}
	if s.Output == "" {
		return v1.Hash{}, errors.New("no output file (-o)")
	}
	refs := map[name.Reference]v1.Image{}
	var tags []name.Tag
	for _, t := range s.Tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("parse image reference %q: %w", t, err)
		}
		tags = append(tags, tag)
	}
	entries, err := collect(s)
	if err != nil {
		return v1.Hash{}, err
	}
	layerData, err := writeLayer(entries)
	if err != nil {
		return v1.Hash{}, err
	}
	if s.GzipLevel < gzip.NoCompression || s.GzipLevel > gzip.BestCompression {
		return v1.Hash{}, fmt.Errorf("gzip level %d out of range 0..9", s.GzipLevel)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, tarball.WithCompressionLevel(s.GzipLevel))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("make layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Env = append([]string{defaultPath}, s.Env...)
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.Cmd = s.Cmd
	cf.Config.WorkingDir = s.WorkingDir
	cf.Config.User = s.User
	if len(s.Labels) > 0 {
		cf.Config.Labels = s.Labels
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("set config: %w", err)
	}
	for _, t := range tags {
		refs[t] = img
	}
	tmp := s.Output + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		_ = os.Remove(tmp)
		return v1.Hash{}, fmt.Errorf("write %s: %w", s.Output, err)
	}
	if err := os.Rename(tmp, s.Output); err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", s.Output, err)
	}
	return img.Digest()
}

// collect walks every source and returns the layer's entries, parents first, sorted by path.
// A later source replaces an earlier entry with the same path.
func collect(s Spec) ([]entry, error) {
	t := layerTree{}
	// every image gets a world-writable /tmp (with the sticky bit) and /etc
	t["/tmp"] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "/tmp/", Mode: 0o1777}}
	t.dir("/etc", 0o755)
	for _, c := range s.Files {
		if err := t.copy(c); err != nil {
			return nil, err
		}
	}
	for _, l := range s.Symlinks {
		t.add(path.Clean("/"+l.Link), entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Linkname: l.Target, Mode: 0o777}})
	}
	return t.sorted(), nil
}

// layerTree is the layer's entries by absolute path.
type layerTree map[string]entry

// dir adds directory p unless an entry is there already.
func (t layerTree) dir(p string, mode int64) {
	if _, ok := t[p]; !ok {
		t[p] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode}}
	}
}

// add puts e at dest, replacing what was there, with its missing parents.
func (t layerTree) add(dest string, e entry) {
	for d := path.Dir(dest); d != "/" && d != "."; d = path.Dir(d) {
		t.dir(d, 0o755)
	}
	e.hdr.Name = dest
	if e.hdr.Typeflag == tar.TypeDir {
		e.hdr.Name += "/"
	}
	t[dest] = e
}

// copy adds a source file, or a source directory's tree, at its destination.
func (t layerTree) copy(c Copy) error {
	st, err := os.Stat(c.Src)
	if err != nil {
		return fmt.Errorf("read source %s: %w", c.Src, err)
	}
	dest := path.Clean("/" + c.Dest)
	if !st.IsDir() {
		if strings.HasSuffix(c.Dest, "/") {
			dest = path.Join(dest, filepath.Base(c.Src))
		}
		t.add(dest, entry{hdr: tar.Header{Typeflag: tar.TypeReg, Mode: int64(st.Mode().Perm()), Size: st.Size()}, src: c.Src})
		return nil
	}
	err = filepath.WalkDir(c.Src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(c.Src, p)
		if err != nil {
			return err
		}
		return t.addWalked(p, path.Join(dest, filepath.ToSlash(rel)), d)
	})
	if err != nil {
		return fmt.Errorf("copy %s: %w", c.Src, err)
	}
	return nil
}

// addWalked adds the walked file p (a directory, symlink or regular file) at target.
func (t layerTree) addWalked(p, target string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	switch {
	case d.IsDir():
		if target != "/" {
			t.add(target, entry{hdr: tar.Header{Typeflag: tar.TypeDir, Mode: int64(info.Mode().Perm())}})
		}
	case info.Mode()&fs.ModeSymlink != 0:
		l, err := os.Readlink(p)
		if err != nil {
			return err
		}
		t.add(target, entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Linkname: l, Mode: 0o777}})
	case info.Mode().IsRegular():
		t.add(target, entry{hdr: tar.Header{Typeflag: tar.TypeReg, Mode: int64(info.Mode().Perm()), Size: info.Size()}, src: p})
	default:
		return fmt.Errorf("%s: unsupported file type %s", p, info.Mode().Type())
	}
	return nil
}

// sorted returns the entries by path, names relative, times zero, in PAX format.
func (t layerTree) sorted() []entry {
	paths := make([]string, 0, len(t))
	for p := range t {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out := make([]entry, 0, len(paths))
	for _, p := range paths {
		e := t[p]
		e.hdr.Name = strings.TrimPrefix(e.hdr.Name, "/")
		e.hdr.ModTime = time.Unix(0, 0)
		e.hdr.Format = tar.FormatPAX
		out = append(out, e)
	}
	return out
}

func writeLayer(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("write layer entry %s: %w", hdr.Name, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if err := copyFile(tw, e.src, hdr.Size); err != nil {
			return nil, fmt.Errorf("write layer entry %s: %w", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("finish layer: %w", err)
	}
	return buf.Bytes(), nil
}

func copyFile(w io.Writer, src string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to flush
	n, err := io.Copy(w, f)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s changed size while being copied (%d != %d bytes)", src, n, size)
	}
	return nil
}
