package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"

	"github.com/patrold/patrold/snapshot/sources"
)

const keyDelim = "\x1f"

// EnvPrefix starts every environment override.
const EnvPrefix = "PATROLD_"

// envIgnored are PATROLD_ variables that are not configuration keys.
var envIgnored = map[string]bool{"PATROLD_CONFIG": true}

// Error lists every problem of a configuration, each naming its key.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "invalid configuration: " + e.Problems[0]
	}
	return "invalid configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// Load builds a configuration from YAML bytes and environment entries
// ("KEY=value"): defaults, then the file, then PATROLD_* overrides. It is a
// pure function of its inputs. ${CREDENTIALS_DIRECTORY} in a *_file key is
// that entry's value (Credstore without it). The result is validated.
func Load(data []byte, environ []string) (*Config, error) {
	// The key delimiter is a control character, not ".", so map keys that
	// contain dots (model names in model.prices, such as gpt-4.1) stay whole.
	k := koanf.New(keyDelim)
	if len(strings.TrimSpace(string(data))) > 0 {
		if err := k.Load(rawbytes.Provider(data), yaml.Parser()); err != nil {
			return nil, &Error{Problems: []string{"yaml: " + cleanYAMLError(err)}}
		}
	}
	envMap, problems := envOverrides(environ)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	if err := k.Load(confmap.Provider(envMap, "."), nil); err != nil { // env paths are dotted
		return nil, &Error{Problems: []string{"environment: " + err.Error()}}
	}
	cfg := Default()
	dc := &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			memberDefaults,
			durationHook,
			mapstructure.TextUnmarshallerHookFunc()),
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		TagName:          "koanf",
		Squash:           true,
	}
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{DecoderConfig: dc}); err != nil {
		return nil, &Error{Problems: decodeProblems(err)}
	}
	if problems := expandCredentials(&cfg, CredentialsDir(environ)); len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Notify = cfg.Notify.WithDefaults()
	return &cfg, nil
}

// memberDefaults starts every sources entry from sources.DefaultMember,
// as the source section starts from its defaults.
func memberDefaults(from, to reflect.Value) (any, error) {
	if to.Type() == reflect.TypeFor[sources.Member]() && to.CanSet() {
		to.Set(reflect.ValueOf(sources.DefaultMember()))
	}
	return from.Interface(), nil
}

// LoadFile loads path ("" tries DefaultPaths, then falls back to the
// defaults alone) with the process environment. It returns the path used
// ("" when none).
func LoadFile(path string) (*Config, string, error) {
	if path == "" {
		for _, p := range DefaultPaths {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	var data []byte
	if path != "" {
		var err error
		data, err = os.ReadFile(path)
		if err != nil {
			return nil, path, fmt.Errorf("read config: %w", err)
		}
	}
	cfg, err := Load(data, os.Environ())
	if err != nil {
		if path != "" {
			return nil, path, fmt.Errorf("%s: %w", path, err)
		}
		return nil, path, err
	}
	return cfg, path, nil
}

var yamlLine = regexp.MustCompile(`yaml: (line \d+: )?`)

func cleanYAMLError(err error) string {
	return yamlLine.ReplaceAllString(err.Error(), "$1")
}

var (
	invalidKeys = regexp.MustCompile(`^'?([^' ]*)'? has invalid keys: (.*)$`)
	fieldErr    = regexp.MustCompile(`^'([^']*)' (.*)$`)
)

// decodeProblems turns mapstructure errors into "key: problem" lines.
func decodeProblems(err error) []string {
	var out []string
	var msgs []string
	var me interface{ Unwrap() []error }
	if errors.As(err, &me) {
		for _, e := range me.Unwrap() {
			msgs = append(msgs, strings.Split(e.Error(), "\n")...)
		}
	} else {
		msgs = strings.Split(err.Error(), "\n")
	}
	for _, m := range msgs {
		m = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(m), "* "))
		if m == "" || strings.HasSuffix(m, "error(s) decoding:") || strings.HasPrefix(m, "decoding failed") {
			continue
		}
		if sm := invalidKeys.FindStringSubmatch(m); sm != nil {
			for _, key := range strings.Split(sm[2], ", ") {
				full := key
				if sm[1] != "" && !strings.HasPrefix(sm[1], "config.") {
					full = sm[1] + "." + key
				}
				out = append(out, full+": unknown key")
			}
			continue
		}
		if sm := fieldErr.FindStringSubmatch(m); sm != nil {
			out = append(out, sm[1]+": "+sm[2])
			continue
		}
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// envOverrides maps PATROLD_<SECTION>_<KEY> variables onto known key paths.
func envOverrides(environ []string) (map[string]any, []string) {
	keys := map[string]string{} // "HTTP_LISTEN" -> "http.listen"
	collectKeys(reflect.TypeOf(Config{}), "", keys)
	out := map[string]any{}
	var problems []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || envIgnored[name] {
			continue
		}
		path, known := keys[strings.TrimPrefix(name, EnvPrefix)]
		if !known {
			problems = append(problems, name+": environment variable names no configuration key")
			continue
		}
		out[path] = value
	}
	sort.Strings(problems)
	return out, problems
}

// collectKeys walks the koanf tags of t and records every scalar leaf key.
func collectKeys(t reflect.Type, prefix string, out map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("koanf"), ",")
		if tag[0] == "-" || (tag[0] == "" && !strings.Contains(f.Tag.Get("koanf"), "squash")) {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		path := prefix
		if tag[0] != "" {
			path = join(prefix, tag[0])
		}
		if ft.Kind() == reflect.Struct && ft.String() != "time.Time" {
			collectKeys(ft, path, out)
			continue
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct || ft.Kind() == reflect.Map {
			continue // lists of objects and maps are configured in the file
		}
		out[strings.ToUpper(strings.ReplaceAll(path, ".", "_"))] = path
	}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
