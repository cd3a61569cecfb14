// Package dirlock makes a data directory belong to one process at a time:
// an advisory flock(2) on a lock file inside it. The kernel releases it
// when the holder exits, however it exits (kill -9 included), so a stale
// lock cannot outlive its process. The holder writes who it is into the
// file, so a refused process can name it.
package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// FileName is the lock file inside the data directory.
const FileName = "patrold.lock"

// ErrHeld: another process holds the directory.
var ErrHeld = errors.New("data directory is held by another process")

// Holder is what the lock file says about the process holding it.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
	// API is the HTTP listen address of the holder, when it serves one, so
	// a CLI command can go through it instead.
	API string `json:"api,omitempty"`
}

func (h Holder) String() string {
	s := fmt.Sprintf("pid %d on %s (%s, since %s)", h.PID, h.Host, h.Command, h.Since.UTC().Format(time.RFC3339))
	if h.API != "" {
		s += ", API " + h.API
	}
	return s
}

// HeldError is ErrHeld with the holder, when the lock file names one.
type HeldError struct {
	Dir    string
	Holder *Holder
}

func (e *HeldError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("%s: %v", e.Dir, ErrHeld)
	}
	return fmt.Sprintf("%s: %v: %s", e.Dir, ErrHeld, e.Holder)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Lock is a held data directory.
type Lock struct {
	f      *os.File
	path   string
	holder Holder
}

// Acquire takes the directory for this process without waiting: it
// returns a *HeldError (errors.Is ErrHeld) naming the holder when another
// process has it. command and api describe this process to later ones.
func Acquire(dir, command, api string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h, _ := ReadHolder(dir)
			return nil, &HeldError{Dir: dir, Holder: h}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	l := &Lock{f: f, path: path, holder: Holder{PID: os.Getpid(), Host: host, Command: command, Since: time.Now().UTC(), API: api}}
	if err := l.write(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// write records the holder in the lock file.
func (l *Lock) write() error {
	data, _ := json.Marshal(l.holder)
	if err := l.f.Truncate(0); err == nil {
		_, err = l.f.WriteAt(append(data, '\n'), 0)
		if err == nil {
			err = l.f.Sync()
		}
		if err != nil {
			return fmt.Errorf("lock %s: record holder: %w", l.path, err)
		}
	}
	return nil
}

// SetAPI records the API address the holder actually listens on (known
// only once its listener is bound, e.g. with port 0).
func (l *Lock) SetAPI(api string) error {
	if l == nil || l.f == nil {
		return nil
	}
	l.holder.API = api
	return l.write()
}

// Release gives the directory up; it is idempotent. The file stays (its
// content names the last holder); only the flock matters.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	_ = f.Truncate(0)
	return f.Close() // closing the last descriptor drops the flock
}

// ReadHolder reads who holds (or last held) dir; nil when the file is
// absent or says nothing.
func ReadHolder(dir string) (*Holder, error) {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || strings.TrimSpace(string(data)) == "" {
		return nil, err
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", FileName, err)
	}
	return &h, nil
}

// Held reports whether a live process holds dir (without taking it), and
// who. It probes with a shared, non-blocking flock.
func Held(dir string) (bool, *Holder, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h, _ := ReadHolder(dir)
			return true, h, nil
		}
		return false, nil, err
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil, nil
}
