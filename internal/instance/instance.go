// Package instance gives a patrold instance a stable name: the configured
// cluster.instance, or one generated on first start and kept in the data
// directory. So a restarted instance (kill -9 included) is the same
// instance. It can reclaim what it held, such as its leader lease.
package instance

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// FileName keeps the generated name inside the data directory.
const FileName = "instance"

// namePattern is what a name may be: it becomes part of NATS KV values and
// log lines, so it is short and plain.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Validate checks a configured name, naming the key.
func Validate(name string) error {
	if name != "" && !namePattern.MatchString(name) {
		return fmt.Errorf("cluster.instance: %q must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Name returns configured when it is set (after Validate), else the name
// kept in dataDir, generating and keeping one on first start.
func Name(dataDir, configured string) (string, error) {
	if err := Validate(configured); err != nil {
		return "", err
	}
	if configured != "" {
		return configured, nil
	}
	path := filepath.Join(dataDir, FileName)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		name := strings.TrimSpace(string(data))
		if !namePattern.MatchString(name) {
			return "", fmt.Errorf("%s: %q is not an instance name; delete the file to get a new one, or set cluster.instance", path, name)
		}
		return name, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("instance name: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '-' || r == '_' || (r >= '0' && r <= '9') || (r|0x20 >= 'a' && r|0x20 <= 'z')) {
			return r
		}
		return '-'
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	if host == "" || !namePattern.MatchString(host) {
		host = "patrold"
	}
	buf := make([]byte, 4)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	name := host + "-" + hex.EncodeToString(buf)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	// Written to a temporary file and renamed, so a crash never leaves a
	// half-written name behind.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o640); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	return name, nil
}
