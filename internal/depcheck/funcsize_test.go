package depcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a production function may be (issue #14: "no production
// function over 80 lines except table-driven encoders"); the house style aims under 60.
const maxFuncLines = 80

// longFuncs are the functions allowed past maxFuncLines, by "dir/file.go:Func", each with
// the reason. Only table-driven code belongs here: one flat case per wire field or value,
// which reads best as one table.
var longFuncs = map[string]string{}

// TestFunctionSize fails on a production function (not in a _test.go file) longer than
// maxFuncLines that longFuncs does not name, and on a longFuncs entry that is no longer
// long (so the list cannot rot).
func TestFunctionSize(t *testing.T) {
	root := filepath.Join("..", "..")
	long := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		for name, n := range funcLengths(t, path) {
			if n > maxFuncLines {
				long[filepath.ToSlash(rel)+":"+name] = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for fn, n := range long {
		if _, ok := longFuncs[fn]; !ok {
			t.Errorf("%s is %d lines; split it into named steps (at most %d, aim under 60)", fn, n, maxFuncLines)
		}
	}
	for fn := range longFuncs {
		if _, ok := long[fn]; !ok {
			t.Errorf("longFuncs names %s, which is no longer over %d lines (or is gone): drop it from the list", fn, maxFuncLines)
		}
	}
}

// funcLengths returns the length in lines of each function and method declared in the
// file at path, by name ("Func" or "Type.Method").
func funcLengths(t *testing.T, path string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			name = recvName(fd.Recv.List[0].Type) + "." + name
		}
		out[name] = fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
	}
	return out
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

func TestFuncLengths(t *testing.T) {
	got := funcLengths(t, "funcsize_test.go")
	if n := got["recvName"]; n != 13 {
		t.Errorf("funcLengths(funcsize_test.go)[recvName] = %d, want 13", n)
	}
	if _, ok := got["TestFunctionSize"]; !ok {
		t.Errorf("funcLengths(funcsize_test.go) misses TestFunctionSize: %v", got)
	}
}
