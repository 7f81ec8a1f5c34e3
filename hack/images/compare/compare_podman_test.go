//go:build podman

package compare

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The environment hack/images/podman/check.sh (`make images-podman-check`) sets.
const (
	envDockerfile = "RINGCAP_COMPARE_DOCKERFILE" // directory of the Dockerfile's images (podman save)
	envMake       = "RINGCAP_COMPARE_MAKE"       // directory of hack/images/build.sh's images
	envTag        = "RINGCAP_COMPARE_TAG"        // the tag both were built with
	envRunOpts    = "RINGCAP_PODMAN_RUN_OPTS"    // `podman run` options that work on this host
)

func mustEnv(t *testing.T, k string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		t.Fatalf("%s is not set: run this test with `make images-podman-check`", k)
	}
	return v
}

// pair is one image built both ways.
type pair struct {
	name            string
	dockerfile, mk  *Image
	dfArch, mkArch  string
	static          bool
	versionArgs     []string
	extraEntrypoint [][]string // more commands run in both images, outputs compared
}

func TestDockerfileMatchesMakeImages(t *testing.T) {
	dfDir, mkDir, tag := mustEnv(t, envDockerfile), mustEnv(t, envMake), mustEnv(t, envTag)
	runOpts := strings.Fields(mustEnv(t, envRunOpts))
	pairs := []*pair{
		{name: "plugin", static: true, versionArgs: []string{"--version"},
			extraEntrypoint: [][]string{{"/plugin", "--help"}}},
		{name: "operator", static: true, versionArgs: []string{"--version"},
			extraEntrypoint: [][]string{{"/operator", "--help"}}},
		{name: "ringcap", versionArgs: []string{"--version"}, extraEntrypoint: [][]string{
			{"/usr/bin/ringcap", "--help"},
			{"/usr/bin/kubectl-ringcap", "--help"}, // the kubectl plugin, static, beside it
			{"/usr/bin/fi_info", "--version"},
			{"/usr/bin/fi_info", "-l"}, // the libfabric providers that load in the image
		}},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			p.dfArch, p.mkArch = filepath.Join(dfDir, p.name+".tar"), filepath.Join(mkDir, p.name+".tar")
			var err error
			if p.dockerfile, err = Load(p.dfArch); err != nil {
				t.Fatal(err)
			}
			if p.mk, err = Load(p.mkArch); err != nil {
				t.Fatal(err)
			}
			checkContents(t, p, tag)
			checkRuns(t, p, tag, runOpts)
		})
	}
}

// checkContents compares configuration, binary and (data plane) libraries of the two images.
func checkContents(t *testing.T, p *pair, tag string) {
	for _, d := range ConfigDiff(p.dockerfile.Config, p.mk.Config) {
		t.Errorf("config (Dockerfile vs make images): %s", d)
	}
	if got := p.dockerfile.Config.Labels["org.opencontainers.image.version"]; got != tag {
		t.Errorf("Dockerfile image's version label %q, want %q", got, tag)
	}
	if len(p.dockerfile.Config.Entrypoint) == 0 {
		t.Fatal("the Dockerfile's image has no entrypoint")
	}
	entry := p.dockerfile.Config.Entrypoint[0]
	_, dfBin, err := p.dockerfile.Regular(entry)
	if err != nil {
		t.Fatalf("Dockerfile image: %v", err)
	}
	_, mkBin, err := p.mk.Regular(entry)
	if err != nil {
		t.Fatalf("make images' image: %v", err)
	}
	checkBuildInfo(t, dfBin, mkBin, tag)
	t.Logf("%s: binaries byte-identical: %v (%d and %d bytes)", entry, bytes.Equal(dfBin, mkBin), len(dfBin), len(mkBin))
	if p.static {
		checkStatic(t, "Dockerfile", p.dockerfile, dfBin)
		checkStatic(t, "make images", p.mk, mkBin)
		return
	}
	for _, d := range DataPlaneDiff(p.dockerfile, p.mk, entry) {
		t.Errorf("data plane (Dockerfile vs make images): %s", d)
	}
	for what, im := range map[string]*Image{"Dockerfile": p.dockerfile, "make images": p.mk} {
		if u := im.PasswdUser("65532"); !strings.HasPrefix(u, "ringcap:") {
			t.Errorf("%s data-plane image: uid 65532 in /etc/passwd is %q, want the ringcap user", what, u)
		}
	}
}

func checkBuildInfo(t *testing.T, dfBin, mkBin []byte, tag string) {
	dfInfo, err := buildinfo.Read(bytes.NewReader(dfBin))
	if err != nil {
		t.Fatalf("Go build info of the Dockerfile's binary: %v", err)
	}
	mkInfo, err := buildinfo.Read(bytes.NewReader(mkBin))
	if err != nil {
		t.Fatalf("Go build info of make images' binary: %v", err)
	}
	for _, d := range BuildInfoDiff(dfInfo, mkInfo) {
		t.Errorf("build info (Dockerfile vs make images): %s", d)
	}
	// -trimpath keeps -ldflags out of the build info: look for the stamped version itself
	if !bytes.Contains(dfBin, []byte(tag)) {
		t.Errorf("the Dockerfile's binary does not contain its version stamp %s", tag)
	}
}

func checkStatic(t *testing.T, what string, im *Image, bin []byte) {
	info, err := ReadELF(bin)
	if err != nil {
		t.Fatalf("%s: entrypoint: %v", what, err)
	}
	if info.Interp != "" || len(info.Needed) > 0 {
		t.Errorf("%s: the entrypoint is not static (loader %q, needs %v)", what, info.Interp, info.Needed)
	}
	if sh := im.Shells(); len(sh) > 0 {
		t.Errorf("%s: the static image has a shell: %v", what, sh)
	}
}

// checkRuns runs each image's binary with podman (each set loaded into a storage of its own, as
// both carry the same names) and compares the outputs.
func checkRuns(t *testing.T, p *pair, tag string, runOpts []string) {
	df, mk := newPodman(t, runOpts), newPodman(t, runOpts)
	dfRef, mkRef := df.load(p.dfArch), mk.load(p.mkArch)
	dfOut, mkOut := df.run(dfRef, "", p.versionArgs), mk.run(mkRef, "", p.versionArgs)
	if !strings.Contains(dfOut, tag) {
		t.Errorf("%s %v in the Dockerfile's image printed %q, want the tag %s", p.name, p.versionArgs, dfOut, tag)
	}
	if dfOut != mkOut {
		t.Errorf("%s %v: Dockerfile's image printed %q, make images' %q", p.name, p.versionArgs, dfOut, mkOut)
	}
	for _, c := range p.extraEntrypoint {
		a, b := df.run(dfRef, c[0], c[1:]), mk.run(mkRef, c[0], c[1:])
		if a != b {
			t.Errorf("%v: Dockerfile's image printed\n%s\nmake images' printed\n%s", c, a, b)
		}
	}
}

type podman struct {
	t       *testing.T
	global  []string
	runOpts []string
}

func newPodman(t *testing.T, runOpts []string) *podman {
	dir, err := os.MkdirTemp("", "rcp-") // short: podman refuses a runroot path over 50 characters
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &podman{t: t, runOpts: runOpts, global: []string{
		"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--tmpdir", filepath.Join(dir, "tmp"),
	}}
	t.Cleanup(func() { // before the directory's removal: unmounts the layers
		if out, err := exec.Command("podman", append(p.global, "rmi", "-af")...).CombinedOutput(); err != nil {
			t.Errorf("podman rmi -af in %s: %v\n%s", dir, err, out)
		}
	})
	return p
}

// load imports a docker-archive and returns the image's ID.
func (p *podman) load(archive string) string {
	p.t.Helper()
	p.cmd("load", "-q", "-i", archive)
	id := strings.TrimSpace(p.cmd("images", "-q", "--no-trunc"))
	if id == "" || strings.Contains(id, "\n") {
		p.t.Fatalf("after loading %s: want one image, podman images lists %q", archive, id)
	}
	return id
}

// run runs the image (with another entrypoint when entrypoint is set) and returns its output,
// standard error after standard output.
func (p *podman) run(ref, entrypoint string, args []string) string {
	p.t.Helper()
	a := append([]string{"run"}, p.runOpts...)
	if entrypoint != "" {
		a = append(a, "--entrypoint", entrypoint)
	}
	out, errOut := p.output(append(append(a, ref), args...)...)
	if errOut != "" {
		out += "(stderr)\n" + errOut
	}
	return out
}

func (p *podman) cmd(args ...string) string {
	p.t.Helper()
	out, _ := p.output(args...)
	return out
}

// output runs podman and returns its standard output and error; a failure is fatal.
func (p *podman) output(args ...string) (string, string) {
	p.t.Helper()
	var stdout, stderr bytes.Buffer
	c := exec.Command("podman", append(p.global, args...)...)
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		p.t.Fatalf("podman %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}
