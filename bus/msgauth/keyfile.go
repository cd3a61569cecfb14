package msgauth

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// A key file holds one or two keys, one per line: an id, a space and the
// secret in hex (at least 32 bytes). The first key signs; a second is
// accepted too, for rotation. Blank lines and lines starting with '#'
// are skipped. The file must not be readable by group or others.

// ParseKeys decodes a key file's content, naming the line that is wrong.
func ParseKeys(data []byte) ([]Key, error) {
	var keys []Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, secret, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"<id> <hex secret>\"", n)
		}
		raw, err := hex.DecodeString(strings.TrimSpace(secret))
		if err != nil {
			return nil, fmt.Errorf("line %d: secret: not hex", n)
		}
		if !validID(id) {
			return nil, fmt.Errorf("line %d: id %q must be 1-32 letters, digits, '-' or '_'", n, clip(id))
		}
		if len(raw) < MinSecret {
			return nil, fmt.Errorf("line %d: secret: %d bytes, need at least %d", n, len(raw), MinSecret)
		}
		keys = append(keys, Key{ID: id, Secret: raw})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case len(keys) == 0:
		return nil, errors.New("no key (want \"<id> <hex secret>\" lines)")
	case len(keys) > 2:
		return nil, fmt.Errorf("%d keys: at most two (the first signs, the second is accepted for rotation)", len(keys))
	case len(keys) == 2 && keys[0].ID == keys[1].ID:
		return nil, fmt.Errorf("both keys have the id %q", keys[0].ID)
	}
	return keys, nil
}

// LoadFile reads a key file; one readable by group or others is refused.
func LoadFile(path string) ([]Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	//mutate:msgauth-key-file-private ./bus/msgauth Test
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key file %s: mode %04o lets group or others read it; chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return keys, nil
}

// NewKeyLine returns a fresh key file line: id and 32 random bytes.
func NewKeyLine(now time.Time) string {
	var s [MinSecret]byte
	_, _ = rand.Read(s[:]) // never fails (crypto/rand)
	return "k" + now.UTC().Format("20060102T150405") + " " + hex.EncodeToString(s[:]) + "\n"
}

// LoadOrCreate loads the key file at path, creating it (0600, one fresh
// key) when it does not exist: a single instance's generated key.
func LoadOrCreate(path string, now time.Time) ([]Key, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return LoadFile(path)
	case err != nil:
		return nil, fmt.Errorf("key file: %w", err)
	}
	_, werr := f.WriteString("# patrold bus key, generated; the first key signs\n" + NewKeyLine(now))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return LoadFile(path)
}
