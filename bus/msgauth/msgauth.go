// Package msgauth authenticates patrold's state-changing NATS messages
// with the deployment's key (docs/NATS.md, trust boundaries): an
// HMAC-SHA256 over the subject, the headers that matter and the body,
// with the signing key's id, a timestamp and a nonce. It is a leaf:
// standard library only, headers as plain maps (nats.Header converts).
//
// Verification refuses, naming the reason:
//   - unsigned: no MAC header;
//   - unknown_key: a key id none of the accepted keys has;
//   - bad_mac: the MAC does not match (forged, altered, wrong key);
//   - stale: the timestamp is outside the replay window around the
//     reference time (now, or when the stream stored the message);
//   - replayed: a nonce already seen inside the window (calls only:
//     a stream redelivers the same message legitimately).
//
// Two keys may be accepted at once for rotation; the first one signs.
package msgauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers the MAC travels in.
const (
	HeaderKey   = "Patrold-Key"
	HeaderTime  = "Patrold-Time"
	HeaderNonce = "Patrold-Nonce"
	HeaderMAC   = "Patrold-Mac"
	// HeaderRequest binds an answer to its request's nonce.
	HeaderRequest = "Patrold-Request"
)

// signedHeaders are the headers outside Patrold-* the MAC covers.
var signedHeaders = []string{"Nats-Msg-Id", "Content-Type", "Nats-Service-Error", "Nats-Service-Error-Code"}

// Refusal reasons (the reason label of patrold_bus_refused_total).
const (
	ReasonUnsigned   = "unsigned"
	ReasonUnknownKey = "unknown_key"
	ReasonBadMAC     = "bad_mac"
	ReasonStale      = "stale"
	ReasonReplayed   = "replayed"
)

// Reasons lists every refusal reason.
var Reasons = []string{ReasonUnsigned, ReasonUnknownKey, ReasonBadMAC, ReasonStale, ReasonReplayed}

// DefaultWindow is the replay window: how far a message's timestamp may
// be from the reference time.
const DefaultWindow = 2 * time.Minute

// MinSecret is the shortest accepted secret, in bytes.
const MinSecret = 32

// Key is one deployment key.
type Key struct {
	ID     string
	Secret []byte
}

// RefusedError is a refused message.
type RefusedError struct {
	Reason string
	Detail string
}

func (e *RefusedError) Error() string {
	if e.Detail == "" {
		return "message refused: " + e.Reason
	}
	return "message refused: " + e.Reason + ": " + e.Detail
}

// Reason returns the refusal reason of err ("" when err is no refusal).
func Reason(err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}

// Auth signs and verifies. Safe for concurrent use.
type Auth struct {
	keys   []Key // keys[0] signs
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // nonce -> when it leaves the window
}

// Options tune an Auth; zero values take the defaults.
type Options struct {
	Window time.Duration    // DefaultWindow
	Now    func() time.Time // time.Now
}

// New returns an Auth over one or two keys (the first signs).
func New(keys []Key, o Options) (*Auth, error) {
	if len(keys) == 0 || len(keys) > 2 {
		return nil, fmt.Errorf("keys: need one or two (the first signs, a second is accepted for rotation), got %d", len(keys))
	}
	for i, k := range keys {
		if !validID(k.ID) {
			return nil, fmt.Errorf("keys[%d].id: %q must be 1-32 letters, digits, '-' or '_'", i, k.ID)
		}
		if len(k.Secret) < MinSecret {
			return nil, fmt.Errorf("keys[%d].secret: %d bytes, need at least %d", i, len(k.Secret), MinSecret)
		}
	}
	if len(keys) == 2 && keys[0].ID == keys[1].ID {
		return nil, fmt.Errorf("keys[1].id: %q is also keys[0]'s", keys[1].ID)
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Auth{keys: slices.Clone(keys), window: o.Window, now: o.Now, seen: map[string]time.Time{}}, nil
}

// Sign sets the authentication headers on h for a message on subject
// with body. Call it last: headers set after it are not covered.
func (a *Auth) Sign(subject string, h map[string][]string, body []byte) {
	k := a.keys[0]
	var n [16]byte
	_, _ = rand.Read(n[:]) // never fails (crypto/rand)
	h[HeaderKey] = []string{k.ID}
	h[HeaderTime] = []string{strconv.FormatInt(a.now().UnixNano(), 10)}
	h[HeaderNonce] = []string{hex.EncodeToString(n[:])}
	h[HeaderMAC] = []string{base64.RawStdEncoding.EncodeToString(mac(k.Secret, subject, h, body))}
}

// SignAnswer signs an answer to a request: the answer is bound to the
// request's nonce, so it answers that request and no other.
func (a *Auth) SignAnswer(reqSubject string, req map[string][]string, h map[string][]string, body []byte) {
	h[HeaderRequest] = []string{first(req, HeaderNonce)}
	a.Sign(answerSubject(reqSubject), h, body)
}

// Verify checks a message. at is the reference time of the replay
// window (now for a call; for a stream message, when the stream stored
// it); once refuses a nonce already seen (calls, not stream messages).
func (a *Auth) Verify(subject string, h map[string][]string, body []byte, at time.Time, once bool) error {
	got := first(h, HeaderMAC)
	if got == "" {
		return &RefusedError{Reason: ReasonUnsigned}
	}
	id := first(h, HeaderKey)
	i := slices.IndexFunc(a.keys, func(k Key) bool { return k.ID == id })
	if i < 0 {
		return &RefusedError{Reason: ReasonUnknownKey, Detail: "key id " + strconv.Quote(clip(id))}
	}
	sum, err := base64.RawStdEncoding.DecodeString(got)
	//mutate:msgauth-mac-checked ./bus/msgauth Test
	if err != nil || !hmac.Equal(sum, mac(a.keys[i].Secret, subject, h, body)) {
		return &RefusedError{Reason: ReasonBadMAC}
	}
	ns, err := strconv.ParseInt(first(h, HeaderTime), 10, 64)
	if err != nil {
		return &RefusedError{Reason: ReasonStale, Detail: "no timestamp"}
	}
	ts := time.Unix(0, ns)
	//mutate:msgauth-window ./bus/msgauth Test
	if d := ts.Sub(at); d > a.window || d < -a.window {
		return &RefusedError{Reason: ReasonStale, Detail: fmt.Sprintf("signed %s, %s from the reference time", ts.UTC().Format(time.RFC3339), d.Round(time.Second))}
	}
	if once {
		return a.remember(first(h, HeaderNonce), ts)
	}
	return nil
}

// VerifyAnswer checks an answer to the request whose headers were req.
func (a *Auth) VerifyAnswer(reqSubject string, req map[string][]string, h map[string][]string, body []byte) error {
	if err := a.Verify(answerSubject(reqSubject), h, body, a.now(), false); err != nil {
		return err
	}
	//mutate:msgauth-answer-bound ./bus/msgauth Test
	if first(h, HeaderRequest) != first(req, HeaderNonce) {
		return &RefusedError{Reason: ReasonReplayed, Detail: "the answer is to another request"}
	}
	ns, _ := strconv.ParseInt(first(h, HeaderTime), 10, 64) // checked by Verify
	return a.remember(first(h, HeaderNonce), time.Unix(0, ns))
}

// KeyID is the id of the signing key.
func (a *Auth) KeyID() string { return a.keys[0].ID }

// Now is the Auth's clock (the reference time of a call).
func (a *Auth) Now() time.Time { return a.now() }

func (a *Auth) remember(nonce string, ts time.Time) error {
	if nonce == "" {
		return &RefusedError{Reason: ReasonReplayed, Detail: "no nonce"}
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, until := range a.seen {
		if now.After(until) {
			delete(a.seen, n)
		}
	}
	//mutate:msgauth-nonce-once ./bus/msgauth Test
	if _, ok := a.seen[nonce]; ok {
		return &RefusedError{Reason: ReasonReplayed}
	}
	a.seen[nonce] = ts.Add(2 * a.window)
	return nil
}

// mac is HMAC-SHA256 over a canonical form: version, subject, the
// covered headers sorted by name (each value list in order) and the
// body's SHA-256.
func mac(secret []byte, subject string, h map[string][]string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	var b strings.Builder
	b.WriteString("patrold-msg-v1\n")
	writeField(&b, subject)
	names := []string{}
	for name := range h {
		if name != HeaderMAC && (strings.HasPrefix(name, "Patrold-") || slices.Contains(signedHeaders, name)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		writeField(&b, name)
		writeField(&b, strconv.Itoa(len(h[name])))
		for _, v := range h[name] {
			writeField(&b, v)
		}
	}
	sum := sha256.Sum256(body)
	b.Write(sum[:])
	m.Write([]byte(b.String()))
	return m.Sum(nil)
}

// writeField writes s length-prefixed, so no two header sets encode the
// same.
func writeField(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
	b.WriteByte('\n')
}

func answerSubject(reqSubject string) string { return "answer:" + reqSubject }

func first(h map[string][]string, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func validID(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if r != '-' && r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
