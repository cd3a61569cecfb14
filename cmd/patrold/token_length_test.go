package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckRefusesShortTokens: `config check` refuses a token
// under 16 characters, inline or in a file, naming the key and never
// printing the secret (exit 2, the whole message compared).
func TestConfigCheckRefusesShortTokens(t *testing.T) {
	c := newCLI(t, "http: {listen: '127.0.0.1:1', tokens: [{name: ops, token: hunter2, scope: admin}]}\n")
	_, errOut, code := c.run3("config", "check")
	if want := c.cfg + ": invalid configuration: http.tokens[0].token: 7 characters; a token needs at least 16"; code != 2 || strings.TrimSpace(errOut) != want {
		t.Errorf("inline: exit %d\n%s\nwant\n%s", code, errOut, want)
	}
	file := filepath.Join(t.TempDir(), "ops.token")
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = newCLI(t, "http: {listen: '127.0.0.1:1', tokens: [{name: ops, token_file: "+file+", scope: admin}]}\n")
	_, errOut, code = c.run3("config", "check")
	if want := "http.tokens[0].token_file: " + file + " holds 7 characters; a token needs at least 16"; code != 2 || strings.TrimSpace(errOut) != want || strings.Contains(errOut, "hunter2") {
		t.Errorf("token_file: exit %d\n%s\nwant\n%s", code, errOut, want)
	}
}
