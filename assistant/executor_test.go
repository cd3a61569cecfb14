package assistant

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

func TestExpandArgsNeverTouchesTheProgram(t *testing.T) {
	v := Vars{ResourceID: "vm/101", FindingID: "abcd", Key: "high_cpu"}
	got := ExpandArgs([]string{"/opt/{key}/run", "--id={resource_id}", "{finding_id}:{key}", "{unknown}"}, v)
	equal(t, "argv", got, []string{"/opt/{key}/run", "--id=vm/101", "abcd:high_cpu", "{unknown}"})
}

// TestArgvRefusesAnOption: a placeholder whose value starts with "-" is
// refused wherever it stands in the arguments, and the executor never
// starts the program; a value used nowhere, or a dash inside a value, is
// fine.
func TestArgvRefusesAnOption(t *testing.T) {
	cmd := []string{"/opt/prune", "--pool={resource_id}", "{finding_id}", "{key}"}
	cases := []struct {
		v    Vars
		want string
	}{
		{Vars{ResourceID: "--all", FindingID: "abcd", Key: "high_disk"}, `the value of {resource_id} in command[1] starts with "-": the program would read it as an option`},
		{Vars{ResourceID: "storage/pve1/tank", FindingID: "-rf", Key: "high_disk"}, `the value of {finding_id} in command[2] starts with "-": the program would read it as an option`},
		{Vars{ResourceID: "storage/pve1/tank", FindingID: "abcd", Key: "-x"}, `the value of {key} in command[3] starts with "-": the program would read it as an option`},
	}
	for _, c := range cases {
		if argv, err := Argv(cmd, c.v); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %q %v, want %q", c.v, argv, err, c.want)
		}
	}
	argv, err := Argv([]string{"/opt/prune", "{resource_id}"}, Vars{ResourceID: "storage/pve1/a-b", Key: "-unused"})
	equal(t, "fit argv", argv, []string{"/opt/prune", "storage/pve1/a-b"})
	if err != nil {
		t.Fatal(err)
	}

	marker := filepath.Join(t.TempDir(), "ran")
	e := executor{timeout: 5 * time.Second, maxOutput: 4096}
	res, err := e.run(context.Background(), Action{Name: "touch", Command: []string{"/usr/bin/touch", marker, "{resource_id}"}}, Vars{ResourceID: "--all"})
	want := ExecResult{Action: "touch", Argv: []string{}, ExitCode: -1,
		Error: `the value of {resource_id} in command[2] starts with "-": the program would read it as an option`}
	if err != nil || !reflect.DeepEqual(res, want) {
		t.Fatalf("run: %+v %v, want %+v", res, err, want)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the program ran: %v", err)
	}
}

func TestExecutorNoShellNoDaemonEnv(t *testing.T) {
	t.Setenv("PATROLD_TEST_SECRET", "hunter2")
	e := executor{timeout: 5 * time.Second, maxOutput: 4096}
	// A shell metacharacter in an argument is data, not syntax.
	res, err := e.run(context.Background(), Action{Name: "echo", Command: []string{"/bin/echo", "{resource_id}"}}, Vars{ResourceID: "vm/1; rm -rf /"})
	if err != nil || !res.OK() || strings.TrimSpace(res.Output) != "vm/1; rm -rf /" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	res, err = e.run(context.Background(), Action{Name: "env", Command: []string{"/usr/bin/env"}}, Vars{ResourceID: "vm/1", Key: "k"})
	if err != nil || strings.Contains(res.Output, "hunter2") || !strings.Contains(res.Output, "PATROLD_RESOURCE_ID=vm/1") {
		t.Fatalf("env leaked or missing: %q %v", res.Output, err)
	}
}

func TestExecutorTimeoutKillsTheGroup(t *testing.T) {
	e := executor{timeout: 200 * time.Millisecond, maxOutput: 4096}
	start := time.Now()
	// The child sleeps in the background too: the whole group must die.
	res, err := e.run(context.Background(), Action{Name: "slow", Command: []string{"/bin/sh", "-c", "sleep 30 & sleep 30"}}, Vars{})
	if err != nil || !res.TimedOut || res.OK() || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %+v %v after %s", res, err, time.Since(start))
	}
}

func TestExecutorBoundsOutputAndReportsExit(t *testing.T) {
	e := executor{timeout: 5 * time.Second, maxOutput: 100}
	res, err := e.run(context.Background(), Action{Name: "loud", Command: []string{"/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; exit 4"}}, Vars{})
	if err != nil || len(res.Output) != 100 || !res.Truncated || res.ExitCode != 4 || res.OK() {
		t.Fatalf("loud: len %d %+v %v", len(res.Output), res.ExitCode, err)
	}
	res, _ = e.run(context.Background(), Action{Name: "missing", Command: []string{"/nonexistent/prog"}}, Vars{})
	if res.OK() || res.Error == "" {
		t.Fatalf("missing program: %+v", res)
	}
}

func TestParseActionsNamesTheKey(t *testing.T) {
	cases := []struct {
		a    ActionSpec
		want string
	}{
		{ActionSpec{Name: "", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"*"}}, "actions[0].name:"},
		{ActionSpec{Name: "x y", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"*"}}, "actions[0].name:"},
		{ActionSpec{Name: "a", Risk: "low", Kinds: []string{"storage"}, Signals: []string{"*"}}, "actions[0].command: required"},
		{ActionSpec{Name: "a", Command: []string{"/bin/{key}"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"*"}}, "actions[0].command[0]: placeholders"},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "extreme", Signals: []string{"*"}}, `actions[0].risk: "extreme"`},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{" "}}, "actions[0].signals[0]: empty"},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Risk: "low", Signals: []string{"*"}}, "actions[0].kinds: required"},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"pool"}, Risk: "low", Signals: []string{"*"}}, `actions[0].kinds[0]: "pool" is not one of`},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"vm"}, Risk: "low"}, "actions[0].signals: required"},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"vm"}, Risk: "low", Signals: []string{}}, "actions[0].signals: required"},
		{ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"vm"}, Risk: "low", Signals: []string{"*", "high_cpu"}}, `actions[0].signals[0]: "*" (any signal) must be the only entry`},
	}
	for _, c := range cases {
		_, err := ParseActions([]ActionSpec{c.a})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.a, err, c.want)
		}
	}
	ok := ActionSpec{Name: "a", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"CPU-High"}}
	_, err := ParseActions([]ActionSpec{ok, ok})
	if err == nil || !strings.Contains(err.Error(), `actions[1].name: duplicate action "a"`) {
		t.Fatalf("duplicate: %v", err)
	}
	got, err := ParseActions([]ActionSpec{ok})
	if err != nil || !got[0].Declares("high_cpu") || got[0].Declares("high_disk") {
		t.Fatalf("signals normalised: %+v %v", got, err)
	}
	anyGuest := ActionSpec{Name: "g", Command: []string{"/bin/true"}, Kinds: []string{"guest"}, Risk: "low", Signals: []string{"*"}}
	got, err = ParseActions([]ActionSpec{anyGuest})
	if err != nil || !slices.Equal(got[0].Kinds, []snapshot.Kind{snapshot.KindVM, snapshot.KindContainer}) ||
		!got[0].AppliesTo("high_disk") || got[0].Declares("high_disk") || got[0].AllowsKind(snapshot.KindStorage) {
		t.Fatalf("guest and any signal: %+v %v", got, err)
	}
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, ActionSpec{Name: "a", Command: []string{"no-such-program-here"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"*"}})
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "actions[0].command[0]") {
		t.Fatalf("missing program at New: %v", err)
	}
	o = fx.options(findings.AutonomyFull)
	o.Store, o.Config.ApprovalTTL = nil, -time.Second
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "store: required") || !strings.Contains(err.Error(), "assistant.approval_ttl") {
		t.Fatalf("validate: %v", err)
	}
}
