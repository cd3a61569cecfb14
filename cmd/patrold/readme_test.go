package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
)

var (
	quickstart = regexp.MustCompile("(?s)<!-- quickstart -->\\s*```sh\\n(.*?)```\\s*<!-- /quickstart -->")
	// runEnv is RUN_ENV of the Makefile: what `make run` sets.
	runEnv    = regexp.MustCompile(`(?m)^RUN_ENV\s*:=\s*((?:.*\\\n)*.*)$`)
	envAssign = regexp.MustCompile(`(\w+)=("[^"]*"|[^\s\\]+)`)
)

// TestReadmeQuickStartBesideMakeRun starts the daemon as `make run` does
// (the Makefile's RUN_ENV, `serve --config /dev/null`, in a fresh
// directory with bin/patrold and examples/) and runs the README's
// quick-start lines in order in another shell, each of which must exit 0.
// The one change: the daemon's HTTP and NATS ports are free ones, set
// through PATROLD_HTTP_LISTEN and PATROLD_NATS_EMBEDDED_LISTEN for both
// sides and put in place of 127.0.0.1:9477 in the lines, since other
// tests run at the same time.
func TestReadmeQuickStartBesideMakeRun(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is needed (.ci/run installs it)")
		}
		t.Skip("no curl")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := quickstart.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- quickstart --> block")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	em := runEnv.FindSubmatch(mk)
	if em == nil {
		t.Fatal("the Makefile has no RUN_ENV")
	}
	var env []string
	for _, kv := range envAssign.FindAllStringSubmatch(string(em[1]), -1) {
		env = append(env, kv[1]+"="+strings.Trim(kv[2], `"`))
	}
	if len(env) < 3 {
		t.Fatalf("RUN_ENV parsed as %q", env)
	}
	if !regexp.MustCompile(`(?m)^run: build\n\t\$\(RUN_ENV\) \./\$\(BIN\) serve --config /dev/null$`).Match(mk) {
		t.Fatal("make run no longer starts `$(RUN_ENV) ./$(BIN) serve --config /dev/null`: update this test")
	}

	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// bin/patrold is this test binary running patrold's main.
	wrapper := "#!/bin/sh\n" + execEnv + "=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "patrold"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Abs("../../examples")
	if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	httpAddr, natsAddr := freeAddr(t), freeAddr(t)
	env = append(env, "PATROLD_HTTP_LISTEN="+httpAddr, "PATROLD_NATS_EMBEDDED_LISTEN="+natsAddr)
	p := &proc{t: t, stderr: &testkit.LogBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(dir, "bin", "patrold"), "serve", "--config", "/dev/null")
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("daemon output:\n%s", p.stderr.String())
		}
	})
	// Ready, and the first (startup) run has filed findings.
	testkit.Eventually(t, 60*time.Second, "the daemon's first run", func() bool {
		select {
		case <-p.done:
			t.Fatalf("the daemon exited:\n%s", p.stderr.String())
		default:
		}
		resp, err := http.Get("http://" + httpAddr + "/api/v1/runs")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200 && strings.Contains(p.stderr.String(), "finding new")
	})
	lines := 0
	for _, line := range strings.Split(string(m[1]), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		lines++
		line = strings.ReplaceAll(line, "127.0.0.1:9477", httpAddr)
		cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("README line %q: %v\n%s", line, err, out)
		}
	}
	if lines < 5 {
		t.Fatalf("only %d quick-start lines", lines)
	}
	before := len(p.stderr.String())
	p.signal(os.Interrupt)
	if code := p.exit(60 * time.Second); code != 0 {
		t.Fatalf("the daemon exited %d", code)
	}
	// A clean stop warns about nothing.
	for _, l := range strings.Split(p.stderr.String()[before:], "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("the daemon logged: %s", l)
		}
	}
}

var realFleet = regexp.MustCompile("(?s)<!-- realfleet:(\\w+) -->\\n```yaml\\n(.*?)```")

// TestReadmeRealFleetConfigsCheck: the README's Proxmox and Prometheus
// configurations pass `patrold config check` as written. The one change:
// /etc/patrold, /etc/credstore and /var/lib/patrold are a temporary
// directory, where the token secret and a CA certificate are put as the
// README says; ${CREDENTIALS_DIRECTORY} names the credential store.
func TestReadmeRealFleetConfigsCheck(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range realFleet.FindAllSubmatch(readme, -1) {
		blocks[string(m[1])] = string(m[2])
	}
	want := map[string][]string{
		"proxmox":    {"kind: proxmox", "url: https://pve1.example:8006", "token_id: patrold@pve!patrol"},
		"prometheus": {"kind: prometheus", "url: http://127.0.0.1:9090"},
	}
	if len(blocks) != len(want) {
		t.Fatalf("README real-fleet blocks %v, want %d", slices.Sorted(maps.Keys(blocks)), len(want))
	}
	for kind, lines := range want {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			etc, lib, creds := filepath.Join(dir, "etc"), filepath.Join(dir, "lib"), filepath.Join(dir, "credstore")
			t.Setenv("CREDENTIALS_DIRECTORY", creds)
			for _, d := range []string{etc, lib, creds} {
				if err := os.Mkdir(d, 0o750); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(creds, "pve.token"), []byte("0b7e-secret\n"), 0o400); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(etc, "pve-root-ca.pem"), selfSignedCA(t), 0o644); err != nil {
				t.Fatal(err)
			}
			text := strings.NewReplacer("/etc/patrold/", etc+"/", "/var/lib/patrold", lib).Replace(blocks[kind])
			c := &cli{t: t, cfg: filepath.Join(etc, "patrold.yaml"), dir: dir}
			if err := os.WriteFile(c.cfg, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			out, code := c.run("config", "check")
			if code != 0 {
				t.Fatalf("config check exit %d:\n%s\nconfiguration:\n%s", code, out, text)
			}
			for _, l := range lines {
				if !strings.Contains(out, l) {
					t.Errorf("config check does not show %q:\n%s", l, out)
				}
			}
		})
	}
}

// selfSignedCA is a PEM CA certificate, as pve-root-ca.pem is one.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Proxmox Virtual Environment"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
