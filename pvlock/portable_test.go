package pvlock

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"
)

// exportedAPI returns the exported declarations of the given files of this
// package, each name (a method as "Type.Name") mapped to what a user of it
// can rely on: a function's signature, a struct's exported fields, another
// type's definition, a constant's value. Doc comments and unexported
// fields are left out.
func exportedAPI(t *testing.T, files ...string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	api := map[string]string{}
	show := func(n any) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				key := d.Name.Name
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					key = show(recv) + "." + key
				}
				api[key] = show(d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						st, ok := s.Type.(*ast.StructType)
						if !ok {
							api[s.Name.Name] = show(s.Type)
							continue
						}
						var fields []string
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								if n.IsExported() {
									fields = append(fields, n.Name+" "+show(fl.Type))
								}
							}
						}
						api[s.Name.Name] = "struct { " + strings.Join(fields, "; ") + " }"
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							v := d.Tok.String()
							if i < len(s.Values) {
								v += " = " + show(s.Values[i])
							}
							api[n.Name] = v
						}
					}
				}
			}
		}
	}
	return api
}

// TestPortableAPI checks that the runtime declares the same API off Linux
// (vm_other.go, unsupported_other.go) as on Linux (vm.go, cpuset.go), so
// that a program that builds on Linux builds everywhere. The files are
// parsed, not built: the check runs on Linux, where the other files are
// excluded from the build.
func TestPortableAPI(t *testing.T) {
	linux := exportedAPI(t, "vm.go", "cpuset.go")
	other := exportedAPI(t, "vm_other.go", "unsupported_other.go")
	for _, name := range slices.Sorted(maps.Keys(linux)) {
		switch o, ok := other[name]; {
		case !ok:
			t.Errorf("%s is declared on Linux only: add it to vm_other.go or unsupported_other.go", name)
		case o != linux[name]:
			t.Errorf("%s differs off Linux:\nlinux: %s\nother: %s", name, linux[name], o)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(other)) {
		if _, ok := linux[name]; !ok {
			t.Errorf("%s is declared off Linux only", name)
		}
	}
}
