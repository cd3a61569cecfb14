package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
)

// TestReloadThroughTheCLI: `patrold reload` against a real `serve`
// process. A changed schedule is in force after it (exit 0); a file the
// daemon refuses leaves the previous configuration and exits 2 with the
// daemon's reason naming the key; a client without the admin token is
// refused (exit 1); with no daemon it exits 1 saying so.
func TestReloadThroughTheCLI(t *testing.T) {
	cfg, data := serveConfig(t, "")
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The CLI reads its own copy: the daemon's file is made invalid below.
	mine := filepath.Join(t.TempDir(), "cli.yaml")
	if err := os.WriteFile(mine, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startPatrold(t, cfg, "serve")
	client, h := apiOf(t, p, data)
	c := &cli{t: t, cfg: mine}
	who := "the daemon at http://" + h.API + " (pid " + strconv.Itoa(h.PID) + ")"

	changed := strings.Replace(string(orig), "@every 1h", "@every 2h", 1)
	if err := os.WriteFile(cfg, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.run3("reload")
	if want := "reloaded: " + who + " re-read and applied its configuration; keys that take effect only after a restart are logged by it\n"; code != 0 || out != want || errOut != "" {
		t.Fatalf("reload: exit %d\nstdout %q\nstderr %q\nwant %q", code, out, errOut, want)
	}
	raw, err := client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var st api.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Schedule != "@every 2h" {
		t.Fatalf("schedule after reload = %q, want @every 2h", st.Schedule)
	}
	out, _, code = c.run3("reload", "--output", "json")
	if want := "{\n  \"status\": \"reloaded\",\n  \"api\": \"" + h.API + "\",\n  \"pid\": " + strconv.Itoa(h.PID) + "\n}\n"; code != 0 || out != want {
		t.Fatalf("reload json: exit %d\n%s\nwant\n%s", code, out, want)
	}

	// The daemon refuses a bad file and keeps the one in force.
	if err := os.WriteFile(cfg, []byte(changed+"bogus_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = c.run3("reload")
	want := "the daemon at http://" + h.API + " kept its configuration: " + cfg + ": invalid configuration: bogus_key: unknown key"
	if code != 2 || out != "" || errOut != want {
		t.Fatalf("refused reload: exit %d\nstdout %q\nstderr %q\nwant   %q", code, out, errOut, want)
	}

	// A client without the admin token.
	reader := filepath.Join(t.TempDir(), "reader.yaml")
	noAdmin := strings.Replace(string(orig), "scope: admin", "scope: read", 1)
	if err := os.WriteFile(reader, []byte(noAdmin), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = (&cli{t: t, cfg: reader}).run3("reload")
	if want := "the daemon at http://" + h.API + " refused the reload (unauthorized): it needs an admin token in http.tokens"; code != 1 || errOut != want {
		t.Fatalf("reload without admin token: exit %d %q\nwant %q", code, errOut, want)
	}

	p.signal(os.Interrupt)
	if code := p.exit(60e9); code != 0 {
		t.Fatalf("serve exit %d", code)
	}
	_, errOut, code = c.run3("reload")
	if code != 1 || !strings.HasPrefix(errOut, "no reload at http://127.0.0.1:0: ") {
		t.Fatalf("reload with no daemon: exit %d %q", code, errOut)
	}
}
