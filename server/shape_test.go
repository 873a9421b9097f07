package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is where a type turns into a hub (STYLE.md: more than ~40
// methods is a sign of two types).
const maxMethods = 40

// TestNoHubTypes keeps every type of the package, Server first, under
// maxMethods: new work goes to the component that owns it (Jobs, Nodes,
// ACL ...) or to a new one, not onto the Server.
func TestNoHubTypes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				methods[id.Name]++
			}
		}
	}
	if methods["Server"] == 0 {
		t.Fatalf("found no Server methods in %d files: run from the server package directory", len(files))
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split it by responsibility", typ, n, maxMethods)
		}
	}
}
