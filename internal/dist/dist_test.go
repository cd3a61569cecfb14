package dist

import (
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDebVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v0.3.1":                  "0.3.1",
		"v0.3.1-dirty":            "0.3.1+dirty",
		"v0.3.1-4-gabc123":        "0.3.1+git4.gabc123",
		"v0.0.0-2417-g1a2b3c4d":   "0.0.0+git2417.g1a2b3c4d",
		"v1.2.3-10-gdeadbe-dirty": "1.2.3+git10.gdeadbe.dirty",
	} {
		if got, err := DebVersion(in); err != nil || got != want {
			t.Errorf("DebVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "dev", "1a2b3c4", "0.3.1", "v0.3", "v0.3.1-rc1", "v0.3.1-4-gXYZ"} {
		if _, err := DebVersion(bad); err == nil || !strings.HasPrefix(err.Error(), "version: ") {
			t.Errorf("DebVersion(%q): %v, want a version error", bad, err)
		}
	}
}

func TestPackagedUnit(t *testing.T) {
	in := "[Service]\nExecStart=/usr/local/bin/patrold serve --config /etc/patrold/patrold.yaml\nDynamicUser=yes\nStateDirectory=patrold\n"
	want := "[Service]\nExecStart=/usr/bin/patrold serve --config /etc/patrold/patrold.yaml\nUser=patrold\nGroup=patrold\nStateDirectory=patrold\n"
	if got, err := PackagedUnit(in); err != nil || got != want {
		t.Fatalf("PackagedUnit:\n%s\nwant\n%s\n(%v)", got, want, err)
	}
	if _, err := PackagedUnit("[Service]\nExecStart=/opt/patrold serve\n"); err == nil || !strings.Contains(err.Error(), "ExecStart=/usr/local/bin/patrold") {
		t.Fatalf("a unit without the ExecStart to rewrite: %v", err)
	}
}

// need returns the path of a tool the install test needs: missing, it
// skips, or fails under CI (.ci/run installs dpkg's and systemd's tools).
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed", name)
		}
		t.Skipf("no %s", name)
	}
	return p
}

const distVersion = "v0.4.2-7-gabcdef0"

var (
	distOnce sync.Once
	distDeb  string
	distErr  error
	distDir  string
)

// TestMain removes the package the tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	if distDir != "" {
		os.RemoveAll(distDir)
	}
	os.Exit(code)
}

// makeDist runs `make dist` once for the tests that inspect the .deb
// (a release build takes minutes).
func makeDist(t *testing.T, mk string) string {
	t.Helper()
	distOnce.Do(func() {
		if distDir, distErr = os.MkdirTemp("", "patrold-dist-test-"); distErr != nil {
			return
		}
		repo, _ := filepath.Abs("../..")
		out := filepath.Join(distDir, "dist")
		cmd := exec.Command(mk, "-C", repo, "dist", "DIST="+out, "VERSION="+distVersion)
		if b, err := cmd.CombinedOutput(); err != nil {
			distErr = fmt.Errorf("make dist: %v\n%s", err, b)
			return
		}
		debs, _ := filepath.Glob(filepath.Join(out, "*.deb"))
		if len(debs) != 1 || filepath.Base(debs[0]) != "patrold_0.4.2+git7.gabcdef0_amd64.deb" {
			distErr = fmt.Errorf("packages: %v", debs)
			return
		}
		distDeb = debs[0]
	})
	if distErr != nil {
		t.Fatal(distErr)
	}
	return distDeb
}

// TestDebLintian builds the package and runs lintian on it: no errors,
// and no warning that the package's overrides do not justify. The whole
// list is compared, so a new finding names itself.
func TestDebLintian(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	mk, lintian := need(t, "make"), need(t, "lintian")
	deb := makeDist(t, mk)
	out, err := exec.Command(lintian, "--fail-on", "none", deb).CombinedOutput()
	if err != nil {
		t.Fatalf("lintian: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") {
			got = append(got, line)
		}
	}
	if len(got) != 0 {
		t.Errorf("lintian %s: %d errors and warnings, want none:\n%s", filepath.Base(deb), len(got), strings.Join(got, "\n"))
	}
}

func TestLibcDepends(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary links libc through cgo only when the package does;
	// a binary without GLIBC_ versions is refused by name.
	dep, err := LibcDepends(self)
	if err != nil {
		if !strings.Contains(err.Error(), "no GLIBC_ symbol versions") {
			t.Fatalf("LibcDepends: %v", err)
		}
		return
	}
	if !regexp.MustCompile(`^libc6 \(>= 2\.\d+(\.\d+)?\)$`).MatchString(dep) {
		t.Fatalf("LibcDepends = %q", dep)
	}
}

func TestChangelog(t *testing.T) {
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	want := "patrold (0.4.2+git7.gabcdef0) unstable; urgency=medium\n\n" +
		"  * Built from the patrold repository; its CHANGELOG.md has the\n" +
		"    changes.\n\n" +
		" -- patrold maintainers <maintainers@patrold.dev>  Sun, 06 Dec 2026 09:00:00 +0000\n"
	if got := Changelog("0.4.2+git7.gabcdef0", at); got != want {
		t.Fatalf("Changelog:\n%s\nwant\n%s", got, want)
	}
}

// TestMakeDistInstalls runs `make dist` and installs the .deb with dpkg
// into a fresh root (never this machine's). It checks what it installed:
// a stripped, version-stamped binary, the hardened unit that
// systemd-analyze verify accepts, the default configuration, the patrold
// user and its directories, a man page for every command, completions.
func TestMakeDistInstalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	mk, dpkg, analyze := need(t, "make"), need(t, "dpkg"), need(t, "systemd-analyze")
	need(t, "systemd-sysusers")
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("dpkg --root needs root")
		}
		t.Skip("dpkg --root needs root")
	}
	debs := []string{makeDist(t, mk)}
	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The throwaway root holds no libc6 record, so the Depends the binary
	// needs is forced; the files and scripts are what this test checks.
	inst := exec.Command(dpkg, "--root="+root, "--force-script-chrootless", "--force-depends", "--log=/dev/null", "-i", debs[0])
	if b, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, b)
	}

	bin := filepath.Join(root, "usr/bin/patrold")
	v, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(v), "patrold "+distVersion+" (commit ") {
		t.Fatalf("installed --version: %q %v", v, err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	if f.Section(".symtab") != nil {
		t.Error("the installed binary is not stripped (.symtab present)")
	}
	f.Close()
	if st, err := os.Stat(bin); err == nil {
		t.Logf("installed binary: %d bytes", st.Size())
	}

	// The unit: the packaged, hardened one, accepted by systemd.
	unit := filepath.Join(root, "usr/lib/systemd/system/patrold.service")
	text, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"ExecStart=/usr/bin/patrold serve --config /etc/patrold/patrold.yaml", "User=patrold",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "StateDirectory=patrold"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(text) {
			t.Errorf("installed unit lacks %q", line)
		}
	}
	// Verified on this machine's systemd (the root has none), with
	// ExecStart naming the installed binary by its path in the root.
	check := filepath.Join(t.TempDir(), "patrold.service")
	if err := os.WriteFile(check, []byte(strings.Replace(string(text), "ExecStart=/usr/bin/patrold ", "ExecStart="+bin+" ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(analyze, "verify", check).CombinedOutput(); err != nil || len(strings.TrimSpace(string(b))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, b)
	}

	// The user, its directories and the configuration it may read.
	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if !regexp.MustCompile(`(?m)^patrold:x:\d+:\d+:patrold infrastructure patrol daemon:/var/lib/patrold:`).Match(passwd) {
		t.Errorf("no patrold user in the root's /etc/passwd:\n%s", passwd)
	}
	for p, mode := range map[string]os.FileMode{"var/lib/patrold": 0o750 | os.ModeDir, "etc/patrold": 0o750 | os.ModeDir, "etc/patrold/patrold.yaml": 0o640} {
		st, err := os.Stat(filepath.Join(root, p))
		if err != nil || st.Mode() != mode {
			t.Errorf("%s: %v %v, want mode %v", p, st.Mode(), err, mode)
		}
	}
	conffiles, _ := os.ReadFile(filepath.Join(root, "var/lib/dpkg/info/patrold.conffiles"))
	if strings.TrimSpace(string(conffiles)) != "/etc/patrold/patrold.yaml" {
		t.Errorf("conffiles %q", conffiles)
	}

	// A man page for every command of the installed binary's tree.
	tree := t.TempDir()
	if b, err := exec.Command(bin, "man", "--dir", tree).CombinedOutput(); err != nil {
		t.Fatalf("man: %v %s", err, b)
	}
	pages, _ := filepath.Glob(filepath.Join(tree, "*.1"))
	sort.Strings(pages)
	for _, want := range []string{"patrold.1", "patrold-serve.1", "patrold-findings-list.1", "patrold-silences-create.1", "patrold-status.1"} {
		if _, err := os.Stat(filepath.Join(tree, want)); err != nil {
			t.Errorf("the tree has no %s", want)
		}
	}
	for _, p := range pages {
		gz, err := os.Open(filepath.Join(root, "usr/share/man/man1", filepath.Base(p)+".gz"))
		if err != nil {
			t.Errorf("man page not installed: %v", err)
			continue
		}
		zr, err := gzip.NewReader(gz)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(zr)
		gz.Close()
		// Each page is headed by its own command: PATROLD(1) for the root,
		// PATROLD-SERVE(1) for patrold-serve.1.
		title := strings.ToUpper(strings.TrimSuffix(filepath.Base(p), ".1"))
		if !strings.HasPrefix(string(body), `.nh`) || !strings.Contains(string(body), `.TH "`+title+`" "1"`) {
			t.Errorf("%s: not a man page headed %s(1): %.80q", filepath.Base(p), title, body)
		}
		if filepath.Base(p) == "patrold.1" && !strings.Contains(string(body), `.TH "PATROLD" "1"`) {
			t.Errorf("the root page is not headed PATROLD(1)")
		}
	}
	if len(pages) < 40 {
		t.Errorf("only %d man pages", len(pages))
	}
	for _, c := range []string{"usr/share/bash-completion/completions/patrold", "usr/share/zsh/vendor-completions/_patrold",
		"usr/share/fish/vendor_completions.d/patrold.fish", "usr/share/doc/patrold/CONFIGURATION.md"} {
		if st, err := os.Stat(filepath.Join(root, c)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", c, err)
		}
	}
	// The licence, whole, in the machine-readable copyright format.
	want, _ := packageFiles.ReadFile("files/copyright")
	if got, err := os.ReadFile(filepath.Join(root, "usr/share/doc/patrold/copyright")); err != nil || string(got) != string(want) ||
		!strings.HasPrefix(string(got), "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") {
		t.Errorf("installed copyright: %v\n%s", err, got)
	}
}

// TestDebNeedsCommitTime: files dated 1970 are a lintian error, so a
// build without SOURCE_DATE_EPOCH is refused, naming it.
func TestDebNeedsCommitTime(t *testing.T) {
	_, err := Deb(Options{Version: "v0.1.0", Dir: t.TempDir(), Repo: "../.."})
	if err == nil || err.Error() != "mtime: 0001-01-01 00:00:00 +0000 UTC is not a commit time (set SOURCE_DATE_EPOCH)" {
		t.Fatalf("Deb without MTime: %v", err)
	}
}
