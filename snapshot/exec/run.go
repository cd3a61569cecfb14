package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
)

// Errors a collection can end with, matched with errors.Is.
var (
	// ErrTimeout: the collector ran past Options.Timeout and was killed.
	ErrTimeout = errors.New("timed out")
	// ErrOutputTooLarge: the collector wrote more than Options.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("output exceeds source.exec.max_output_bytes")
	// ErrExit: the collector exited with a non-zero status.
	ErrExit = errors.New("exited unsuccessfully")
)

// run starts the collector in its own process group and returns its
// standard output. Every path out of run leaves no member of the group alive.
func (s *Source) run(parent context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, s.opts.Timeout)
	defer cancel()

	stdout := &capWriter{limit: s.opts.MaxOutputBytes, onFull: cancel}
	stderr := &capWriter{limit: stderrLimit}
	cmd := osexec.CommandContext(ctx, s.path, s.opts.Command[1:]...)
	cmd.Args[0] = s.opts.Command[0]
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	err := cmd.Run()
	if cmd.Process != nil {
		// Descendants that outlived the collector are killed too.
		_ = killGroup(cmd.Process.Pid)
	}
	name := s.opts.Command[0]
	switch {
	case stdout.full():
		return nil, fmt.Errorf("command %q: %w (%d bytes)", name, ErrOutputTooLarge, s.opts.MaxOutputBytes)
	case err == nil:
		return stdout.bytes(), nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("command %q: cancelled: %w", name, parent.Err())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("command %q: %w after %s (process group killed)%s", name, ErrTimeout, s.opts.Timeout, stderr.suffix())
	case errors.Is(err, osexec.ErrWaitDelay):
		return nil, fmt.Errorf("command %q: exited but a descendant kept its output open for %s (killed)%s", name, waitDelay, stderr.suffix())
	}
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return nil, fmt.Errorf("command %q: %w: %s%s", name, ErrExit, ee.ProcessState, stderr.suffix())
	}
	return nil, fmt.Errorf("command %q: %w", name, err)
}

// env passes through only the allow-listed variables that are set.
func (s *Source) env() []string {
	env := make([]string, 0, len(s.opts.Env)) // non-nil: an empty env, not the daemon's
	for _, name := range s.opts.Env {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// capWriter keeps at most limit bytes. When more arrive it records the
// overflow, calls onFull once and drops the rest (without failing the write,
// so the copy goroutine drains the pipe while the process is being killed).
type capWriter struct {
	mu       sync.Mutex
	buf      []byte
	limit    int64
	overflow bool
	onFull   func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.limit - int64(len(w.buf))
	if int64(len(p)) <= room {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		w.buf = append(w.buf, p[:room]...)
	}
	if !w.overflow {
		w.overflow = true
		if w.onFull != nil {
			w.onFull()
		}
	}
	return len(p), nil
}

func (w *capWriter) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.overflow
}

func (w *capWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf
}

// suffix renders captured standard error for an error message.
func (w *capWriter) suffix() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	text := strings.TrimSpace(strings.ToValidUTF8(string(w.buf), "?"))
	if text == "" {
		return ""
	}
	if w.overflow {
		text += " [truncated]"
	}
	return "; stderr: " + text
}
