package sessions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/cluster/sessions"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

func busAuth(t *testing.T, id string, b byte) *msgauth.Auth {
	t.Helper()
	a, err := msgauth.New([]msgauth.Key{{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}}, msgauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Session calls on an authenticated writer: a call signed with the
// deployment key is served; an unsigned one, one signed with another key
// and a replayed one are refused (code 401, counted by subject and
// reason) and nothing stored changes.
func TestSessionCallsAuthenticated(t *testing.T) {
	r := newRig(t, false)
	key := busAuth(t, "k1", 1)
	var mu sync.Mutex
	refusals := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- sessions.ServeAuthenticated(ctx, r.nc, prefix, r.st, slog.New(slog.DiscardHandler), key, func(subject, reason string) {
			mu.Lock()
			refusals[subject+" "+reason]++
			mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	good := r.client.WithAuth(key)
	testkit.Eventually(t, 10*time.Second, "the service answers", func() bool {
		_, err := good.Get(context.Background(), r.f.ID)
		return err == nil
	})
	db := filepath.Join(r.dir, "patrold.db")
	before := storetest.DumpDB(t, db)
	start := contracts.SessionsSubject(prefix) + "." + contracts.SessionMethodStartSession
	end := records.SessionEnd{Outcome: "fix_verified", FinishedAt: t0, CostUSD: 100000}

	var re *sessions.RemoteError
	if err := r.client.StartSession(context.Background(), "forged", r.f.ID, r.f.Attempt, "playbook", t0); err == nil {
		t.Fatal("unsigned start_session served")
	}
	wrong := r.client.WithAuth(busAuth(t, "k1", 2))
	if err := wrong.StartSession(context.Background(), "forged", r.f.ID, r.f.Attempt, "playbook", t0); err == nil {
		t.Fatal("start_session signed with another key served")
	}
	// A signed call captured off the wire and sent again.
	data, _ := json.Marshal(map[string]any{"id": "replayed", "finding_id": r.f.ID, "attempt": r.f.Attempt, "driver": "playbook", "started_at": t0})
	msg := nats.NewMsg(start)
	msg.Data = data
	key.Sign(start, msg.Header, data)
	if ans, err := r.nc.RequestMsg(msg, 2*time.Second); err != nil || ans.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("first delivery: %v %v", ans, err)
	}
	after := storetest.DumpDB(t, db) // the legitimate call stored its session
	ans, err := r.nc.RequestMsg(msg, 2*time.Second)
	if err != nil || ans.Header.Get("Nats-Service-Error-Code") != "401" || ans.Header.Get("Nats-Service-Error") != "message refused: replayed" {
		t.Fatalf("replayed call: %v %v", ans.Header, err)
	}
	if err := wrong.FinishSession(context.Background(), "replayed", end); errors.As(err, &re) || err == nil {
		t.Fatalf("finish_session with another key: %v", err)
	}
	storetest.SameDB(t, "after refused calls", storetest.DumpDB(t, db), after)
	if reflect.DeepEqual(after, before) {
		t.Fatal("the signed call stored nothing")
	}
	mu.Lock()
	defer mu.Unlock()
	finish := contracts.SessionsSubject(prefix) + "." + contracts.SessionMethodFinishSession
	want := map[string]int{start + " unsigned": 1, start + " bad_mac": 1, start + " replayed": 1, finish + " bad_mac": 1}
	if !reflect.DeepEqual(refusals, want) {
		t.Fatalf("refusals %v, want %v", refusals, want)
	}
}

// An answer not signed by the writer for this call (an attacker answering
// first, or one signed with another key) is refused by the worker.
func TestForgedAnswerRefused(t *testing.T) {
	r := newRig(t, false)
	key := busAuth(t, "k1", 1)
	other := busAuth(t, "k1", 2)
	sub, err := r.nc.Subscribe(contracts.SessionsSubject(prefix)+".>", func(m *nats.Msg) {
		ans := nats.NewMsg(m.Reply)
		ans.Data = []byte(`{"id":"0123456789abcdef"}`)
		other.SignAnswer(m.Subject, m.Header, ans.Header, ans.Data)
		_ = m.RespondMsg(ans)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_, err = r.client.WithAuth(key).Get(context.Background(), r.f.ID)
	if msgauth.Reason(err) != msgauth.ReasonBadMAC {
		t.Fatalf("forged answer: %v, want refused bad_mac", err)
	}
}
