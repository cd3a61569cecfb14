package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// Item 3 of the bus attack: an attacker answers the seed request first
// with its own object. `db seed --force` installs nothing unless the
// answer is signed with the deployment key for this request and the
// copy hashes to the signed SHA-256. Three answers are refused: an
// unsigned one, a signed one replayed from another request, and a signed
// one whose object was swapped. Each leaves the database as it was, no
// copy is left beside it and the copy is never opened.
func TestPoisonedSeedRefused(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Server(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := msgauth.LoadFile(testkit.KeyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	g, err := bus.NewGuard(forwardAuth(t, keys, nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: contracts.SeedBucket})
	if err != nil {
		t.Fatal(err)
	}
	poison := []byte("not a patrold database")
	db := filepath.Join(t.TempDir(), "patrold.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before := storetest.DumpDB(t, db)

	var answer func(req *nats.Msg) *nats.Msg
	sub, err := nc.Subscribe(contracts.SeedSubject("patrol"), func(m *nats.Msg) {
		if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "poison"}, bytes.NewReader(poison)); err != nil {
			t.Error(err)
		}
		_ = m.RespondMsg(answer(m))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	seedMsg := func(m *nats.Msg, s contracts.Seed) *nats.Msg {
		data, _ := json.Marshal(s)
		return &nats.Msg{Subject: m.Reply, Data: data, Header: nats.Header{}}
	}
	claim := contracts.Seed{Object: "poison", Origin: "p2", AppliedSeq: 1, Bytes: int64(len(poison))}
	var earlier *nats.Msg
	cases := []struct {
		what, want string
		answer     func(req *nats.Msg) *nats.Msg
	}{
		{"unsigned answer", "seed: the answer is not signed with the deployment key: message refused: unsigned",
			func(m *nats.Msg) *nats.Msg { earlier = m; return seedMsg(m, claim) }},
		{"answer to another request", "seed: the answer is not signed with the deployment key: message refused: replayed: the answer is to another request",
			func(m *nats.Msg) *nats.Msg { a := seedMsg(m, claim); g.SignAnswer(earlier, a); return a }},
		{"swapped object", "seed copy from p2: sha256 ",
			func(m *nats.Msg) *nats.Msg {
				c := claim
				c.SHA256 = strings.Repeat("0", 64) // what the server copied, not the attacker's object
				a := seedMsg(m, c)
				g.SignAnswer(m, a)
				return a
			}},
	}
	for _, c := range cases {
		answer = c.answer
		opened := false
		_, err := InstallSeed(ctx, nc, js, "patrol", SeedInstall{DB: db, Exists: true, Guard: g, Now: time.Now, Log: slog.New(slog.DiscardHandler),
			Verify: func(context.Context, string) error { opened = true; return nil }})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Fatalf("%s: %v, want %q", c.what, err, c.want)
		}
		if opened {
			t.Fatalf("%s: the copy was opened", c.what)
		}
		if _, err := os.Stat(db + ".seed"); !os.IsNotExist(err) {
			t.Fatalf("%s: a copy is left beside the database: %v", c.what, err)
		}
		storetest.SameDB(t, c.what, storetest.DumpDB(t, db), before)
	}
}
