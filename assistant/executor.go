package assistant

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// actionPath is the PATH actions run with. The daemon's own environment
// (which may hold API keys) is never passed to an action.
const actionPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// actionWaitDelay bounds the wait for pipes a descendant keeps open.
const actionWaitDelay = 2 * time.Second

// ExecResult is what one action run produced; it is the run_action result.
type ExecResult struct {
	Action     string   `json:"action"`
	Argv       []string `json:"argv"`
	ExitCode   int      `json:"exit_code"`
	Output     string   `json:"output"`
	Truncated  bool     `json:"truncated,omitempty"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	Error      string   `json:"error,omitempty"`
}

// OK reports whether the action exited 0 in time.
func (r ExecResult) OK() bool { return r.Error == "" && r.ExitCode == 0 && !r.TimedOut }

// executor runs actions: argv with no shell, in their own process group,
// with a fixed small environment, a timeout and bounded output.
type executor struct {
	timeout   time.Duration
	maxOutput int
}

// Vars are the placeholder values of one run.
type Vars struct {
	ResourceID, FindingID, Key, SessionID string
}

// ExpandArgs substitutes the placeholders in command[1:]; command[0] is
// returned as it is.
func ExpandArgs(command []string, v Vars) []string {
	r := strings.NewReplacer(PlaceholderResourceID, v.ResourceID, PlaceholderFindingID, v.FindingID, PlaceholderKey, v.Key)
	out := make([]string, len(command))
	for i, arg := range command {
		if i == 0 {
			out[i] = arg
			continue
		}
		out[i] = r.Replace(arg)
	}
	return out
}

// Argv substitutes the placeholders in command[1:] and refuses a value
// that starts with "-": the program would read the id or key as an
// option ("--all"). Nothing runs with such an argv (docs/ASSISTANT.md).
func Argv(command []string, v Vars) ([]string, error) {
	values := []struct{ name, value string }{{PlaceholderResourceID, v.ResourceID}, {PlaceholderFindingID, v.FindingID}, {PlaceholderKey, v.Key}}
	for i := 1; i < len(command); i++ {
		for _, p := range values {
			//mutate:action-argv-no-option ./assistant,./cmd/patrold ^(TestArgvRefusesAnOption|TestActionArgvOptionRefused)$
			if strings.Contains(command[i], p.name) && strings.HasPrefix(p.value, "-") {
				return nil, fmt.Errorf("the value of %s in command[%d] starts with \"-\": the program would read it as an option", p.name, i)
			}
		}
	}
	return ExpandArgs(command, v), nil
}

// vars are the placeholder values of the session's finding.
func (e *env) vars() Vars {
	return Vars{ResourceID: e.finding.ResourceID, FindingID: e.finding.ID, Key: e.finding.Key, SessionID: e.sessionID}
}

// run executes the action. A start failure, a non-zero exit or a timeout
// is reported in the result (OK() false); the error is only the caller's
// cancellation.
func (e executor) run(ctx context.Context, a Action, v Vars) (ExecResult, error) {
	argv, err := Argv(a.Command, v)
	if err != nil {
		// The pre-check refused it already; never run it regardless.
		return ExecResult{Action: a.Name, Argv: []string{}, ExitCode: -1, Error: err.Error()}, nil
	}
	res := ExecResult{Action: a.Name, Argv: argv}
	rctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	out := &boundedBuffer{limit: e.maxOutput}
	cmd := exec.CommandContext(rctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + actionPath, "PATROLD_RESOURCE_ID=" + v.ResourceID,
		"PATROLD_FINDING_ID=" + v.FindingID, "PATROLD_KEY=" + v.Key, "PATROLD_SESSION_ID=" + v.SessionID}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = actionWaitDelay
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		_ = killGroup(cmd.Process.Pid) // descendants never outlive the action
	}
	res.DurationMS = time.Since(start).Milliseconds()
	res.Output, res.Truncated = out.text()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		res.TimedOut, res.ExitCode = true, -1
		res.Error = "timed out after " + e.timeout.String() + " (process group killed)"
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		res.Error = ee.ProcessState.String()
	default:
		res.ExitCode = -1
		res.Error = err.Error()
	}
	return res, nil
}

func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// boundedBuffer keeps the first limit bytes written and notes the rest
// was dropped; writes never fail, so the process is never blocked on a
// full pipe.
type boundedBuffer struct {
	mu      sync.Mutex
	buf     []byte
	limit   int
	dropped bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.limit - len(b.buf); n > room {
		b.dropped = true
		p = p[:max(room, 0)]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *boundedBuffer) text() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "?"), b.dropped
}
