package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"
)

// Scope is what a token may do.
type Scope string

// Scopes. Admin implies read.
const (
	ScopeRead  Scope = "read"
	ScopeAdmin Scope = "admin"
	// ScopeTrigger may only ask for scoped runs through the hooks (the
	// token an Alertmanager receiver carries); admin may too.
	ScopeTrigger Scope = "trigger"
	// scopeOpen marks routes served without a token (healthz, readyz,
	// metrics).
	scopeOpen Scope = ""
)

// MinTokenLength is the fewest characters a token's secret may have
// (docs/API.md#authentication): a short secret is guessed, throttle or
// not.
const MinTokenLength = 16

// shortSecret says what is wrong with a secret below MinTokenLength; "" when
// it is long enough. It never repeats the secret.
func shortSecret(secret string) string {
	n := utf8.RuneCountInString(secret)
	//mutate:token-min-length ./api ^TestShortTokensRefused
	if n < MinTokenLength {
		unit := "characters"
		if n == 1 {
			unit = "character"
		}
		return fmt.Sprintf("%d %s; a token needs at least %d", n, unit, MinTokenLength)
	}
	return ""
}

// Token is one bearer token. Secret is never logged or printed.
type Token struct {
	Name   string
	Secret string
	Scope  Scope
}

// String hides the secret.
func (t Token) String() string { return fmt.Sprintf("token %s (%s)", t.Name, t.Scope) }

// GoString hides the secret from %#v.
func (t Token) GoString() string { return t.String() }

// TokenID is the public identifier of a secret: the first 8 hex characters
// of its SHA-256. It appears in audit rows and logs instead of the secret.
func TokenID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:4])
}

// TokenSpec is one configured token (one entry of http.tokens): the secret
// inline or in a file.
type TokenSpec struct {
	Name      string
	Token     string
	TokenFile string
	Scope     string // read | admin
}

// TokensFromConfig turns the http.tokens section into Tokens, reading each
// token_file (surrounding whitespace trimmed). Errors name the key.
func TokensFromConfig(cfg []TokenSpec) ([]Token, error) {
	out := make([]Token, 0, len(cfg))
	var errs []error
	for i, c := range cfg {
		key := fmt.Sprintf("http.tokens[%d]", i)
		secret := c.Token
		switch {
		case secret != "" && c.TokenFile != "":
			errs = append(errs, fmt.Errorf("%s: set exactly one of token and token_file", key))
			continue
		case c.TokenFile != "":
			data, err := os.ReadFile(c.TokenFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.token_file: %w", key, err))
				continue
			}
			secret = strings.TrimSpace(string(data))
			if secret == "" {
				errs = append(errs, fmt.Errorf("%s.token_file: %s is empty", key, c.TokenFile))
				continue
			}
		case secret == "":
			errs = append(errs, fmt.Errorf("%s: set exactly one of token and token_file", key))
			continue
		}
		if why := shortSecret(secret); why != "" {
			if c.TokenFile != "" {
				errs = append(errs, fmt.Errorf("%s.token_file: %s holds %s", key, c.TokenFile, why))
			} else {
				errs = append(errs, fmt.Errorf("%s.token: %s", key, why))
			}
			continue
		}
		out = append(out, Token{Name: c.Name, Secret: secret, Scope: Scope(c.Scope)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// validateTokens names the offending Options field.
func validateTokens(tokens []Token) error {
	var errs []error
	names := map[string]bool{}
	digests := map[[32]byte]int{}
	for i, t := range tokens {
		key := fmt.Sprintf("Tokens[%d]", i)
		if strings.TrimSpace(t.Name) == "" {
			errs = append(errs, fmt.Errorf("%s.Name: required", key))
		} else if names[t.Name] {
			errs = append(errs, fmt.Errorf("%s.Name: duplicate name %q", key, t.Name))
		}
		names[t.Name] = true
		if t.Secret == "" {
			errs = append(errs, fmt.Errorf("%s.Secret: required", key))
		} else if why := shortSecret(t.Secret); why != "" {
			errs = append(errs, fmt.Errorf("%s.Secret: %s", key, why))
		} else {
			d := sha256.Sum256([]byte(t.Secret))
			if j, dup := digests[d]; dup {
				errs = append(errs, fmt.Errorf("%s.Secret: same secret as Tokens[%d]", key, j))
			}
			digests[d] = i
		}
		if t.Scope != ScopeRead && t.Scope != ScopeAdmin && t.Scope != ScopeTrigger {
			errs = append(errs, fmt.Errorf("%s.Scope: %q is not read, admin or trigger", key, t.Scope))
		}
	}
	return errors.Join(errs...)
}

// identity is who made a request; zero when anonymous.
type identity struct {
	name  string
	id    string // TokenID
	scope Scope
}

// authTable holds only digests of the secrets.
type authTable struct {
	entries []authEntry
}

type authEntry struct {
	digest [32]byte
	who    identity
}

func newAuthTable(tokens []Token) *authTable {
	t := &authTable{}
	for _, tok := range tokens {
		t.entries = append(t.entries, authEntry{
			digest: sha256.Sum256([]byte(tok.Secret)),
			who:    identity{name: tok.Name, id: TokenID(tok.Secret), scope: tok.Scope},
		})
	}
	return t
}

// lookup finds the token presented in r. It compares SHA-256 digests in
// constant time and visits every entry. So neither the length of a secret
// nor which entry matched shows in the timing. ok is false when a header
// was given and matched nothing; present is false when there was none.
func (t *authTable) lookup(r *http.Request) (who identity, present, ok bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return identity{}, false, false
	}
	scheme, secret, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return identity{}, true, false
	}
	who, ok = t.lookupSecret(secret)
	return who, true, ok
}

// lookupSecret finds the token whose secret this is (the web login's
// form), with the same constant-time comparison.
func (t *authTable) lookupSecret(secret string) (identity, bool) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return identity{}, false
	}
	d := sha256.Sum256([]byte(secret))
	match := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return identity{}, false
	}
	return t.entries[match].who, true
}

// authorize decides a request against the scope a route needs. It returns
// the caller's identity, or the 401/403 error to send.
func (t *authTable) authorize(r *http.Request, need Scope) (identity, *Error) {
	if need == scopeOpen {
		return identity{}, nil
	}
	if len(t.entries) == 0 {
		if need == ScopeRead {
			return identity{}, nil
		}
		return identity{}, newError(CodeUnauthorized, "no API token is configured: mutations over HTTP need an admin token in http.tokens")
	}
	who, present, ok := t.lookup(r)
	switch {
	case !present:
		return identity{}, newError(CodeUnauthorized, "a bearer token is required")
	case !ok:
		return identity{}, newError(CodeUnauthorized, "the bearer token is not valid")
	case need == ScopeAdmin && who.scope != ScopeAdmin:
		return who, newError(CodeForbidden, "token %q has scope %s; this call needs admin", who.name, who.scope).with("required_scope", string(ScopeAdmin))
	case need == ScopeTrigger && who.scope != ScopeTrigger && who.scope != ScopeAdmin:
		return who, newError(CodeForbidden, "token %q has scope %s; this call needs trigger or admin", who.name, who.scope).with("required_scope", string(ScopeTrigger))
	//mutate:trigger-token-hooks-only ./api ^TestAlertmanagerHook
	case need == ScopeRead && who.scope == ScopeTrigger:
		return who, newError(CodeForbidden, "token %q has scope trigger; it may only call the hooks", who.name).with("required_scope", string(ScopeRead))
	}
	return who, nil
}
