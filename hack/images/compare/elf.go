package compare

import (
	"bytes"
	"debug/elf"
	"fmt"
	"maps"
	"path"
	"runtime"
)

// Multiarch is Debian's library directory name for this architecture (lib/<multiarch>).
func Multiarch() string {
	switch runtime.GOARCH {
	case "arm64":
		return "aarch64-linux-gnu"
	default:
		return "x86_64-linux-gnu"
	}
}

// libDirs are the directories the dynamic loader searches without ld.so.cache, in its order.
func libDirs() []string {
	ma := Multiarch()
	return []string{"/lib/" + ma, "/usr/lib/" + ma, "/lib64", "/lib", "/usr/lib"}
}

// ELFInfo is what the comparison needs from an executable or shared library.
type ELFInfo struct {
	Interp string   // PT_INTERP: the dynamic loader; empty for a static executable
	Needed []string // DT_NEEDED sonames
}

// ReadELF parses data as an ELF file.
func ReadELF(data []byte) (ELFInfo, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return ELFInfo{}, err
	}
	defer func() { _ = f.Close() }()
	var info ELFInfo
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return ELFInfo{}, fmt.Errorf("read PT_INTERP: %w", err)
			}
			info.Interp = string(bytes.TrimRight(b, "\x00"))
		}
	}
	if info.Needed, err = f.ImportedLibraries(); err != nil {
		return ELFInfo{}, fmt.Errorf("read DT_NEEDED: %w", err)
	}
	return info, nil
}

// FindLib looks soname up in the loader's default directories and returns the path it was found
// under (before resolving links).
func (im *Image) FindLib(soname string) (string, error) {
	for _, d := range libDirs() {
		p := path.Join(d, soname)
		if _, f, err := im.Resolve(p); err == nil && f.Mode.IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("shared library %s not found in %v", soname, libDirs())
}

// Closure loads every root (a path) and, transitively, every library it needs, the way the
// loader would. It returns the libraries found (soname -> path) and one problem per file that
// cannot be read or library that cannot be found.
func (im *Image) Closure(roots []string) (map[string]string, []string) {
	libs := map[string]string{}
	var problems []string
	todo := append([]string(nil), roots...)
	seen := map[string]bool{}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		_, data, err := im.Regular(p)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		info, err := ReadELF(data)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		if info.Interp != "" {
			if _, _, err := im.Regular(info.Interp); err != nil {
				problems = append(problems, fmt.Sprintf("%s: loader: %v", p, err))
			}
		}
		for _, so := range info.Needed {
			if _, ok := libs[so]; ok {
				continue
			}
			lp, err := im.FindLib(so)
			libs[so] = lp // "" when missing: reported once
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s needs %v", p, err))
				continue
			}
			todo = append(todo, lp)
		}
	}
	maps.DeleteFunc(libs, func(_, p string) bool { return p == "" })
	return libs, problems
}
