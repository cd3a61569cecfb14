// Package deploy_test keeps the deployment files honest. The systemd unit
// has every line the docs promise. The NATS example parses with the real
// server. The dashboard is valid and its PromQL compiles. Every metric they
// name is one the daemon exports.
package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/patrold/patrold/config"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("required file: %v", err)
	}
	return string(b)
}

// tool returns the path of a command, skipping only outside CI.
func tool(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not on PATH", name)
	}
	return bin
}

// unitDirective is one "Key=Value" line of the unit with its section.
type unitDirective struct {
	Section, Key, Value string
	Commented           bool // the line above is a comment
	Line                int
}

func parseUnit(text string) []unitDirective {
	var out []unitDirective
	section, commented := "", false
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "#"):
			commented = true
			continue
		case strings.HasPrefix(l, "["):
			section = strings.Trim(l, "[]")
		case l != "":
			k, v, _ := strings.Cut(l, "=")
			out = append(out, unitDirective{section, k, v, commented, n})
		}
		commented = false
	}
	return out
}

// hardening are the directives that restrict the service; each must carry
// a comment saying why.
var hardening = map[string]bool{
	"DynamicUser": true, "User": true, "StateDirectory": true, "ReadWritePaths": true, "ProtectSystem": true,
	"ProtectHome": true, "PrivateTmp": true, "PrivateDevices": true, "NoNewPrivileges": true,
	"CapabilityBoundingSet": true, "AmbientCapabilities": true, "RestrictAddressFamilies": true,
	"SystemCallFilter": true, "SystemCallArchitectures": true, "RestrictNamespaces": true,
	"ProtectKernelTunables": true, "ProtectKernelModules": true, "ProtectKernelLogs": true,
	"ProtectControlGroups": true, "ProtectClock": true, "ProtectHostname": true, "ProtectProc": true,
	"MemoryDenyWriteExecute": true, "LockPersonality": true, "RestrictRealtime": true, "RestrictSUIDSGID": true,
	"UMask": true, "RemoveIPC": true, "DevicePolicy": true, "ProcSubset": true, "StateDirectoryMode": true,
	"SystemCallErrorNumber": true,
}

// checkUnit returns what the unit gets wrong.
func checkUnit(text string, drain time.Duration) []string {
	var p []string
	got := map[string][]string{}
	for _, d := range parseUnit(text) {
		if d.Section != "Service" {
			continue
		}
		got[d.Key] = append(got[d.Key], d.Value)
		if hardening[d.Key] && !d.Commented {
			p = append(p, fmt.Sprintf("line %d: %s has no comment", d.Line, d.Key))
		}
	}
	want := map[string]string{
		"Type": "notify", "ExecReload": "/bin/kill -HUP $MAINPID", "ProtectSystem": "strict",
		"ReadWritePaths": "/var/lib/patrold", "StateDirectory": "patrold", "NoNewPrivileges": "yes",
		"CapabilityBoundingSet": "", "PrivateTmp": "yes", "ProtectHome": "yes",
	}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v {
			p = append(p, fmt.Sprintf("%s: want exactly %q, have %q", k, v, got[k]))
		}
	}
	// The data directory, and glibc's and Go's memory policy (the unit
	// says why).
	env := []string{"PATROLD_DATA_DIR=/var/lib/patrold", "MALLOC_ARENA_MAX=2", "MALLOC_TRIM_THRESHOLD_=131072", "MALLOC_MMAP_THRESHOLD_=131072", "GOGC=50"}
	if !slices.Equal(got["Environment"], env) {
		p = append(p, fmt.Sprintf("Environment: want exactly %q, have %q", env, got["Environment"]))
	}
	if got["DynamicUser"] == nil && got["User"] == nil {
		p = append(p, "neither DynamicUser nor User is set: the daemon would run as root")
	}
	if !containsAll(got["SystemCallFilter"], "@system-service") {
		p = append(p, "SystemCallFilter=@system-service missing")
	}
	if len(got["RestrictAddressFamilies"]) == 0 || len(got["WatchdogSec"]) == 0 {
		p = append(p, "RestrictAddressFamilies and WatchdogSec are required")
	}
	stop, err := time.ParseDuration(strings.Join(got["TimeoutStopSec"], ""))
	if err != nil || stop <= drain {
		p = append(p, fmt.Sprintf("TimeoutStopSec %q must be longer than schedule.drain_timeout %s", got["TimeoutStopSec"], drain))
	}
	return p
}

func containsAll(vals []string, want ...string) bool {
	joined := " " + strings.Join(vals, " ") + " "
	for _, w := range want {
		if !strings.Contains(joined, " "+w+" ") {
			return false
		}
	}
	return true
}

func TestSystemdUnit(t *testing.T) {
	unit := read(t, "patrold.service")
	drain := config.Default().Schedule.DrainTimeout
	for _, p := range checkUnit(unit, drain) {
		t.Error(p)
	}
	// The checks notice drift.
	for name, bad := range map[string]string{
		"uncommented hardening":   strings.Replace(unit, "# A private /tmp and /var/tmp, emptied when the service stops.\n", "", 1),
		"stop shorter than drain": strings.Replace(unit, "TimeoutStopSec=45s", "TimeoutStopSec=20s", 1),
		"extra writable path":     strings.Replace(unit, "ReadWritePaths=/var/lib/patrold", "ReadWritePaths=/var/lib/patrold /etc", 1),
		"plain reload":            strings.Replace(unit, "ExecReload=/bin/kill -HUP $MAINPID", "ExecReload=/bin/true", 1),
	} {
		if bad == unit {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if len(checkUnit(bad, drain)) == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
}

// TestSystemdVerify runs systemd-analyze verify on a copy whose ExecStart
// exists; any complaint (an unknown or misspelt directive) fails.
func TestSystemdVerify(t *testing.T) {
	bin := tool(t, "systemd-analyze")
	unit := strings.Replace(read(t, "patrold.service"), "ExecStart=/usr/local/bin/patrold", "ExecStart=/bin/true", 1)
	path := filepath.Join(t.TempDir(), "patrold.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestNATSExample parses the example with the NATS server's own parser.
func TestNATSExample(t *testing.T) {
	opts, err := server.ProcessConfigFile("nats-example.conf")
	if err != nil {
		t.Fatalf("nats-example.conf: %v", err)
	}
	if !opts.JetStream || opts.Cluster.Name != "patrol" || len(opts.Routes) != 3 || opts.SystemAccount != "SYS" {
		t.Errorf("unexpected options: jetstream=%v cluster=%q routes=%d system=%q", opts.JetStream, opts.Cluster.Name, len(opts.Routes), opts.SystemAccount)
	}
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	p := users["patrold"]
	if p == nil || p.Account == nil || p.Account.Name != "PATROL" || p.Permissions == nil {
		t.Fatalf("user patrold in account PATROL with permissions expected: %+v", p)
	}
	if !containsAll(p.Permissions.Publish.Allow, "patrol.>", "$JS.API.>", "$KV.patrold_leader.>") {
		t.Errorf("patrold cannot publish what it needs: %v", p.Permissions.Publish.Allow)
	}
	if s := users["subscriber"]; s == nil || containsAll(s.Permissions.Publish.Allow, "patrol.>") {
		t.Error("the subscriber must exist and must not publish events")
	}
}
