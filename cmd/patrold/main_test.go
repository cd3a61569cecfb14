package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type cli struct {
	t   *testing.T
	cfg string
	dir string
}

func newCLI(t *testing.T, extra string) *cli {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "patrold.yaml")
	if !strings.Contains(extra, "http:") {
		extra += "http: {listen: '127.0.0.1:1'}\n" // no daemon answers: the database is used
	}
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "var")+"\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return &cli{t: t, cfg: cfg, dir: dir}
}

func (c *cli) run(argv ...string) (string, int) {
	c.t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&app{stdout: &out, stderr: &errb})
	root.SetArgs(append([]string{"--config", c.cfg}, argv...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		return out.String() + errb.String() + err.Error(), exitCode(err)
	}
	return out.String(), 0
}

func hashDB(t *testing.T, dir string) string {
	h := sha256.New()
	for _, f := range []string{"patrold.db", "patrold.db-wal"} {
		data, _ := os.ReadFile(filepath.Join(dir, "var", f))
		h.Write(data)
	}
	return string(h.Sum(nil))
}

func TestRunAndMalformedSnapshot(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("run", "--snapshot", "../../examples/small-faults.json", "--output", "json")
	if code != 0 {
		t.Fatalf("run: %d %s", code, out)
	}
	var rep struct {
		Status   string `json:"status"`
		Findings []struct {
			ID string `json:"id"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Status != "critical" || len(rep.Findings) != 9 {
		t.Fatalf("report: %v %s", err, out)
	}
	before := hashDB(t, c.dir)
	for _, bad := range []string{"not json at all", `{"version": 7, "resources": []}`, `{"version": 1}`} {
		p := filepath.Join(c.dir, "bad.json")
		os.WriteFile(p, []byte(bad), 0o600)
		out, code = c.run("run", "--snapshot", p)
		if code != 2 || !strings.Contains(out, "invalid snapshot") {
			t.Errorf("%q: exit %d: %s", bad, code, out)
		}
	}
	if hashDB(t, c.dir) != before {
		t.Fatal("a rejected snapshot changed the store")
	}
	out, _ = c.run("findings", "list")
	if strings.Count(out, "\n") != 10 {
		t.Fatalf("findings list:\n%s", out)
	}
	out, code = c.run("findings", "show", rep.Findings[0].ID)
	if code != 0 || !strings.Contains(out, "history:") {
		t.Fatalf("show: %d %s", code, out)
	}
	if out, code = c.run("findings", "show", "0123456789abcdef"); code != 1 || !strings.Contains(out, "not found") {
		t.Fatalf("show unknown: %d %s", code, out)
	}
	if out, code = c.run("findings", "show", "nope"); code != 2 || !strings.HasSuffix(out, `finding id "nope": must be 16 lower-case hex characters`) {
		t.Fatalf("show malformed: %d %s", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	c := newCLI(t, "")
	cases := [][]string{
		{"run", "--output", "yaml"},
		{"run", "--nope"},
		{"findings", "show"},
		{"snapshot", "validate"},
		{"demo", "export", "--fault-rate", "3"},
	}
	for _, argv := range cases {
		if out, code := c.run(argv...); code != 2 {
			t.Errorf("%v: exit %d (%s)", argv, code, out)
		}
	}
	bad := newCLI(t, "schedule: {cron: nonsense}\n")
	out, code := bad.run("config", "check")
	if code != 2 || !strings.Contains(out, "schedule.cron") {
		t.Errorf("config check: %d %s", code, out)
	}
}

func TestSnapshotValidateAndDemoExport(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("demo", "export", "--resources", "200", "--fault-rate", "0.2", "--seed", "7")
	if code != 0 {
		t.Fatal(out)
	}
	p := filepath.Join(c.dir, "demo.json")
	os.WriteFile(p, []byte(out), 0o600)
	out, code = c.run("snapshot", "validate", "--strict", p)
	if code != 0 || !strings.Contains(out, "200 valid resources") {
		t.Fatalf("validate: %d %s", code, out)
	}
	os.WriteFile(p, []byte(`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"cpu_percent":300}}]}`), 0o600)
	out, code = c.run("snapshot", "validate", p)
	if code != 2 || !strings.Contains(out, "vm/1: metrics.cpu_percent: outside 0..100") {
		t.Fatalf("invalid resource: %d %s", code, out)
	}
}
