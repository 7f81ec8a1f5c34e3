// Package compare reads container images from docker-archive tarballs and compares what two
// builds of ringcap's images contain: the Dockerfile's (built with podman,
// hack/images/podman/build.sh) and hack/images/build.sh's (`make images`). The comparison itself
// is TestDockerfileMatchesMakeImages (build tag podman), run by `make images-podman-check`.
package compare

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one entry of an image's flattened file system.
type File struct {
	Mode fs.FileMode // type bits and permissions
	Link string      // symbolic links: the target
	Data []byte      // regular files: the content
}

// Image is an image's configuration and flattened file system, keyed by clean absolute path.
type Image struct {
	Config v1.Config
	Files  map[string]*File
}

// Load reads the single image of a docker-archive tarball.
func Load(archive string) (*Image, error) {
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return nil, fmt.Errorf("read image archive %s: %w", archive, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the configuration of %s: %w", archive, err)
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	files, err := readTree(rc)
	if err != nil {
		return nil, fmt.Errorf("flatten the layers of %s: %w", archive, err)
	}
	return &Image{Config: cf.Config, Files: files}, nil
}

// readTree reads a flattened layer stream into a path map (hard links become copies).
func readTree(r io.Reader) (map[string]*File, error) {
	files := map[string]*File{"/": {Mode: fs.ModeDir | 0o755}}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		p := path.Clean("/" + h.Name)
		addParents(files, p)
		switch h.Typeflag {
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", p, err)
			}
			files[p] = &File{Mode: h.FileInfo().Mode(), Data: data}
		case tar.TypeLink:
			target, ok := files[path.Clean("/"+h.Linkname)]
			if !ok {
				return nil, fmt.Errorf("hard link %s -> %s: target not (yet) in the stream", p, h.Linkname)
			}
			files[p] = target
		default:
			files[p] = &File{Mode: h.FileInfo().Mode(), Link: h.Linkname}
		}
	}
}

// addParents adds the directories above p a layer leaves implicit.
func addParents(files map[string]*File, p string) {
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if _, ok := files[d]; ok {
			return
		}
		files[d] = &File{Mode: fs.ModeDir | 0o755}
	}
}

// maxLinks bounds symbolic link resolution (as the kernel's ELOOP does).
const maxLinks = 40

// Resolve follows symbolic links in every component of the absolute path p, the way the kernel
// would inside the image, and returns the final path and its entry.
func (im *Image) Resolve(p string) (string, *File, error) {
	todo := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	cur, hops := "/", 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == "" || c == "." {
			continue
		}
		next := path.Join(cur, c)
		f, ok := im.Files[next]
		if !ok {
			return "", nil, fmt.Errorf("%s: %s does not exist", p, next)
		}
		if f.Mode&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinks {
			return "", nil, fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target := f.Link
		if !path.IsAbs(target) {
			target = path.Join(cur, target)
		}
		todo = append(strings.Split(strings.Trim(path.Clean(target), "/"), "/"), todo...)
		cur = "/"
	}
	return cur, im.Files[cur], nil
}

// Regular resolves p and returns its content, or an error when it is not a regular file.
func (im *Image) Regular(p string) (string, []byte, error) {
	real, f, err := im.Resolve(p)
	if err != nil {
		return "", nil, err
	}
	if !f.Mode.IsRegular() {
		return "", nil, fmt.Errorf("%s (-> %s) is not a regular file", p, real)
	}
	return real, f.Data, nil
}

// Glob lists the paths directly inside dir (after resolving dir) whose base name matches
// pattern, as paths under the resolved directory, sorted.
func (im *Image) Glob(dir, pattern string) ([]string, error) {
	real, f, err := im.Resolve(dir)
	if err != nil {
		return nil, err
	}
	if !f.Mode.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	var out []string
	for p := range im.Files {
		if path.Dir(p) != real || p == real {
			continue
		}
		if ok, err := path.Match(pattern, path.Base(p)); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", pattern, err)
		} else if ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}
