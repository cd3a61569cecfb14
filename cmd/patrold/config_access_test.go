package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigCheckAsRootWarns: `config check` under sudo reads every file
// root can, so it names each file key the service's user could not read
// (a token of mode 0600 referenced directly, the configuration itself),
// and none passed through ${CREDENTIALS_DIRECTORY} or world-readable.
func TestConfigCheckAsRootWarns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the warning is for `config check` run as root; this run is not root (CI runs as root)")
	}
	dir := t.TempDir()
	// The temporary directories are 0700; the service's user must be
	// able to search down to the files, as it can /etc/patrold.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	etc, creds := filepath.Join(dir, "etc"), filepath.Join(dir, "credstore")
	for _, d := range []string{etc, creds} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, data []byte, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(etc, "pve.token"), []byte("0b7e-secret\n"), 0o600)
	write(filepath.Join(creds, "pve.token"), []byte("0b7e-secret\n"), 0o400)
	write(filepath.Join(etc, "pve-root-ca.pem"), selfSignedCA(t), 0o644)
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	cfg := filepath.Join(etc, "patrold.yaml")
	body := "data_dir: " + filepath.Join(dir, "var") + "\n" +
		"http: {listen: '127.0.0.1:1'}\n" +
		"sources:\n" +
		"  - name: direct\n    kind: proxmox\n" +
		"    proxmox: {url: 'https://pve1.example:8006', token_id: 'patrold@pve!patrol', token_secret_file: " + etc + "/pve.token, tls: {ca_file: " + etc + "/pve-root-ca.pem}}\n" +
		"  - name: credential\n    kind: proxmox\n" +
		"    proxmox: {url: 'https://pve2.example:8006', token_id: 'patrold@pve!patrol', token_secret_file: '${CREDENTIALS_DIRECTORY}/pve.token', tls: {ca_file: " + etc + "/pve-root-ca.pem}}\n"
	write(cfg, []byte(body), 0o600)
	c := &cli{t: t, cfg: cfg, dir: dir}
	_, errOut, code := c.run3("config", "check")
	if code != 0 {
		t.Fatalf("config check: exit %d\n%s", code, errOut)
	}
	acc := lookupService().name
	want := "warning: --config: " + acc + " cannot read " + cfg + ": " + cfg + " is mode 0600 owned by root:root\n" +
		"warning: sources[0].proxmox.token_secret_file: " + acc + " cannot read " + etc + "/pve.token: " + etc +
		"/pve.token is mode 0600 owned by root:root; pass it with LoadCredential= and name ${CREDENTIALS_DIRECTORY}/pve.token (docs/OPERATIONS.md#secrets)\n"
	if errOut != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", errOut, want)
	}
	// Readable by all, nothing to say.
	for _, f := range []string{cfg, filepath.Join(etc, "pve.token")} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code = c.run3("config", "check"); code != 0 || errOut != "" {
		t.Fatalf("config check with readable files: exit %d, stderr %q", code, errOut)
	}
}
