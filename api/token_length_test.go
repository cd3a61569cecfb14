package api_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/api"
)

// TestShortTokensRefused: a secret under api.MinTokenLength characters
// is refused wherever a token enters: the http section (what `config
// check` runs), a token file, and api.New. The error names the key and
// never the secret; characters, not bytes, are counted.
func TestShortTokensRefused(t *testing.T) {
	cfg := api.DefaultHTTPConfig()
	cfg.Tokens = []api.TokenConfig{
		{Name: "ops", Token: "x", Scope: "admin"},
		{Name: "dash", Token: api.Secret(strings.Repeat("é", 15)), Scope: "read"},
		{Name: "am", Token: api.Secret(strings.Repeat("k", 16)), Scope: "trigger"},
	}
	want := "http.tokens[0].token: 1 character; a token needs at least 16\n" +
		"http.tokens[1].token: 15 characters; a token needs at least 16"
	if err := cfg.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate: %v\nwant %s", err, want)
	}

	file := filepath.Join(t.TempDir(), "ops.token")
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := api.TokensFromConfig([]api.TokenSpec{{Name: "ops", TokenFile: file, Scope: "admin"}, {Name: "b", Token: "short-inline", Scope: "read"}})
	want = "http.tokens[0].token_file: " + file + " holds 7 characters; a token needs at least 16\n" +
		"http.tokens[1].token: 12 characters; a token needs at least 16"
	if err == nil || err.Error() != want {
		t.Fatalf("TokensFromConfig: %v\nwant %s", err, want)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatal("the error prints the secret")
	}

	e := newEnv(t, nil, nil)
	_, err = api.New(api.Options{Store: e.store, Daemon: e.daemon, Tokens: []api.Token{{Name: "ops", Secret: strings.Repeat("s", 15), Scope: api.ScopeAdmin}}})
	if want := "api: Tokens[0].Secret: 15 characters; a token needs at least 16"; err == nil || err.Error() != want {
		t.Fatalf("New: %v\nwant %s", err, want)
	}
	if _, err := api.New(api.Options{Store: e.store, Daemon: e.daemon, Tokens: []api.Token{{Name: "ops", Secret: strings.Repeat("s", 16), Scope: api.ScopeAdmin}}}); err != nil {
		t.Fatalf("a 16-character token: %v", err)
	}
}
