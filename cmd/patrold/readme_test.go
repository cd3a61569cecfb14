package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
