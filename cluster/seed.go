package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/instance"
)

// Seeding (`patrold db seed`) copies a database from one instance to
// another:
//   - a new or re-seeded instance asks any caught-up instance of the
//     cluster for a copy over NATS request/reply on
//     contracts.SeedSubject(prefix) (queue group contracts.SeedQueue);
//   - the answering instance writes a consistent copy (store.SeedCopy) into
//     the JetStream object store bucket contracts.SeedBucket and answers
//     with its name;
//   - the new instance downloads it.
//
// The copy resumes the state stream where the answering database stood.
// So it is for replicas that joined after the stream's first changes aged
// out, or that diverged.
const (
	seedTTL = time.Hour
	// SeedTimeout bounds a whole seed request (copy and upload).
	SeedTimeout = 5 * time.Minute
)

// SeedCatchUpWait bounds how long a replica behind the state stream
// catches up before it serves a copy. Under steady writes every replica,
// the writer included, is always a few changes behind.
const SeedCatchUpWait = 10 * time.Second

// SeedCallWait bounds each JetStream call a seed request makes before
// the upload. A stream with no leader (a partition) never answers: the
// asking instance hears a refusal and asks again, instead of waiting out
// SeedTimeout (the partition test saw re-seeds wait minutes).
const SeedCallWait = 5 * time.Second

// SeedReady is the readiness a Follower serves seeds under: its database
// has no gap, has not diverged, and applied the stream's last state
// change as of the request (waiting up to SeedCatchUpWait for it).
func (f *Follower) SeedReady(ctx context.Context) error {
	if err := f.Gap(); err != nil {
		return err
	}
	if err := f.Diverged(); err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, SeedCallWait)
	lag, err := f.Lag(lctx)
	cancel()
	if err != nil {
		return err
	}
	if !lag.Behind {
		return nil
	}
	// A copy is consistent at whatever sequence it stands: what matters
	// is that this replica keeps applying, not that nothing newer exists.
	cctx, cancel := context.WithTimeout(ctx, SeedCatchUpWait)
	defer cancel()
	//mutate:seed-waits-for-catch-up ./cluster ^TestSeedFromAReplicaUnderSteadyWrites$
	if err := f.CatchUp(cctx); err == nil {
		if err := f.Gap(); err != nil {
			return err
		}
		return f.Diverged()
	}
	return fmt.Errorf("behind the state stream (applied %d of %d)", lag.AppliedSeq, lag.LastSeq)
}

// ServeSeeds answers seed requests from this instance's database until ctx
// ends, while ready says it may (caught up, no gap). dir holds the
// temporary copy; replicas sizes the object store bucket.
func (f *Follower) ServeSeeds(ctx context.Context, nc *nats.Conn, dir string, replicas int, ready func(context.Context) error) error {
	serve := func(m *nats.Msg) {
		var seed contracts.Seed
		//mutate:seed-request-verified ./cluster ^TestSeedFromACaughtUpReplica$
		if err := f.o.Guard.CheckNow(contracts.StemSeed, m); err != nil {
			// A copy of the database goes only to a holder of the key.
			seed = contracts.Seed{Origin: f.o.Instance, Error: "seed request refused: " + err.Error()}
		} else {
			seed = f.seed(ctx, dir, replicas, ready)
		}
		if auth := f.o.Guard.Auth(); auth != nil {
			seed.Signer = auth.KeyID()
		}
		data, _ := json.Marshal(seed)
		ans := &nats.Msg{Subject: m.Reply, Data: data}
		f.o.Guard.SignAnswer(m, ans)
		if err := m.RespondMsg(ans); err != nil {
			f.log.Warn("answer a seed request", "err", err)
		}
	}
	// An offer is answered only by an instance that may serve now, and
	// only to a holder of the key; the others stay silent.
	offer := func(m *nats.Msg) {
		rctx, cancel := context.WithTimeout(ctx, seedOfferWait/2)
		defer cancel()
		if f.o.Guard.CheckNow(contracts.StemSeed, m) != nil || ready(rctx) != nil {
			return
		}
		data, _ := json.Marshal(contracts.Seed{Origin: f.o.Instance})
		ans := &nats.Msg{Subject: m.Reply, Data: data}
		f.o.Guard.SignAnswer(m, ans)
		_ = m.RespondMsg(ans)
	}
	var subs []*nats.Subscription
	for _, sub := range []struct {
		subject, queue string
		handle         nats.MsgHandler
	}{
		{contracts.SeedSubject(f.o.Prefix), contracts.SeedQueue, serve}, // askers of an earlier build
		{contracts.SeedOfferSubject(f.o.Prefix), "", offer},
		{contracts.SeedToSubject(f.o.Prefix, f.o.Instance), "", serve},
	} {
		s, err := nc.QueueSubscribe(sub.subject, sub.queue, sub.handle)
		if err != nil {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
			return fmt.Errorf("seed requests: %w", err)
		}
		subs = append(subs, s)
	}
	<-ctx.Done()
	var err error
	for _, s := range subs {
		err = errors.Join(err, s.Unsubscribe())
	}
	return err
}

func (f *Follower) seed(ctx context.Context, dir string, replicas int, ready func(context.Context) error) contracts.Seed {
	fail := func(err error) contracts.Seed {
		f.log.Warn("seed request refused", "err", err)
		return contracts.Seed{Origin: f.o.Instance, Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, SeedTimeout)
	defer cancel()
	if err := ready(ctx); err != nil {
		return fail(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("patrold.seed-%d.db", time.Now().UnixNano()))
	defer os.Remove(path)
	st, err := f.o.Store.SeedCopy(ctx, path)
	if err != nil {
		return fail(err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return fail(err)
	}
	octx, ocancel := context.WithTimeout(ctx, SeedCallWait)
	obs, err := f.o.JetStream.CreateOrUpdateObjectStore(octx, jetstream.ObjectStoreConfig{Bucket: contracts.SeedBucket, TTL: seedTTL,
		Replicas: max(replicas, 1), Description: "patrold database copies for new replicas"})
	ocancel()
	if err != nil {
		return fail(fmt.Errorf("seed bucket: %w", err))
	}
	// Stored under its final name at once: renaming reads the object back,
	// and a replica still catching up after a partition answers that
	// read with "not found". The time keeps two copies at one sequence
	// apart.
	name := fmt.Sprintf("%s-%d-%d", f.o.Instance, st.AppliedSeq, time.Now().UnixNano())
	fh, err := os.Open(path)
	if err != nil {
		return fail(err)
	}
	info, err := obs.Put(ctx, jetstream.ObjectMeta{Name: name}, fh)
	fh.Close()
	if err != nil {
		return fail(fmt.Errorf("seed upload: %w", err))
	}
	f.log.Info("seed copy served", "object", name, "applied_seq", st.AppliedSeq, "bytes", info.Size)
	return contracts.Seed{Object: name, Origin: f.o.Instance, AppliedSeq: st.AppliedSeq, Bytes: int64(info.Size), SHA256: sum}
}

func fileSHA256(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// seedOfferWait bounds the offer round. An instance offers only when it
// can tell within half of it that it may serve; a slow lookup leaves the
// asker to the queue, as before offers.
const seedOfferWait = 2 * time.Second

// seedOffer is the instance that first offered to serve a copy now,
// within seedOfferWait, or "" when none did.
func seedOffer(ctx context.Context, nc *nats.Conn, g *bus.Guard, prefix string) string {
	ctx, cancel := context.WithTimeout(ctx, seedOfferWait)
	defer cancel()
	req := nats.NewMsg(contracts.SeedOfferSubject(prefix))
	g.Sign(req)
	msg, err := nc.RequestMsgWithContext(ctx, req)
	if err != nil || g.CheckAnswer(contracts.StemSeed, req, msg) != nil {
		return ""
	}
	var offer contracts.Seed
	// The offer names a subject token: config's rule for cluster.instance.
	if json.Unmarshal(msg.Data, &offer) != nil || offer.Origin == "" || instance.Validate(offer.Origin) != nil {
		return ""
	}
	return offer.Origin
}

// FetchSeed asks the cluster for a database copy and writes it to dst
// (which must not exist), then removes the object. The caller checks and
// installs the file. With g, the request is signed, the answer must be
// signed by the serving instance for it, and the copy must hash to the
// answer's SHA-256 (else dst is removed).
func FetchSeed(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, g *bus.Guard, prefix, dst string) (contracts.Seed, error) {
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		return contracts.Seed{}, fmt.Errorf("seed: %s already exists", dst)
	}
	ctx, cancel := context.WithTimeout(ctx, SeedTimeout)
	defer cancel()
	// Ask the first instance that offers: a queue member that hangs (a
	// frozen process stays subscribed) would hold a queued request for
	// the whole attempt. No offer (instances of an earlier build): the
	// queue.
	subject := contracts.SeedSubject(prefix)
	//mutate:seed-asks-an-offer ./cluster ^TestReseedOutlivesAHungSeedServer$
	if origin := seedOffer(ctx, nc, g, prefix); origin != "" {
		subject = contracts.SeedToSubject(prefix, origin)
	}
	req := nats.NewMsg(subject)
	g.Sign(req)
	msg, err := nc.RequestMsgWithContext(ctx, req)
	if err == nil {
		//mutate:seed-answer-verified ./cluster ^TestPoisonedSeedRefused$
		if verr := g.CheckAnswer(contracts.StemSeed, req, msg); verr != nil {
			return contracts.Seed{}, fmt.Errorf("seed: the answer is not signed with the deployment key: %w", verr)
		}
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return contracts.Seed{}, fmt.Errorf("seed: no patrold instance of the cluster answers on %s", subject)
	}
	if err != nil {
		return contracts.Seed{}, fmt.Errorf("seed: %w", err)
	}
	var seed contracts.Seed
	if err := json.Unmarshal(msg.Data, &seed); err != nil {
		return contracts.Seed{}, fmt.Errorf("seed: answer: %w", err)
	}
	if seed.Error != "" {
		return seed, fmt.Errorf("seed: %s refused: %s", seed.Origin, seed.Error)
	}
	if seed.Object == "" {
		return seed, errors.New("seed: answer: object is required")
	}
	obs, err := js.ObjectStore(ctx, contracts.SeedBucket)
	if err != nil {
		return seed, fmt.Errorf("seed bucket: %w", err)
	}
	if err := obs.GetFile(ctx, seed.Object, dst); err != nil {
		os.Remove(dst)
		return seed, fmt.Errorf("seed download %s: %w", seed.Object, err)
	}
	_ = obs.Delete(ctx, seed.Object) // else it expires with the bucket's TTL
	if g != nil {
		sum, err := fileSHA256(dst)
		//mutate:seed-integrity-checked ./cluster ^TestPoisonedSeedRefused$
		if err == nil && sum != seed.SHA256 {
			err = fmt.Errorf("sha256 %s, the signed answer says %q", sum, seed.SHA256)
		}
		if err != nil {
			os.Remove(dst)
			return seed, fmt.Errorf("seed copy from %s: %w", seed.Origin, err)
		}
	}
	return seed, nil
}
