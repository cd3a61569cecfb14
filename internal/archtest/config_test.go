package archtest

// config composes; it owns no section. Each section of the YAML file is a
// type of the package it configures, which also owns its defaults and its
// Validate. The rule reads config's non-test sources:
//   - every field of Config is a root scalar (data_dir) or a type of
//     another package (through *, [] or a map);
//   - no other struct type of config carries koanf tags (a section type
//     in config would).

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// configOwnsNoSection lists the violations of the rule in the Go package
// in dir.
func configOwnsNoSection(dir string) ([]string, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	found := false
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			if ts.Name.Name == "Config" {
				found = true
				for _, fl := range st.Fields.List {
					if !rootScalar(fl.Type) && !foreign(fl.Type) {
						out = append(out, fmt.Sprintf("config.Config.%s: section type %s is declared in config", fieldName(fl), types.ExprString(fl.Type)))
					}
				}
				return false
			}
			for _, fl := range st.Fields.List {
				if fl.Tag != nil && reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("koanf") != "" {
					out = append(out, fmt.Sprintf("config.%s: a section type (koanf tags) declared in config", ts.Name.Name))
					break
				}
			}
			return false
		})
	}
	if !found {
		return nil, fmt.Errorf("%s declares no Config", dir)
	}
	slices.Sort(out)
	return out, nil
}

// rootScalar: a predeclared type (data_dir is a string).
func rootScalar(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && slices.Contains([]string{"string", "bool", "int", "int64", "float64"}, id.Name)
}

// foreign: a type of another package, possibly behind *, [] or a map.
func foreign(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.SelectorExpr:
		return true
	case *ast.StarExpr:
		return foreign(t.X)
	case *ast.ArrayType:
		return foreign(t.Elt)
	case *ast.MapType:
		return foreign(t.Value)
	}
	return false
}

func fieldName(f *ast.Field) string {
	if len(f.Names) == 0 {
		return types.ExprString(f.Type)
	}
	return f.Names[0].Name
}

func TestConfigOwnsNoSection(t *testing.T) {
	got, err := configOwnsNoSection("../../config")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("config owns sections; move each type to the package it configures:\n%s", strings.Join(got, "\n"))
	}
}

func TestConfigSectionRuleFailsOnViolation(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"config/config.go": `package config

import "example.com/x/bus"

type Config struct {
	DataDir string ` + "`koanf:\"data_dir\"`" + `
	NATS    bus.Options ` + "`koanf:\"nats\"`" + `
	Tokens  []*bus.Token ` + "`koanf:\"tokens\"`" + `
	Log     LogConfig ` + "`koanf:\"log\"`" + `
	Actions []ActionConfig ` + "`koanf:\"actions\"`" + `
}

// LogConfig is a section declared in config.
type LogConfig struct {
	Level string ` + "`koanf:\"level\"`" + `
}

type ActionConfig struct{ Name string }

// Error is no section: no koanf tags.
type Error struct{ Problems []string }
`,
		"config/config_test.go": "package config\n\ntype Inline struct{ X int `koanf:\"x\"` }\n",
	})
	got, err := configOwnsNoSection(filepath.Join(dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"config.Config.Actions: section type []ActionConfig is declared in config",
		"config.Config.Log: section type LogConfig is declared in config",
		"config.LogConfig: a section type (koanf tags) declared in config",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := configOwnsNoSection(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "declares no Config") {
		t.Fatalf("a tree without config: %v", err)
	}
}
