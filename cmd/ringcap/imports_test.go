package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The command parses flags and calls engines: it imports neither RDMA
// binding (device discovery is pkg/capture/devices, the fabrics are the
// adapters), under any build tag.
func TestNoBindingImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	bindings := []string{"github.com/ringcap/ringcap/pkg/rdma/verbs", "github.com/ringcap/ringcap/pkg/rdma/ofi"}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, b := range bindings {
				if path == b || strings.HasPrefix(path, b+"/") {
					t.Errorf("%s imports %s: the command reaches the bindings through pkg/capture/devices and the fabric adapters", name, path)
				}
			}
		}
	}
}
