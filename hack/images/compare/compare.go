package compare

import (
	"crypto/sha256"
	"fmt"
	"path"
	"runtime/debug"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ConfigDiff lists how two image configurations differ in what ringcap's images define: the
// entrypoint, the default arguments, the user and the org.opencontainers.image.* labels
// (builders add labels of their own, e.g. io.buildah.version).
func ConfigDiff(a, b v1.Config) []string {
	var d []string
	if !slices.Equal(a.Entrypoint, b.Entrypoint) {
		d = append(d, fmt.Sprintf("entrypoint %q != %q", a.Entrypoint, b.Entrypoint))
	}
	if !slices.Equal(a.Cmd, b.Cmd) {
		d = append(d, fmt.Sprintf("cmd %q != %q", a.Cmd, b.Cmd))
	}
	if userOrRoot(a.User) != userOrRoot(b.User) {
		d = append(d, fmt.Sprintf("user %q != %q", a.User, b.User))
	}
	la, lb := ociLabels(a.Labels), ociLabels(b.Labels)
	if la != lb {
		d = append(d, fmt.Sprintf("labels %s != %s", la, lb))
	}
	return d
}

// userOrRoot: an empty user runs as root, like "0" or "root".
func userOrRoot(u string) string {
	if u == "" || u == "0" || u == "root" {
		return "root"
	}
	return u
}

func ociLabels(l map[string]string) string {
	var kv []string
	for k, v := range l {
		if strings.HasPrefix(k, "org.opencontainers.image.") {
			kv = append(kv, k+"="+v)
		}
	}
	slices.Sort(kv)
	return "[" + strings.Join(kv, " ") + "]"
}

// BuildInfoDiff lists how the Go build information of two binaries differs: toolchain, main
// package and module, every dependency with its checksum, and every build setting (flags, cgo,
// GOOS/GOARCH, the version stamp in -ldflags, vcs stamps when present).
func BuildInfoDiff(a, b *debug.BuildInfo) []string {
	var d []string
	cmp := func(what, x, y string) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %q != %q", what, x, y))
		}
	}
	cmp("go version", a.GoVersion, b.GoVersion)
	cmp("main package", a.Path, b.Path)
	cmp("main module", modString(&a.Main), modString(&b.Main))
	d = append(d, listDiff("dependency", depStrings(a.Deps), depStrings(b.Deps))...)
	d = append(d, listDiff("setting", settingStrings(a.Settings), settingStrings(b.Settings))...)
	return d
}

func modString(m *debug.Module) string {
	if m == nil {
		return ""
	}
	s := m.Path + "@" + m.Version + " " + m.Sum
	if m.Replace != nil {
		s += " => " + modString(m.Replace)
	}
	return s
}

func depStrings(deps []*debug.Module) []string {
	out := make([]string, 0, len(deps))
	for _, m := range deps {
		out = append(out, modString(m))
	}
	return out
}

func settingStrings(s []debug.BuildSetting) []string {
	out := make([]string, 0, len(s))
	for _, kv := range s {
		out = append(out, kv.Key+"="+kv.Value)
	}
	return out
}

// listDiff names the entries only one of two lists holds.
func listDiff(what string, a, b []string) []string {
	var d []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			d = append(d, fmt.Sprintf("%s %q only in the first", what, x))
		}
	}
	for _, y := range b {
		if !slices.Contains(a, y) {
			d = append(d, fmt.Sprintf("%s %q only in the second", what, y))
		}
	}
	return d
}

// shellNames are the programs that make an image "have a shell".
var shellNames = []string{"sh", "bash", "dash", "ash", "busybox", "toybox"}

// Shells lists the image's files named like a shell, wherever they are.
func (im *Image) Shells() []string {
	var out []string
	for p := range im.Files {
		if slices.Contains(shellNames, path.Base(p)) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Digest is the sha256 of the regular file p resolves to, or an error saying why there is none.
func (im *Image) Digest(p string) (string, error) {
	_, data, err := im.Regular(p)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(data)), nil
}

// PasswdUser returns the /etc/passwd line of uid, or "" when there is none.
func (im *Image) PasswdUser(uid string) string {
	_, data, err := im.Regular("/etc/passwd")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Split(l, ":"); len(f) >= 3 && f[2] == uid {
			return l
		}
	}
	return ""
}
