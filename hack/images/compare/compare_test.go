package compare

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// merged builds a Debian-style (merged /usr) image from path -> content ("->x" is a symlink to x).
func merged(files map[string]string) *Image {
	im := &Image{Files: map[string]*File{}}
	for _, d := range []string{"/", "/usr", "/usr/lib", "/usr/bin", "/etc"} {
		im.Files[d] = &File{Mode: fs.ModeDir | 0o755}
	}
	im.Files["/lib"] = &File{Mode: fs.ModeSymlink | 0o777, Link: "usr/lib"}
	for p, c := range files {
		for d := p; d != "/"; {
			d = d[:strings.LastIndex(d, "/")]
			if d == "" {
				break
			}
			if _, ok := im.Files[d]; !ok {
				im.Files[d] = &File{Mode: fs.ModeDir | 0o755}
			}
		}
		if t, ok := strings.CutPrefix(c, "->"); ok {
			im.Files[p] = &File{Mode: fs.ModeSymlink | 0o777, Link: t}
		} else {
			im.Files[p] = &File{Mode: 0o755, Data: []byte(c)}
		}
	}
	return im
}

func TestResolve(t *testing.T) {
	im := merged(map[string]string{
		"/usr/lib/x/libfoo.so.1.2": "foo",
		"/usr/lib/x/libfoo.so.1":   "->libfoo.so.1.2",
		"/usr/lib/x/prov/p.so":     "->../libfoo.so.1",
		"/usr/bin/abs":             "->/lib/x/libfoo.so.1",
		"/usr/bin/loop":            "->loop",
		"/usr/bin/dangling":        "->nowhere",
	})
	for _, tc := range []struct{ in, want, err string }{
		{in: "/usr/lib/x/libfoo.so.1.2", want: "/usr/lib/x/libfoo.so.1.2"},
		{in: "/lib/x/libfoo.so.1", want: "/usr/lib/x/libfoo.so.1.2"},
		{in: "/lib/x/prov/p.so", want: "/usr/lib/x/libfoo.so.1.2"},
		{in: "/usr/bin/abs", want: "/usr/lib/x/libfoo.so.1.2"},
		{in: "/lib", want: "/usr/lib"},
		{in: "/usr/bin/loop", err: "too many levels"},
		{in: "/usr/bin/dangling", err: "/usr/bin/nowhere does not exist"},
		{in: "/lib/x/libbar.so.1", err: "/usr/lib/x/libbar.so.1 does not exist"},
	} {
		got, _, err := im.Resolve(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%s) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, _, err := im.Regular("/usr/lib"); err == nil {
		t.Error("Regular of a directory: no error")
	}
}

// hostImage copies a real executable and the libraries it needs from this host into a
// merged-/usr image, leaving out the files named in without.
func hostImage(t *testing.T, bin string, libs []string, without ...string) *Image {
	t.Helper()
	files := map[string]string{}
	for _, p := range append([]string{bin}, libs...) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("host file %s: %v (the test reads real ELF files: apt-get install ibverbs-utils)", p, err)
		}
		if !slices.Contains(without, p) {
			files[strings.Replace(p, "/lib/", "/usr/lib/", 1)] = string(data)
		}
	}
	return merged(files)
}

func TestClosure(t *testing.T) {
	ma := Multiarch()
	libs := []string{"/lib/" + ma + "/libibverbs.so.1", "/lib/" + ma + "/libnl-3.so.200",
		"/lib/" + ma + "/libnl-route-3.so.200", "/lib/" + ma + "/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if Multiarch() != "x86_64-linux-gnu" {
		t.Skip("the host libraries listed are x86_64's")
	}
	for _, tc := range []struct {
		name    string
		without []string
		want    []string // problems, by substring
	}{
		{name: "complete"},
		{name: "no libibverbs", without: libs[:1], want: []string{"needs shared library libibverbs.so.1 not found"}},
		{name: "no libnl-route (needed by libibverbs)", without: libs[2:3],
			want: []string{"libibverbs.so.1 needs shared library libnl-route-3.so.200 not found"}},
		{name: "no loader", without: libs[4:], want: []string{"ibv_devinfo: loader", "libc.so.6: loader",
			"libc.so.6 needs shared library ld-linux-x86-64.so.2 not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := hostImage(t, "/usr/bin/ibv_devinfo", libs, tc.without...)
			found, problems := im.Closure([]string{"/usr/bin/ibv_devinfo"})
			if len(problems) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", problems, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %q, want it to say %q", problems[i], w)
				}
			}
			if len(tc.want) == 0 && found["libibverbs.so.1"] != "/lib/"+ma+"/libibverbs.so.1" {
				t.Errorf("libibverbs.so.1 found at %q", found["libibverbs.so.1"])
			}
		})
	}
}

func TestReadELF(t *testing.T) {
	for _, tc := range []struct {
		file   string
		interp bool
		needs  string
	}{
		{file: "/bin/busybox"}, // busybox-static: no loader, no libraries
		{file: "/usr/bin/ibv_devinfo", interp: true, needs: "libibverbs.so.1"},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Skipf("%v (setup installs busybox-static and ibverbs-utils)", err)
		}
		info, err := ReadELF(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if (info.Interp != "") != tc.interp || tc.needs == "" && len(info.Needed) > 0 ||
			tc.needs != "" && !slices.Contains(info.Needed, tc.needs) {
			t.Errorf("%s: interp %q needs %v; want interp %v, needs %q", tc.file, info.Interp, info.Needed, tc.interp, tc.needs)
		}
	}
	if _, err := ReadELF([]byte("#!/bin/sh\n")); err == nil {
		t.Error("ReadELF of a script: no error")
	}
}

func TestConfigDiff(t *testing.T) {
	base := v1.Config{Entrypoint: []string{"/operator"}, User: "65532:65532",
		Labels: map[string]string{"org.opencontainers.image.version": "abc", "io.buildah.version": "1.28"}}
	for _, tc := range []struct {
		name   string
		change func(c *v1.Config)
		want   string
	}{
		{name: "same, other builder label", change: func(c *v1.Config) { c.Labels = map[string]string{"org.opencontainers.image.version": "abc"} }},
		{name: "entrypoint", change: func(c *v1.Config) { c.Entrypoint = []string{"/plugin"} }, want: "entrypoint"},
		{name: "cmd", change: func(c *v1.Config) { c.Cmd = []string{"bash"} }, want: "cmd"},
		{name: "user", change: func(c *v1.Config) { c.User = "" }, want: "user"},
		{name: "version label", change: func(c *v1.Config) { c.Labels = map[string]string{"org.opencontainers.image.version": "def"} }, want: "labels"},
	} {
		c := base
		tc.change(&c)
		d := ConfigDiff(base, c)
		if tc.want == "" && len(d) > 0 || tc.want != "" && (len(d) != 1 || !strings.HasPrefix(d[0], tc.want)) {
			t.Errorf("%s: diff %q, want %q", tc.name, d, tc.want)
		}
	}
	if d := ConfigDiff(v1.Config{User: ""}, v1.Config{User: "0"}); len(d) > 0 {
		t.Errorf("root spelled two ways: %q", d)
	}
}

func TestBuildInfoDiff(t *testing.T) {
	mk := func() *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/ringcap/ringcap/cmd/plugin",
			Main:     debug.Module{Path: "github.com/ringcap/ringcap", Version: "(devel)"},
			Deps:     []*debug.Module{{Path: "github.com/spf13/cobra", Version: "v1.9.1", Sum: "h1:a"}},
			Settings: []debug.BuildSetting{{Key: "CGO_ENABLED", Value: "0"}, {Key: "-trimpath", Value: "true"}}}
	}
	for _, tc := range []struct {
		name   string
		change func(b *debug.BuildInfo)
		want   []string
	}{
		{name: "same", change: func(*debug.BuildInfo) {}},
		{name: "toolchain", change: func(b *debug.BuildInfo) { b.GoVersion = "go1.26.1" }, want: []string{"go version"}},
		{name: "package", change: func(b *debug.BuildInfo) { b.Path += "x" }, want: []string{"main package"}},
		{name: "dependency sum", change: func(b *debug.BuildInfo) { b.Deps[0].Sum = "h1:b" },
			want: []string{"dependency \"github.com/spf13/cobra@v1.9.1 h1:a\" only in the first",
				"dependency \"github.com/spf13/cobra@v1.9.1 h1:b\" only in the second"}},
		{name: "cgo", change: func(b *debug.BuildInfo) { b.Settings[0].Value = "1" },
			want: []string{"setting \"CGO_ENABLED=0\" only in the first", "setting \"CGO_ENABLED=1\" only in the second"}},
		{name: "replace", change: func(b *debug.BuildInfo) { b.Main.Replace = &debug.Module{Path: "../x"} }, want: []string{"main module"}},
	} {
		b := mk()
		tc.change(b)
		d := BuildInfoDiff(mk(), b)
		if len(d) != len(tc.want) {
			t.Errorf("%s: diff %q, want %q", tc.name, d, tc.want)
			continue
		}
		for i := range d {
			if !strings.HasPrefix(d[i], tc.want[i]) {
				t.Errorf("%s: diff %q, want %q", tc.name, d[i], tc.want[i])
			}
		}
	}
}

func TestShellsAndPasswd(t *testing.T) {
	im := merged(map[string]string{"/plugin": "x"})
	if sh := im.Shells(); len(sh) != 0 {
		t.Errorf("static image: shells %v", sh)
	}
	im = merged(map[string]string{"/bin/busybox": "x", "/bin/sh": "->busybox",
		"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nringcap:x:65532:65532:ringcap:/tmp:/bin/sh\n"})
	if sh := im.Shells(); !slices.Equal(sh, []string{"/bin/busybox", "/bin/sh"}) {
		t.Errorf("shells %v", sh)
	}
	if u := im.PasswdUser("65532"); !strings.HasPrefix(u, "ringcap:") {
		t.Errorf("uid 65532: %q", u)
	}
	if u := im.PasswdUser("1000"); u != "" {
		t.Errorf("uid 1000: %q", u)
	}
}

func TestReadTree(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "usr/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/a", Typeflag: tar.TypeReg, Mode: 0o755, Size: 3},
		{Name: "usr/bin/b", Typeflag: tar.TypeLink, Linkname: "usr/bin/a"},
		{Name: "bin", Typeflag: tar.TypeSymlink, Linkname: "usr/bin"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write([]byte("abc"))
		}
	}
	_ = tw.Close()
	files, err := readTree(&buf)
	if err != nil {
		t.Fatal(err)
	}
	im := &Image{Files: files}
	if _, data, err := im.Regular("/bin/b"); err != nil || string(data) != "abc" {
		t.Errorf("hard link through a symlinked directory: %q, %v", data, err)
	}
	var bad bytes.Buffer
	tw = tar.NewWriter(&bad)
	_ = tw.WriteHeader(&tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "a"})
	_ = tw.Close()
	if _, err := readTree(&bad); err == nil {
		t.Error("hard link to a missing file: no error")
	}
}
