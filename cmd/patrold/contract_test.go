package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/store/storetest"
)

// run3 runs the CLI and returns stdout, stderr (with the error) and the
// exit code separately.
func (c *cli) run3(argv ...string) (string, string, int) {
	c.t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&app{stdout: &out, stderr: &errb})
	root.SetArgs(append([]string{"--config", c.cfg}, argv...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		return out.String(), errb.String() + err.Error(), exitCode(err)
	}
	return out.String(), errb.String(), 0
}

// walk visits every command below root (not cobra's help/completion).
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		fn(sub)
		walk(sub, fn)
	}
}

// TestUnknownCommandsExit2AtEveryLevel: an unknown (or missing) subcommand
// is bad usage at the root and in every command group (a group that runs
// by itself, `eval`, only refuses an unknown one).
func TestUnknownCommandsExit2AtEveryLevel(t *testing.T) {
	c := newCLI(t, "")
	groups := [][]string{{}}
	runs := map[string]bool{}
	walk(newRoot(&app{}), func(cmd *cobra.Command) {
		if cmd.HasSubCommands() {
			groups = append(groups, strings.Fields(strings.TrimPrefix(cmd.CommandPath(), "patrold")))
			runs[cmd.CommandPath()] = cmd.Annotations[annotationRunnableGroup] != ""
		}
	})
	if len(groups) < 6 {
		t.Fatalf("found only %d command groups: %v", len(groups), groups)
	}
	for _, g := range groups {
		path := strings.TrimSpace("patrold " + strings.Join(g, " "))
		_, errOut, code := c.run3(append(append([]string{}, g...), "frobnicate")...)
		want := `unknown command "frobnicate" for "` + path + `"`
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s frobnicate: exit %d, %q (want 2, %q)", path, code, errOut, want)
		}
		if len(g) == 0 || runs[path] {
			continue
		}
		_, errOut, code = c.run3(g...)
		if code != 2 || !strings.Contains(errOut, path+" needs a subcommand") {
			t.Errorf("%s: exit %d, %q", path, code, errOut)
		}
	}
	for _, argv := range [][]string{{"findings", "list", "--frobnicate"}, {"--frobnicate"}, {"runs", "list", "extra"}} {
		if _, errOut, code := c.run3(argv...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d %q", argv, code, errOut)
		}
	}
	if out, _, code := c.run3("findings", "--help"); code != 0 || !strings.Contains(out, "list") {
		t.Errorf("--help: exit %d %q", code, out)
	}
}

// TestEveryCommandTakesOutput: every runnable command has --output and
// refuses a format other than text or json with exit 2.
func TestEveryCommandTakesOutput(t *testing.T) {
	c := newCLI(t, "")
	n := 0
	walk(newRoot(&app{}), func(cmd *cobra.Command) {
		if !cmd.Runnable() || cmd.HasSubCommands() {
			return
		}
		n++
		f := cmd.Flags().Lookup("output")
		if f == nil || f.DefValue != "text" {
			t.Errorf("%s: no --output flag defaulting to text", cmd.CommandPath())
			return
		}
		argv := append(strings.Fields(strings.TrimPrefix(cmd.CommandPath(), "patrold")), argsFor(cmd)...)
		_, errOut, code := c.run3(append(argv, "--output", "yaml")...)
		if code != 2 || !strings.Contains(errOut, `--output: "yaml" is not text or json`) {
			t.Errorf("%v --output yaml: exit %d %q", argv, code, errOut)
		}
	})
	if n < 20 {
		t.Fatalf("only %d runnable commands seen", n)
	}
}

// argsFor returns placeholder positional arguments a command accepts.
func argsFor(cmd *cobra.Command) []string {
	for _, n := range []int{0, 1, 2} {
		a := make([]string, n)
		for i := range a {
			a[i] = "x"
		}
		if cmd.Args == nil || cmd.Args(cmd, a) == nil {
			return a
		}
	}
	return nil
}

func TestJSONOutputOfSimpleCommands(t *testing.T) {
	c := newCLI(t, "")
	out, _, code := c.run3("version", "--output", "json")
	var v VersionInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Go != runtime.Version() || v.Version != version {
		t.Fatalf("version json: %d %q", code, out)
	}
	out, _, code = c.run3("migrate", "--output", "json")
	var m MigrateResult
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("migrate json: %d %q", code, out)
	}
	if want := (MigrateResult{Database: filepath.Join(c.dir, "var", "patrold.db"), Version: int64(storetest.NewestMigration(t))}); m != want {
		t.Fatalf("migrate json: %+v, want %+v", m, want)
	}
	out, _, code = c.run3("config", "check", "--output", "json")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc["data_dir"] != filepath.Join(c.dir, "var") {
		t.Fatalf("config check json: %d %q", code, out)
	}
	src, _ := doc["source"].(map[string]any)
	if src["kind"] != "demo" {
		t.Fatalf("config check json source: %v", doc["source"])
	}
	p := filepath.Join(c.dir, "bad.json")
	os.WriteFile(p, []byte(`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"cpu_percent":300}},{"id":"node/a","kind":"node"}]}`), 0o600)
	out, errOut, code := c.run3("snapshot", "validate", p, "--output", "json")
	var vr ValidateResult
	if code != 2 || json.Unmarshal([]byte(out), &vr) != nil || !strings.Contains(errOut, "1 invalid resources") {
		t.Fatalf("validate json: %d %q %q", code, out, errOut)
	}
	wantVR := ValidateResult{Version: 1, Valid: 1, Resources: map[string]int{"node": 1, "vm": 0, "container": 0, "storage": 0, "disk": 0},
		Problems: vr.Problems}
	if !reflect.DeepEqual(vr, wantVR) || len(vr.Problems) != 1 || vr.Problems[0].ID != "vm/1" || vr.Problems[0].Field != "metrics.cpu_percent" {
		t.Fatalf("validate json: %+v", vr)
	}
	out, _, code = c.run3("demo", "export", "--resources", "5", "--output", "json")
	var snap struct {
		Version   int   `json:"version"`
		Resources []any `json:"resources"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &snap) != nil || snap.Version != 1 || len(snap.Resources) != 5 {
		t.Fatalf("demo export json: %d %.200q", code, out)
	}
}

// TestConfigCheckRejectsWhatServeRejects: a missing token file fails
// config check (exit 2, naming the key) as it fails serve.
func TestConfigCheckRejectsWhatServeRejects(t *testing.T) {
	c := newCLI(t, "http: {listen: '127.0.0.1:1', tokens: [{name: ops, token_file: /nonexistent/ops.token, scope: admin}]}\n")
	for _, argv := range [][]string{{"config", "check"}, {"serve"}} {
		_, errOut, code := c.run3(argv...)
		if code != 2 || !strings.Contains(errOut, "http.tokens[0].token_file") {
			t.Errorf("%v: exit %d %q", argv, code, errOut)
		}
	}
}

// TestFindingsListValidationAndPages: a bad filter is exit 2 with the
// store's message; --limit/--cursor page through the same list.
func TestFindingsListValidationAndPages(t *testing.T) {
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatal(out)
	}
	_, errOut, code := c.run3("findings", "list", "--state", "bogus")
	if want := `state: "bogus" is not one of active, resolved, all (empty: active)`; code != 2 || !strings.Contains(errOut, want) {
		t.Fatalf("--state bogus: exit %d %q", code, errOut)
	}
	if _, errOut, code = c.run3("findings", "list", "--limit", "5000"); code != 2 || !strings.Contains(errOut, "limit: 5000 is not an integer in 1..1000") {
		t.Fatalf("--limit 5000: exit %d %q", code, errOut)
	}
	if _, errOut, code = c.run3("findings", "list", "--cursor", "garbage"); code != 2 || !strings.Contains(errOut, "cursor: not a cursor") {
		t.Fatalf("--cursor garbage: exit %d %q", code, errOut)
	}
	for _, argv := range [][]string{{"findings", "list", "--limit", "0"}, {"runs", "list", "--limit", "0"}, {"approvals", "list", "--limit", "0"}} {
		if _, errOut, code = c.run3(argv...); code != 2 || !strings.Contains(errOut, "limit: 0 is not an integer in 1..1000") {
			t.Errorf("%v: exit %d %q", argv, code, errOut)
		}
	}
	if _, errOut, code = c.run3("approvals", "list", "--cursor", "garbage"); code != 2 || !strings.Contains(errOut, "cursor: not a cursor returned by a previous page of approvals") {
		t.Errorf("approvals --cursor garbage: exit %d %q", code, errOut)
	}
	all, _, code := c.run3("findings", "list", "--output", "json")
	var whole []map[string]any
	if code != 0 || json.Unmarshal([]byte(all), &whole) != nil || len(whole) != 9 {
		t.Fatalf("whole list: %d %q", code, all)
	}
	var paged []map[string]any
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		argv := []string{"findings", "list", "--output", "json", "--limit", "4"}
		if cursor != "" {
			argv = append(argv, "--cursor", cursor)
		}
		out, errOut, code := c.run3(argv...)
		var page []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil {
			t.Fatalf("page: %d %q", code, out)
		}
		paged = append(paged, page...)
		cursor = ""
		if i := strings.Index(errOut, "--cursor "); i >= 0 {
			cursor = strings.TrimSpace(errOut[i+len("--cursor "):])
		}
		if cursor == "" {
			break
		}
	}
	if !reflect.DeepEqual(paged, whole) {
		t.Fatalf("pages differ from the whole list:\n%v\n%v", paged, whole)
	}
}

// TestRunsShowTextAndJSON: runs show prints the report as text by
// default and as the stored JSON with --output json.
func TestRunsShowTextAndJSON(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("run", "--snapshot", "../../examples/small-faults.json", "--output", "json")
	var rep struct {
		RunID string `json:"run_id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatal(out)
	}
	text, _, code := c.run3("runs", "show", rep.RunID)
	if code != 0 || !strings.HasPrefix(text, "run "+rep.RunID+"  trigger=manual  status=critical") || !strings.Contains(text, "findings:\n") {
		t.Fatalf("runs show text: %d %q", code, text)
	}
	js, _, code := c.run3("runs", "show", rep.RunID, "--output", "json")
	var got map[string]any
	if code != 0 || json.Unmarshal([]byte(js), &got) != nil || got["run_id"] != rep.RunID || got["status"] != "critical" {
		t.Fatalf("runs show json: %d %q", code, js)
	}
	list, _, code := c.run3("runs", "list", "--output", "json")
	var runs []struct {
		ID      string          `json:"run_id"`
		Report  json.RawMessage `json:"report"`
		Summary *struct {
			Findings  int `json:"findings"`
			Resources int `json:"resources"`
		} `json:"summary"`
	}
	if code != 0 || json.Unmarshal([]byte(list), &runs) != nil || len(runs) != 1 || runs[0].Report != nil || runs[0].Summary == nil ||
		runs[0].Summary.Findings != 9 || runs[0].Summary.Resources == 0 {
		t.Fatalf("runs list json: %d %s", code, list)
	}
}

func TestDBCheckAndVacuum(t *testing.T) {
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatal(out)
	}
	db := filepath.Join(c.dir, "var", "patrold.db")
	out, _, code := c.run3("db", "check", "--output", "json")
	var res DBResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Bytes == 0 {
		t.Fatalf("db check: %d %q", code, out)
	}
	if want := (DBResult{Database: db, Version: int64(storetest.NewestMigration(t)), Status: "ok", Bytes: res.Bytes}); res != want {
		t.Fatalf("db check: %+v, want %+v", res, want)
	}
	out, _, code = c.run3("db", "vacuum")
	if code != 0 || !strings.HasPrefix(out, "database "+db+": vacuumed, ") {
		t.Fatalf("db vacuum: %d %q", code, out)
	}
	if out, _, code = c.run3("db", "check"); code != 0 || !strings.HasPrefix(out, "database "+db+": ok (schema version "+strconv.Itoa(storetest.NewestMigration(t))+", ") {
		t.Fatalf("db check text: %d %q", code, out)
	}
}

func TestSnapshotSizeLimit(t *testing.T) {
	c := newCLI(t, "source: {file: {max_bytes: 1000}}\n")
	_, errOut, code := c.run3("run", "--snapshot", "../../examples/small-faults.json")
	if code != 2 || !strings.Contains(errOut, "over source.file.max_bytes (1000)") {
		t.Fatalf("run --snapshot over the limit: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "var", "patrold.db")); !os.IsNotExist(err) {
		t.Fatalf("a refused snapshot opened the store: %v", err)
	}
}

// TestClusterNeedsAKey: cluster mode without cluster.secret_file fails
// config check and serve (exit 2), and the message's recipe makes a key
// file both then accept; a key file others can read is refused.
func TestClusterNeedsAKey(t *testing.T) {
	c := newCLI(t, "http: {listen: '127.0.0.1:0'}\ncluster: {instance: node-a}\nnats: {url: 'nats://127.0.0.1:1'}\n")
	for _, argv := range [][]string{{"config", "check"}, {"serve"}} {
		_, errOut, code := c.run3(argv...)
		if code != 2 || !strings.Contains(errOut, "cluster.secret_file: cluster mode needs the deployment key") || !strings.Contains(errOut, daemon.MakeKey) {
			t.Errorf("%v: exit %d %q", argv, code, errOut)
		}
	}
	path := filepath.Join(t.TempDir(), "bus.key")
	recipe := strings.Replace(daemon.MakeKey, "/etc/patrold/bus.key", path, 1)
	if out, err := exec.Command("sh", "-c", recipe).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", recipe, err, out)
	}
	c = newCLI(t, "http: {listen: '127.0.0.1:0'}\ncluster: {instance: node-a, secret_file: "+path+"}\nnats: {url: 'nats://127.0.0.1:1'}\n")
	if out, errOut, code := c.run3("config", "check"); code != 0 {
		t.Fatalf("config check with the recipe's key: exit %d %q %q", code, out, errOut)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := c.run3("config", "check")
	if want := "cluster.secret_file: key file " + path + ": mode 0640 lets group or others read it; chmod 600 it"; code != 2 || !strings.Contains(errOut, want) {
		t.Fatalf("group-readable key: exit %d %q", code, errOut)
	}
}
