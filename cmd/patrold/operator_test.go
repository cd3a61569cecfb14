package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/daemon"
)

// TestVersionFlag: --version prints what `patrold version` prints.
func TestVersionFlag(t *testing.T) {
	c := newCLI(t, "")
	flag, code := c.run("--version")
	if code != 0 {
		t.Fatalf("--version: exit %d %s", code, flag)
	}
	cmd, _ := c.run("version")
	if flag != cmd || !strings.HasPrefix(flag, "patrold "+version+" (commit ") || !strings.HasSuffix(flag, runtime.Version()+")\n") {
		t.Fatalf("--version %q, version %q", flag, cmd)
	}
}

// TestAckIsShownAndIdempotent: an acknowledgement shows in list (text
// and JSON) and show; acking again succeeds and records nothing more.
func TestAckIsShownAndIdempotent(t *testing.T) {
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatalf("run: %s", out)
	}
	out, _ := c.run("findings", "list")
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	for range 2 {
		if out, code := c.run("findings", "ack", id); code != 0 || !strings.HasPrefix(out, "ack "+id+": ") {
			t.Fatalf("ack: %d %s", code, out)
		}
	}
	show, _ := c.run("findings", "show", id)
	if n := len(regexp.MustCompile(`(?m)^    \S+  acknowledged `).FindAllString(show, -1)); n != 1 || !regexp.MustCompile(`(?m)^  acknowledged:\s+\d{4}-`).MatchString(show) {
		t.Fatalf("show after two acks: %d acknowledged events\n%s", n, show)
	}
	list, _ := c.run("findings", "list")
	acked := 0
	for _, line := range strings.Split(list, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == id && f[3] == "yes" {
			acked++
		} else if len(f) > 3 && f[3] != "-" {
			t.Errorf("an unacknowledged finding shows %q: %s", f[3], line)
		}
	}
	if acked != 1 || !strings.Contains(strings.Split(list, "\n")[0], " ACKED ") {
		t.Fatalf("list does not show the ack:\n%s", list)
	}
	raw, _ := c.run("findings", "list", "--output", "json")
	var views []map[string]any
	if err := json.Unmarshal([]byte(raw), &views); err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if (v["id"] == id) != (v["acknowledged_at"] != nil) {
			t.Errorf("JSON acknowledged_at: %v", v)
		}
	}
}

// TestReadCommandsCreateNoDatabase: in a directory with nothing recorded,
// store commands say so (exit 1) and create neither data_dir nor a
// database.
func TestReadCommandsCreateNoDatabase(t *testing.T) {
	c := newCLI(t, "")
	for _, argv := range [][]string{
		{"findings", "list"}, {"findings", "show", "0123456789abcdef"}, {"findings", "ack", "0123456789abcdef"},
		{"runs", "list"}, {"approvals", "list"}, {"silences", "list"},
	} {
		_, errOut, code := c.run3(argv...)
		want := "no database at " + filepath.Join(c.dir, "var", "patrold.db")
		if code != 1 || !strings.HasPrefix(errOut, want) {
			t.Errorf("%v: exit %d %q, want exit 1 starting %q", argv, code, errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Join(c.dir, "var")); !os.IsNotExist(err) {
		t.Fatalf("data_dir was created: %v", err)
	}
}

// TestMalformedIDsExit2: an argument that cannot be an id is bad usage,
// named, before any database is opened.
func TestMalformedIDsExit2(t *testing.T) {
	c := newCLI(t, "")
	for argv, want := range map[string]string{
		"findings show ABC":              `finding id "ABC": must be 16 lower-case hex characters`,
		"findings ack 0123456789ABCDEF":  `finding id "0123456789ABCDEF": must be 16 lower-case hex characters`,
		"findings resolve nope --note x": `finding id "nope": must be 16 lower-case hex characters`,
		"runs show 42":                   `run id "42": must be a ULID (26 characters)`,
		"approvals approve x/../y":       `approval id "x/../y": must be a ULID (26 characters)`,
		"silences expire 01JNQ4X":        `silence id "01JNQ4X": must be a ULID (26 characters)`,
	} {
		_, errOut, code := c.run3(strings.Fields(argv)...)
		if code != 2 || errOut != want {
			t.Errorf("%s: exit %d %q, want 2 %q", argv, code, errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Join(c.dir, "var")); !os.IsNotExist(err) {
		t.Fatalf("data_dir was created: %v", err)
	}
}

// TestSilencesCLI: create, list and expire silences against the database
// and through a running daemon, with the same validation both ways.
func TestSilencesCLI(t *testing.T) {
	snap, _ := filepath.Abs("../../examples/small-healthy.json")
	c := newCLI(t, "http: {listen: '"+freeAddr(t)+"', tokens: [{name: ops, token: cli-admin-token-01, scope: admin}]}\n"+
		"nats: {embedded: {listen: '127.0.0.1:0'}}\nlog: {level: warn}\n"+
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: "+snap+"}}\n")
	if _, code := c.run("migrate"); code != 0 {
		t.Fatal("migrate failed")
	}
	check := func(via string) {
		t.Helper()
		out, code := c.run("silences", "create", "--resource", "vm/1*", "--category", "backup", "--comment", "move", "--for", "2h", "--output", "json")
		var s struct {
			ID       string            `json:"id"`
			Matchers map[string]string `json:"matchers"`
			Author   string            `json:"author"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &s) != nil || len(s.ID) != 26 || s.Matchers["resource"] != "vm/1*" || s.Matchers["category"] != "backup" {
			t.Fatalf("%s create: %d %s", via, code, out)
		}
		out, code = c.run("silences", "list", "--active")
		if code != 0 || !strings.Contains(out, s.ID+"  active ") || !strings.Contains(out, "resource=vm/1* category=backup") {
			t.Fatalf("%s list: %d\n%s", via, code, out)
		}
		if out, code = c.run("silences", "expire", s.ID); code != 0 || out != "silence "+s.ID+" expired\n" {
			t.Fatalf("%s expire: %d %s", via, code, out)
		}
		if out, code = c.run("silences", "list", "--active", "--output", "json", "--envelope"); code != 0 || !strings.Contains(out, `"silences": []`) || !strings.Contains(out, `"next_cursor": ""`) {
			t.Fatalf("%s list after expire: %d %s", via, code, out)
		}
		if _, errOut, code := c.run3("silences", "expire", s.ID); code != 1 || errOut == "" {
			t.Fatalf("%s expire twice: %d %q", via, code, errOut)
		}
		for argv, want := range map[string]string{
			"silences create --comment x --for 2h":                       "matchers",
			"silences create --resource vm/1 --for 2h":                   "comment",
			"silences create --resource vm/1 --comment x --for 2400h":    "",
			"silences create --resource vm/1 --comment x":                "--for: give either --for or --ends-at",
			"silences create --resource vm/1 --comment x --ends-at soon": `--ends-at: "soon" is not an RFC 3339 time`,
		} {
			_, errOut, code := c.run3(strings.Fields(argv)...)
			if code != 2 || !strings.Contains(errOut, want) {
				t.Errorf("%s %s: exit %d %q, want 2 naming %q", via, argv, code, errOut, want)
			}
		}
	}
	check("database")
	a := &app{configPath: c.cfg}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	before, _ := d.Store().AuditEvents(context.Background(), 100)
	check("api")
	after, _ := d.Store().AuditEvents(context.Background(), 100)
	if len(after) <= len(before) {
		t.Fatal("the silences did not go through the API (no audit events)")
	}
	// status reads the daemon; without one it fails naming the address.
	out, code := c.run("status")
	if code != 0 || !regexp.MustCompile(`(?m)^role:\s+single$`).MatchString(out) || !strings.Contains(out, "active findings:") {
		t.Fatalf("status: %d\n%s", code, out)
	}
	raw, code := c.run("status", "--output", "json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(raw), &st) != nil || st["role"] != "single" {
		t.Fatalf("status json: %d %s", code, raw)
	}
	d.Stop(context.Background())
	if _, errOut, code := c.run3("status"); code != 1 || !strings.HasPrefix(errOut, "no daemon status at http://"+cfg.HTTP.Listen+": ") {
		t.Fatalf("status without a daemon: %d %q", code, errOut)
	}
}

// TestListEnvelopeCarriesTheCursor: --envelope prints the API's list body,
// whose next_cursor continues the list.
func TestListEnvelopeCarriesTheCursor(t *testing.T) {
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatalf("run: %s", out)
	}
	var seen []string
	cursor := ""
	for range 10 {
		argv := []string{"findings", "list", "--output", "json", "--envelope", "--limit", "4"}
		if cursor != "" {
			argv = append(argv, "--cursor", cursor)
		}
		out, code := c.run(argv...)
		var page struct {
			Findings []struct {
				ID string `json:"id"`
			} `json:"findings"`
			Count      int    `json:"count"`
			NextCursor string `json:"next_cursor"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil || page.Count != len(page.Findings) {
			t.Fatalf("page: %d %s", code, out)
		}
		for _, f := range page.Findings {
			seen = append(seen, f.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 9 {
		t.Fatalf("%d findings over the pages, want 9: %v", len(seen), seen)
	}
}
