package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServicesKeepTheirStores: no service hands out its read-write store.
// An exported method of a type under services/ that returns a store (a type
// named Store or ending in Store), or an exported field of a service
// holding one, would let an edge write past the service's rules; the edges
// read through the services' query methods instead.
func TestServicesKeepTheirStores(t *testing.T) {
	t.Parallel()
	// The check catches what it is meant to catch, and nothing else.
	leaks, _ := storeLeaks(t, "x.go", `package x
type Service struct{ store Store; Repo RunStore; cfg Config }
type Config struct{ Store Store }
func (s *Service) Store() Store { return s.store }
func (s Service) Reader() (*postgres.BoardStore, error) { return nil, nil }
func (s *Service) store2() Store { return s.store }
func (s *Service) Tasks() []Task { return nil }
func NewService(st Store) *Service { return nil }
`)
	require.Equal(t, []string{"x.go: Service.Repo holds RunStore", "x.go: (*Service).Store returns Store",
		"x.go: (Service).Reader returns *postgres.BoardStore"}, leaks)

	var all []string
	stores := 0
	require.NoError(t, filepath.WalkDir("../../services", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		leaks, n := storeLeaks(t, p, nil)
		all, stores = append(all, leaks...), stores+n
		return nil
	}))
	require.GreaterOrEqual(t, stores, 6, "the walk found the services' Store interfaces")
	require.Empty(t, all, "services hand out their stores: give the service query methods instead")
}

// storeLeaks parses one file (src, or the file at name when src is nil)
// and returns where it hands out a store, and how many store types it
// declares.
func storeLeaks(t *testing.T, name string, src any) ([]string, int) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	require.NoError(t, err)
	var out []string
	declared := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				if isStore(ts.Name) {
					declared++
				}
				st, ok := ts.Type.(*ast.StructType)
				// A configuration handed to a constructor may carry the
				// store; the service built from it must not hand it back.
				if !ok || !ts.Name.IsExported() || !strings.HasSuffix(ts.Name.Name, "Service") {
					continue
				}
				for _, field := range st.Fields.List {
					for _, n := range field.Names {
						if n.IsExported() && isStore(field.Type) {
							out = append(out, fmt.Sprintf("%s: %s.%s holds %s", name, ts.Name.Name, n.Name, types(field.Type)))
						}
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil || !d.Name.IsExported() || d.Type.Results == nil {
				continue
			}
			for _, r := range d.Type.Results.List {
				if isStore(r.Type) {
					out = append(out, fmt.Sprintf("%s: (%s).%s returns %s", name, types(d.Recv.List[0].Type), d.Name.Name, types(r.Type)))
				}
			}
		}
	}
	return out, declared
}

// isStore reports whether e names a store type: Store, or a name ending in
// Store, through pointers and package qualifiers.
func isStore(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.StarExpr:
		return isStore(x.X)
	case *ast.SelectorExpr:
		return isStore(x.Sel)
	case *ast.Ident:
		return strings.HasSuffix(x.Name, "Store")
	}
	return false
}

// types writes a type expression as source.
func types(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + types(x.X)
	case *ast.SelectorExpr:
		return types(x.X) + "." + x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return fmt.Sprintf("%T", e)
}
