package msgauth_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/bus/msgauth"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func key(id string, b byte) msgauth.Key {
	return msgauth.Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

func auth(t *testing.T, now *time.Time, keys ...msgauth.Key) *msgauth.Auth {
	t.Helper()
	a, err := msgauth.New(keys, msgauth.Options{Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func refused(t *testing.T, what string, err error, reason string) {
	t.Helper()
	var re *msgauth.RefusedError
	if !errors.As(err, &re) || re.Reason != reason {
		t.Fatalf("%s: %v, want refused %s", what, err, reason)
	}
}

// A signed message verifies; every alteration, another key, a stale
// timestamp and a replayed call are refused with their reason.
func TestSignVerifyAndEveryRefusal(t *testing.T) {
	now := t0
	a := auth(t, &now, key("k1", 1))
	const subj = "patrol.remediation.outcomes"
	body := []byte(`{"outcome":"fix_verified"}`)
	sign := func() map[string][]string {
		h := map[string][]string{"Nats-Msg-Id": {"m1"}}
		a.Sign(subj, h, body)
		return h
	}
	h := sign()
	if err := a.Verify(subj, h, body, now, true); err != nil {
		t.Fatalf("signed message: %v", err)
	}
	refused(t, "replayed call", a.Verify(subj, h, body, now, true), msgauth.ReasonReplayed)
	if err := a.Verify(subj, h, body, now, false); err != nil {
		t.Fatalf("a stream redelivery is the same message: %v", err)
	}
	refused(t, "unsigned", a.Verify(subj, map[string][]string{}, body, now, false), msgauth.ReasonUnsigned)
	refused(t, "other subject", a.Verify("patrol.state.changes", sign(), body, now, false), msgauth.ReasonBadMAC)
	refused(t, "other body", a.Verify(subj, sign(), []byte(`{"outcome":"cannot_fix"}`), now, false), msgauth.ReasonBadMAC)
	h = sign()
	h["Nats-Msg-Id"] = []string{"m2"}
	refused(t, "altered message id", a.Verify(subj, h, body, now, false), msgauth.ReasonBadMAC)
	h = sign()
	h[msgauth.HeaderTime] = []string{"1"}
	refused(t, "altered timestamp", a.Verify(subj, h, body, now, false), msgauth.ReasonBadMAC)
	h = sign()
	h["Patrold-Epoch"] = []string{"9"}
	refused(t, "added Patrold header", a.Verify(subj, h, body, now, false), msgauth.ReasonBadMAC)
	refused(t, "outside the window", a.Verify(subj, sign(), body, now.Add(3*time.Minute), false), msgauth.ReasonStale)

	wrong := auth(t, &now, key("k1", 2))
	h = map[string][]string{}
	wrong.Sign(subj, h, body)
	refused(t, "wrong secret, same id", a.Verify(subj, h, body, now, false), msgauth.ReasonBadMAC)
	other := auth(t, &now, key("k9", 1))
	h = map[string][]string{}
	other.Sign(subj, h, body)
	refused(t, "unknown key id", a.Verify(subj, h, body, now, false), msgauth.ReasonUnknownKey)
}

// Rotation: an instance with the new key first and the old one second
// accepts both; one with only the new key refuses the old.
func TestRotationAcceptsTwoKeys(t *testing.T) {
	now := t0
	old := auth(t, &now, key("old", 1))
	rotating := auth(t, &now, key("new", 2), key("old", 1))
	done := auth(t, &now, key("new", 2))
	body := []byte("x")
	h := map[string][]string{}
	old.Sign("s", h, body)
	if err := rotating.Verify("s", h, body, now, false); err != nil {
		t.Fatalf("old key during rotation: %v", err)
	}
	refused(t, "old key after rotation", done.Verify("s", h, body, now, false), msgauth.ReasonUnknownKey)
	h = map[string][]string{}
	rotating.Sign("s", h, body)
	if got := h[msgauth.HeaderKey]; !reflect.DeepEqual(got, []string{"new"}) {
		t.Fatalf("rotating signs with %v, want the first key", got)
	}
	if err := done.Verify("s", h, body, now, false); err != nil {
		t.Fatal(err)
	}
}

// An answer verifies only for the request it answers.
func TestAnswerBoundToItsRequest(t *testing.T) {
	now := t0
	a := auth(t, &now, key("k1", 1))
	req1, req2 := map[string][]string{}, map[string][]string{}
	a.Sign("patrold_seed.patrol", req1, nil)
	a.Sign("patrold_seed.patrol", req2, nil)
	ans := map[string][]string{}
	a.SignAnswer("patrold_seed.patrol", req1, ans, []byte("seed"))
	refused(t, "answer to another request", a.VerifyAnswer("patrold_seed.patrol", req2, ans, []byte("seed")), msgauth.ReasonReplayed)
	if err := a.VerifyAnswer("patrold_seed.patrol", req1, ans, []byte("seed")); err != nil {
		t.Fatalf("answer: %v", err)
	}
	refused(t, "an answer is no request", a.Verify("patrold_seed.patrol", ans, []byte("seed"), now, false), msgauth.ReasonBadMAC)
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bus.key")
	keys, err := msgauth.LoadOrCreate(path, t0)
	if err != nil || len(keys) != 1 || keys[0].ID != "k20261201T120000" || len(keys[0].Secret) != 32 {
		t.Fatalf("generated: %+v %v", keys, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", fi.Mode(), err)
	}
	again, err := msgauth.LoadOrCreate(path, t0.Add(time.Hour))
	if err != nil || !reflect.DeepEqual(again, keys) {
		t.Fatalf("second start: %+v %v, want the same key", again, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := msgauth.LoadFile(path); err == nil || err.Error() != "key file "+path+": mode 0644 lets group or others read it; chmod 600 it" {
		t.Fatalf("world-readable: %v", err)
	}
	for in, want := range map[string]string{
		"":                                  `no key (want "<id> <hex secret>" lines)`,
		"k1":                                `line 1: want "<id> <hex secret>"`,
		"k1 zz":                             "line 1: secret: not hex",
		"k1 00":                             "line 1: secret: 1 bytes, need at least 32",
		"k/1 " + hex32(1):                   `line 1: id "k/1" must be 1-32 letters, digits, '-' or '_'`,
		"a " + hex32(1) + "\na " + hex32(2): `both keys have the id "a"`,
		"a " + hex32(1) + "\nb " + hex32(2) + "\nc " + hex32(3): "3 keys: at most two (the first signs, the second is accepted for rotation)",
	} {
		if _, err := msgauth.ParseKeys([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("ParseKeys(%q): %v, want %q", in, err, want)
		}
	}
}

func hex32(b byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 64)
	for range 32 {
		out = append(out, digits[b>>4], digits[b&15])
	}
	return string(out)
}

// FuzzParseKeys: any input either parses into one or two valid keys or
// is refused with an error; it never panics.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte("k1 " + hex32(1)))
	f.Add([]byte("# c\nk1 " + hex32(1) + "\nk2 " + hex32(2)))
	f.Add([]byte("k1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := msgauth.ParseKeys(data)
		if err != nil {
			return
		}
		if _, err := msgauth.New(keys, msgauth.Options{}); err != nil {
			t.Fatalf("parsed keys refused by New: %v", err)
		}
	})
}

// FuzzVerify: arbitrary headers and bodies never verify without the key.
func FuzzVerify(f *testing.F) {
	f.Add("s", "k1", "1764590400000000000", "00", "AAAA", []byte("x"))
	f.Fuzz(func(t *testing.T, subj, id, ts, nonce, mac string, body []byte) {
		now := t0
		a := auth(t, &now, key("k1", 1))
		h := map[string][]string{msgauth.HeaderKey: {id}, msgauth.HeaderTime: {ts}, msgauth.HeaderNonce: {nonce}, msgauth.HeaderMAC: {mac}}
		if err := a.Verify(subj, h, body, now, true); err == nil {
			t.Fatalf("forged message verified: %v", h)
		}
	})
}
