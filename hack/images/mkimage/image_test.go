package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tree builds a small source tree: a binary, a directory with a nested file and a relative symlink.
func tree(t *testing.T) (bin, dir string) {
	t.Helper()
	root := t.TempDir()
	bin = filepath.Join(root, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "rootfs")
	if err := os.MkdirAll(filepath.Join(dir, "usr/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr/lib/libx.so.1.2"), []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libx.so.1.2", filepath.Join(dir, "usr/lib/libx.so.1")); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

type fileInfo struct {
	typ  byte
	mode int64
	link string
	body string
}

func readImage(t *testing.T, path, tag string) (map[string]fileInfo, []string, []string, string) {
	t.Helper()
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		t.Fatalf("read back %s as %s: %v", path, tag, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]fileInfo{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: owner %d:%d mtime %v, want 0:0 at the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		files[h.Name] = fileInfo{typ: h.Typeflag, mode: h.Mode, link: h.Linkname, body: string(b)}
	}
	return files, cf.Config.Entrypoint, cf.Config.Env, cf.Config.User
}

func TestBuildRoundTrip(t *testing.T) {
	bin, dir := tree(t)
	out := filepath.Join(t.TempDir(), "img.tar")
	err := run([]string{"-t", "ringcap/test:v1", "-t", "ringcap/test:latest", "-o", out,
		"-entrypoint", `["/bin/tool","--flag"]`, "-env", "A=B", "-user", "65532:65532",
		"-symlink", "/bin/sh=busybox", bin + ":/bin/tool", dir + ":/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"ringcap/test:v1", "ringcap/test:latest"} {
		files, entry, env, user := readImage(t, out, tag)
		if !reflect.DeepEqual(entry, []string{"/bin/tool", "--flag"}) {
			t.Errorf("entrypoint %q", entry)
		}
		if !reflect.DeepEqual(env, []string{defaultPath, "A=B"}) {
			t.Errorf("env %q", env)
		}
		if user != "65532:65532" {
			t.Errorf("user %q", user)
		}
		want := map[string]fileInfo{
			"bin":                 {typ: tar.TypeDir, mode: 0o755},
			"bin/tool":            {typ: tar.TypeReg, mode: 0o755, body: "#!/bin/true\n"},
			"bin/sh":              {typ: tar.TypeSymlink, mode: 0o777, link: "busybox"},
			"etc":                 {typ: tar.TypeDir, mode: 0o755},
			"tmp":                 {typ: tar.TypeDir, mode: 0o1777},
			"usr":                 {typ: tar.TypeDir, mode: 0o755},
			"usr/lib":             {typ: tar.TypeDir, mode: 0o755},
			"usr/lib/libx.so.1.2": {typ: tar.TypeReg, mode: 0o644, body: "ELF"},
			"usr/lib/libx.so.1":   {typ: tar.TypeSymlink, mode: 0o777, link: "libx.so.1.2"},
		}
		if !reflect.DeepEqual(files, want) {
			t.Errorf("image %s files:\n got %v\nwant %v", tag, files, want)
		}
	}
}

func TestBuildIsReproducible(t *testing.T) {
	bin, dir := tree(t)
	spec := Spec{Tags: []string{"ringcap/test:v1"}, Files: []Copy{{Src: bin, Dest: "/bin/"}, {Src: dir, Dest: "/"}}, GzipLevel: 0}
	spec.Output = filepath.Join(t.TempDir(), "a.tar")
	d1, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	// touch every source: timestamps must not leak into the image
	now := mustNow(t, bin)
	if err := os.Chtimes(filepath.Join(dir, "usr/lib/libx.so.1.2"), now, now); err != nil {
		t.Fatal(err)
	}
	spec.Output = filepath.Join(t.TempDir(), "b.tar")
	d2, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Fatalf("same inputs, different digests: %s != %s", d1, d2)
	}
	files, _, _, _ := readImage(t, spec.Output, "ringcap/test:v1")
	if f, ok := files["bin/tool"]; !ok || f.typ != tar.TypeReg {
		t.Errorf("a file SRC with DEST ending in / must land inside that directory: %v", files)
	}
}

func mustNow(t *testing.T, p string) time.Time {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime().Add(3600e9)
}

func TestRunRejectsBadInput(t *testing.T) {
	bin, _ := tree(t)
	out := filepath.Join(t.TempDir(), "x.tar")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", out, bin + ":/x"}, "no image reference"},
		{[]string{"-t", "a/b:c", bin + ":/x"}, "no output file"},
		{[]string{"-t", "a/b:c", "-o", out}, "nothing to put in the image"},
		{[]string{"-t", "a/b:c", "-o", out, "justasource"}, "is not SRC:DEST"},
		{[]string{"-t", "a/b:c", "-o", out, "/does/not/exist:/x"}, "read source /does/not/exist"},
		{[]string{"-t", "Bad Ref", "-o", out, bin + ":/x"}, `parse image reference "Bad Ref"`},
		{[]string{"-t", "a/b:c", "-o", out, "-symlink", "nolink", bin + ":/x"}, "is not LINK=TARGET"},
		{[]string{"-t", "a/b:c", "-o", out, "-entrypoint", "[oops", bin + ":/x"}, "parse -entrypoint"},
		{[]string{"-t", "a/b:c", "-o", out, "-gzip-level", "12", bin + ":/x"}, "gzip level 12 out of range"},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed build left %s behind (%v)", out, err)
	}
}
