package compare

import (
	"fmt"
	"maps"
	"path"
	"slices"
)

// dataPlaneRoots are the files the data-plane image must be able to load: the entrypoint, the
// diagnostic tools, every rdma-core (verbs) provider and libfabric with any provider plugin.
func (im *Image) dataPlaneRoots(entry string) []string {
	roots := []string{entry, "/usr/bin/ibv_devinfo", "/usr/bin/fi_info"}
	ma := Multiarch()
	provs, _ := im.Glob("/usr/lib/"+ma+"/libibverbs", "lib*-rdmav*.so")
	roots = append(roots, provs...)
	if p, err := im.FindLib("libfabric.so.1"); err == nil {
		roots = append(roots, p)
	} else {
		roots = append(roots, "/usr/lib/"+ma+"/libfabric.so.1") // reported missing by Closure
	}
	plugins, _ := im.Glob("/usr/lib/"+ma+"/libfabric", "*.so")
	return append(roots, plugins...)
}

// RDMAFiles names the rdma-core and libfabric files of a data-plane image and their digests:
// the libraries, each verbs provider, each /etc/libibverbs.d driver file, each libfabric
// provider plugin. Files that cannot be read are problems.
func (im *Image) RDMAFiles() (map[string]string, []string) {
	files := map[string]string{}
	var problems []string
	add := func(key, p string) {
		d, err := im.Digest(p)
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		files[key] = d
	}
	for _, so := range []string{"libibverbs.so.1", "librdmacm.so.1", "libfabric.so.1"} {
		p, err := im.FindLib(so)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		add(so, p)
	}
	ma := Multiarch()
	for _, g := range []struct{ key, dir, pattern string }{
		{"provider", "/usr/lib/" + ma + "/libibverbs", "lib*-rdmav*.so"},
		{"driver", "/etc/libibverbs.d", "*.driver"},
		{"libfabric plugin", "/usr/lib/" + ma + "/libfabric", "*.so"},
	} {
		ps, err := im.Glob(g.dir, g.pattern)
		if err != nil && g.key != "libfabric plugin" { // Debian builds libfabric's providers in
			problems = append(problems, err.Error())
		}
		for _, p := range ps {
			add(g.key+" "+path.Base(p), p)
		}
	}
	return files, problems
}

// DataPlaneDiff compares two data-plane images whose entrypoint is entry: each must resolve
// every library its binaries, providers and libfabric need, and both must hold the same rdma-core
// and libfabric files, byte for byte.
func DataPlaneDiff(a, b *Image, entry string) []string {
	var d []string
	for _, x := range []struct {
		what string
		im   *Image
	}{{"first", a}, {"second", b}} {
		_, problems := x.im.Closure(x.im.dataPlaneRoots(entry))
		for _, p := range problems {
			d = append(d, fmt.Sprintf("%s image: %s", x.what, p))
		}
	}
	fa, pa := a.RDMAFiles()
	fb, pb := b.RDMAFiles()
	for _, p := range pa {
		d = append(d, "first image: "+p)
	}
	for _, p := range pb {
		d = append(d, "second image: "+p)
	}
	keys := slices.Sorted(maps.Keys(fa))
	for _, k := range slices.Sorted(maps.Keys(fb)) {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		switch x, y := fa[k], fb[k]; {
		case x == "":
			d = append(d, k+" only in the second image")
		case y == "":
			d = append(d, k+" only in the first image")
		case x != y:
			d = append(d, fmt.Sprintf("%s differs: sha256 %s != %s", k, x[:12], y[:12]))
		}
	}
	return d
}
