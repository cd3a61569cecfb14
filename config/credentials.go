package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/patrold/patrold/internal/confcheck"
)

// CredentialsVar is the variable systemd sets, for a unit with
// LoadCredential=, to the directory holding the unit's credentials.
const CredentialsVar = "CREDENTIALS_DIRECTORY"

// CredentialsRef starts a file key's value that names a credential:
// "${CREDENTIALS_DIRECTORY}/pve.token" (docs/CONFIGURATION.md).
const CredentialsRef = "${" + CredentialsVar + "}/"

// Credstore is ${CREDENTIALS_DIRECTORY} outside the service (a shell,
// sudo): where the unit's LoadCredential=NAME reads the credential from.
const Credstore = "/etc/credstore"

// FileRef is one configuration key that names a file.
type FileRef struct {
	Key  string
	Path string
	// Credential: the file is in the credentials directory, so the
	// service reads the copy systemd hands it, not Path's owner and mode.
	Credential bool
}

// CredentialsDir is ${CREDENTIALS_DIRECTORY} of environ, or Credstore.
func CredentialsDir(environ []string) string {
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok && name == CredentialsVar && value != "" {
			return value
		}
	}
	return Credstore
}

// Files returns every key of c that names a file, in key order; dir is
// the credentials directory (CredentialsDir).
func Files(c *Config, dir string) []FileRef {
	var refs []FileRef
	walkFiles(reflect.ValueOf(c).Elem(), "", func(key string, v reflect.Value) {
		if path := v.String(); path != "" {
			refs = append(refs, FileRef{Key: key, Path: path, Credential: filepath.Dir(path) == filepath.Clean(dir)})
		}
	})
	slices.SortFunc(refs, func(a, b FileRef) int { return strings.Compare(a.Key, b.Key) })
	return refs
}

// expandCredentials puts dir in place of ${CREDENTIALS_DIRECTORY} in
// every *_file key.
func expandCredentials(cfg *Config, dir string) []string {
	var p confcheck.Problems
	walkFiles(reflect.ValueOf(cfg).Elem(), "", func(key string, v reflect.Value) {
		raw := v.String()
		if !strings.Contains(raw, "${") {
			return
		}
		name, ok := strings.CutPrefix(raw, CredentialsRef)
		// One credential id: no way out of the credentials directory.
		//mutate:credentials-ref-one-name ./config ^TestCredentialsReferenceRefused
		if !ok || name == "" || strings.ContainsAny(name, "/${}") || name == "." || name == ".." {
			p.Addf(key, "%q: want a path, or %sNAME with NAME a LoadCredential= id", raw, CredentialsRef)
			return
		}
		v.SetString(filepath.Join(dir, name))
	})
	return p.List()
}

// walkFiles calls fn for every settable string field whose koanf key ends
// in _file, with the key as the file spells it.
func walkFiles(v reflect.Value, prefix string, fn func(key string, v reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkFiles(v.Elem(), prefix, fn)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkFiles(v.Index(i), fmt.Sprintf("%s[%d]", prefix, i), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("koanf"), ",")
			switch {
			case name == "-" || (name == "" && !strings.Contains(opts, "squash")):
				continue
			case name == "":
				walkFiles(v.Field(i), prefix, fn)
			case f.Type.Kind() == reflect.String && strings.HasSuffix(name, "_file"):
				fn(join(prefix, name), v.Field(i))
			default:
				walkFiles(v.Field(i), join(prefix, name), fn)
			}
		}
	}
}
