package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/config"
)

const credConfig = `
source:
  kind: proxmox
  proxmox:
    url: https://pve1.example:8006
    token_id: patrold@pve!patrol
    token_secret_file: ${CREDENTIALS_DIRECTORY}/pve.token
    tls: {ca_file: /etc/patrold/pve-root-ca.pem}
http:
  tokens:
    - {name: ops, scope: read, token_file: "${CREDENTIALS_DIRECTORY}/api-ops.token"}
`

// TestCredentialsDirectoryInFileKeys: ${CREDENTIALS_DIRECTORY} starts a
// file key's value, in a section or a list, and Files lists every file key
// with whether it came through a credential.
func TestCredentialsDirectoryInFileKeys(t *testing.T) {
	env := []string{"CREDENTIALS_DIRECTORY=/run/credentials/patrold.service"}
	cfg, err := config.Load([]byte(credConfig), env)
	if err != nil {
		t.Fatal(err)
	}
	want := []config.FileRef{
		{Key: "http.tokens[0].token_file", Path: "/run/credentials/patrold.service/api-ops.token", Credential: true},
		{Key: "source.proxmox.tls.ca_file", Path: "/etc/patrold/pve-root-ca.pem"},
		{Key: "source.proxmox.token_secret_file", Path: "/run/credentials/patrold.service/pve.token", Credential: true},
	}
	if got := config.Files(cfg, config.CredentialsDir(env)); !reflect.DeepEqual(got, want) {
		t.Fatalf("Files:\n got %+v\nwant %+v", got, want)
	}
	if cfg.Source.Proxmox.TokenSecretFile != want[2].Path {
		t.Fatalf("token_secret_file = %q", cfg.Source.Proxmox.TokenSecretFile)
	}
	// Outside the service the credential store is where systemd reads them.
	cfg, err = config.Load([]byte(credConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Source.Proxmox.TokenSecretFile; got != config.Credstore+"/pve.token" {
		t.Fatalf("without %s: %q", config.CredentialsVar, got)
	}
}

// TestCredentialsReferenceRefused: the variable only starts a path and is
// followed by one credential id; anything else names the key.
func TestCredentialsReferenceRefused(t *testing.T) {
	for _, v := range []string{
		"${CREDENTIALS_DIRECTORY}/../../etc/shadow",
		"${CREDENTIALS_DIRECTORY}/",
		"/etc/${CREDENTIALS_DIRECTORY}/x",
		"${HOME}/x",
		"${CREDENTIALS_DIRECTORY}/a/b",
	} {
		in := strings.Replace(credConfig, "${CREDENTIALS_DIRECTORY}/pve.token", v, 1)
		_, err := config.Load([]byte(in), nil)
		want := "invalid configuration: source.proxmox.token_secret_file: \"" + v +
			"\": want a path, or ${CREDENTIALS_DIRECTORY}/NAME with NAME a LoadCredential= id"
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", v, err, want)
		}
	}
}
