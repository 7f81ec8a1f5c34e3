package verbs

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// exports returns the exported identifiers the package's non-test files declare in one build
// (GOOS, cgo on or off): functions, types, constants and variables by name, methods and
// struct fields as Type.Name.
func exports(t *testing.T, goos string, cgo bool) map[string]bool {
	t.Helper()
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", cgo
	pkg, err := ctx.ImportDir(".", 0)
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

// TestTwinExportsWhatTheBindingExports fails when an exported identifier exists in the cgo
// binding (linux, cgo) and not in the pure-Go twin (CGO_ENABLED=0, or another GOOS), or the
// other way round: code that builds against one must build against the other.
func TestTwinExportsWhatTheBindingExports(t *testing.T) {
	binding := exports(t, "linux", true)
	if !binding["Open"] || !binding["QP.PostSend"] || !binding["PostThread.Post"] {
		t.Fatalf("the cgo build's exports look wrong (no Open, QP.PostSend or PostThread.Post): %v", binding)
	}
	for _, twin := range []struct {
		goos string
		cgo  bool
	}{{"linux", false}, {"darwin", true}, {"windows", false}} {
		got := exports(t, twin.goos, twin.cgo)
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
