package deploy_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/snapshot/proxmox"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// serviceUID is a uid of systemd's DynamicUser= range (61184-65519).
const serviceUID = 61234

// childEnv marks the re-executed test binary that plays the service.
const childEnv = "DEPLOY_TEST_CREDENTIAL_CHILD"

var readmeTokenFile = regexp.MustCompile(`(?s)<!-- realfleet:proxmox -->.*?token_secret_file: (\S+)`)

// TestTokenThroughCredentialsAsServiceUser: the README's token set-up
// works for the service's user. The credentials directory is laid out as
// systemd lays it out for LoadCredential= (directory 0500, file 0400, both
// owned by the unit's user), and a process running as that unprivileged
// uid loads the configuration and collects from a Proxmox stand-in that
// accepts only the right token.
func TestTokenThroughCredentialsAsServiceUser(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		credentialChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("laying out a credentials directory owned by another uid and switching to it needs root (CI runs as root)")
	}
	m := readmeTokenFile.FindStringSubmatch(read(t, "../README.md"))
	if m == nil {
		t.Fatal("README.md's realfleet:proxmox block names no token_secret_file")
	}
	ref := m[1]
	name, ok := strings.CutPrefix(ref, config.CredentialsRef)
	if !ok {
		t.Fatalf("README's token_secret_file %q is not under %s", ref, config.CredentialsRef)
	}
	if !strings.Contains(read(t, "patrold.service"), "\nLoadCredential="+name+"\n") {
		t.Fatalf("patrold.service has no LoadCredential=%s for the README's %s", name, ref)
	}

	pve := pvetest.New(t)
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The service's environment: its credentials directory...
	creds := filepath.Join(root, "credentials")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creds, name), []byte(pvetest.Secret+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(creds, name), creds} {
		if err := os.Chown(p, serviceUID, serviceUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(creds, 0o500); err != nil {
		t.Fatal(err)
	}
	// ...a configuration naming the credential as the README does...
	secrets := t.TempDir() // pvetest writes a token file of its own: unused
	src := strings.Replace(pve.Source(t, secrets), filepath.Join(secrets, "pve.token"), ref, 1)
	cfg := filepath.Join(root, "patrold.yaml")
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// ...and this test binary, where that uid can run it.
	bin := filepath.Join(root, "deploy.test")
	copyFile(t, os.Args[0], bin)

	cmd := exec.Command(bin, "-test.run=^TestTokenThroughCredentialsAsServiceUser$", "-test.count=1")
	cmd.Dir = root
	cmd.Env = []string{childEnv + "=" + cfg, config.CredentialsVar + "=" + creds, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: serviceUID, Gid: serviceUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nPASS\n") && !strings.HasPrefix(string(out), "PASS\n") {
		t.Fatalf("as uid %d: %v\n%s", serviceUID, err, out)
	}

	// The attack: another unprivileged uid cannot read the credential.
	cmd = exec.Command(bin, "-test.run=^TestTokenThroughCredentialsAsServiceUser$", "-test.count=1")
	cmd.Dir = root
	cmd.Env = []string{childEnv + "=" + cfg, config.CredentialsVar + "=" + creds, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: serviceUID + 1, Gid: serviceUID + 1, Groups: []uint32{}}}
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "source.proxmox.token_secret_file: open "+filepath.Join(creds, name)+": permission denied") {
		t.Fatalf("as uid %d: want permission denied naming the key, got %v\n%s", serviceUID+1, err, out)
	}
}

// credentialChild is the service's side: config load, then the source's
// own token read and a collection the stand-in authenticates.
func credentialChild(t *testing.T) {
	data, err := os.ReadFile(os.Getenv(childEnv))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(data, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	src, err := proxmox.New(cfg.Source.Proxmox)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, problems, err := src.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 || len(snap.Resources) == 0 {
		t.Fatalf("collect: %d resources, problems %v", len(snap.Resources), problems)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
