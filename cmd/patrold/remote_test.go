package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/patrol"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestCLIThroughRunningDaemon: with the daemon up, store commands go
// through its API (the audit trail proves it) and behave the same.
func TestCLIThroughRunningDaemon(t *testing.T) {
	snap, _ := filepath.Abs("../../examples/small-healthy.json")
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	c := newCLI(t, "http: {listen: '"+freeAddr(t)+"', tokens: [{name: ops, token: cli-admin-token-01, scope: admin}]}\n"+
		"nats: {embedded: {listen: '127.0.0.1:0'}}\nlog: {level: warn}\n"+
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: "+snap+"}}\n")
	a := &app{configPath: c.cfg}
	cfg, err := a.loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, code := c.run("run", "--snapshot", faults); code != 0 {
		t.Fatal("seed run failed")
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
	out, code := c.run("findings", "list")
	if code != 0 || strings.Count(out, "\n") != 10 {
		t.Fatalf("list through the API: %d\n%s", code, out)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	if out, code = c.run("findings", "snooze", id, "--for", "2h"); code != 0 || !strings.Contains(out, "snoozed") {
		t.Fatalf("snooze: %d %s", code, out)
	}
	if out, code = c.run("findings", "snooze", id, "--for", "500h"); code != 2 {
		t.Fatalf("bad snooze through the API: %d %s", code, out)
	}
	// The same validation and message as against the database.
	_, errOut, code := c.run3("findings", "list", "--state", "bogus")
	if want := `patrold: state: "bogus" is not one of active, resolved, all (empty: active)`; code != 2 || errOut != want[len("patrold: "):] {
		t.Fatalf("--state bogus through the API: exit %d %q", code, errOut)
	}
	if out, errOut, code := c.run3("findings", "list", "--limit", "4"); code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(errOut, "--cursor ") {
		t.Fatalf("a page through the API: %d %q %q", code, out, errOut)
	}
	if _, code = c.run("findings", "show", "0000000000000000"); code != 1 {
		t.Fatalf("unknown id: %d", code)
	}
	events, err := d.Store().AuditEvents(context.Background(), 10)
	if err != nil || len(events) == 0 {
		t.Fatalf("no audit trail: %v %v", events, err)
	}
	if _, err := d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	if out, code = c.run("runs", "list"); code != 0 || strings.Count(out, "\n") < 3 {
		t.Fatalf("runs: %s", out)
	}
}
