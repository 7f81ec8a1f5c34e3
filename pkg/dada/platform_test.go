package dada

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// otherPlatforms are platforms without Linux SysV IPC on which the package must still build
// (the twin in sysv_other.go fails every ring operation with ErrNotSupported).
var otherPlatforms = []string{"darwin", "freebsd"}

// TestBuildsOnOtherPlatforms cross-compiles the package for each of otherPlatforms with
// CGO_ENABLED=0, so a Linux-only call outside the sysv_linux.go seam fails the host tests.
func TestBuildsOnOtherPlatforms(t *testing.T) {
	for _, goos := range otherPlatforms {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s CGO_ENABLED=0 go build ./pkg/dada: %v\n%s", goos, err, out)
			}
		})
	}
}

// TestSameAPIOnEveryPlatform compares the exported identifiers of the files each platform
// compiles: the twin must export what the Linux build exports, and nothing more.
func TestSameAPIOnEveryPlatform(t *testing.T) {
	linux := exportedAPI(t, "linux")
	for _, goos := range otherPlatforms {
		if got := exportedAPI(t, goos); !slices.Equal(got, linux) {
			t.Errorf("GOOS=%s exports %v\nGOOS=linux exports %v", goos, got, linux)
		}
	}
}

// exportedAPI returns the sorted exported top-level names and methods (Type.Method) of the
// package's non-test files that GOOS=goos compiles with CGO_ENABLED=0.
func exportedAPI(t *testing.T, goos string) []string {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", false
	pkg, err := ctx.ImportDir(".", 0)
	if err != nil {
		t.Fatalf("list files of pkg/dada for GOOS=%s: %v", goos, err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, d := range f.Decls {
			for _, n := range exportedNames(d) {
				names[n] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// exportedNames returns the exported names a declaration adds to the package's API.
func exportedNames(d ast.Decl) []string {
	var out []string
	add := func(n string) {
		if ast.IsExported(n) {
			out = append(out, n)
		}
	}
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			add(d.Name.Name)
			break
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if id, ok := recv.(*ast.Ident); ok && ast.IsExported(id.Name) && ast.IsExported(d.Name.Name) {
			out = append(out, id.Name+"."+d.Name.Name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch spec := spec.(type) {
			case *ast.TypeSpec:
				add(spec.Name.Name)
			case *ast.ValueSpec:
				for _, n := range spec.Names {
					add(n.Name)
				}
			}
		}
	}
	return out
}
