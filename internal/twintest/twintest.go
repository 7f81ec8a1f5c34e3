// Package twintest checks that a cgo binding and its pure-Go twin (pkg/rdma/verbs,
// pkg/rdma/ofi) export the same names, so code that builds against one builds against the
// other. It is imported by those packages' tests only.
package twintest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// Exports returns the exported identifiers the package in dir declares in its non-test
// files for one build (GOOS, cgo on or off): functions, types, constants and variables by
// name, methods and struct fields as Type.Name.
func Exports(t testing.TB, dir, goos string, cgo bool) map[string]bool {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", cgo
	pkg, err := ctx.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("list the package's files for GOOS=%s cgo=%v: %v", goos, cgo, err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range slices.Concat(pkg.GoFiles, pkg.CgoFiles) {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			declExports(d, out)
		}
	}
	return out
}

func declExports(d ast.Decl, out map[string]bool) {
	add := func(prefix string, id *ast.Ident) {
		if id.IsExported() {
			out[prefix+id.Name] = true
		}
	}
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			add("", d.Name)
			return
		}
		typ := d.Recv.List[0].Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		add(typ.(*ast.Ident).Name+".", d.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				add("", s.Name)
				if st, ok := s.Type.(*ast.StructType); ok {
					for _, f := range st.Fields.List {
						for _, n := range f.Names {
							add(s.Name.Name+".", n)
						}
					}
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					add("", n)
				}
			}
		}
	}
}

// CompareTwins fails t when an exported identifier exists in the package's linux cgo build
// and not in its pure-Go twin (CGO_ENABLED=0 on linux, darwin with cgo, windows), or the
// other way round. must are names the cgo build has to export (a check that the parse saw
// the binding at all).
func CompareTwins(t *testing.T, dir string, must ...string) {
	t.Helper()
	binding := Exports(t, dir, "linux", true)
	for _, m := range must {
		if !binding[m] {
			t.Fatalf("the cgo build's exports look wrong (no %s): %v", m, binding)
		}
	}
	for _, twin := range []struct {
		goos string
		cgo  bool
	}{{"linux", false}, {"darwin", true}, {"windows", false}} {
		got := Exports(t, dir, twin.goos, twin.cgo)
		for name := range binding {
			if !got[name] {
				t.Errorf("%s is exported by the linux cgo binding but not by the GOOS=%s cgo=%v build", name, twin.goos, twin.cgo)
			}
		}
		for name := range got {
			if !binding[name] {
				t.Errorf("%s is exported by the GOOS=%s cgo=%v build but not by the linux cgo binding", name, twin.goos, twin.cgo)
			}
		}
	}
}
