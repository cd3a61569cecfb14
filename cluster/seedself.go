package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/store/records"
)

// Re-seeding itself: a database that diverged (a writer restarted with
// state changes the stream never got, after another instance wrote) is
// replaced, in place, by a caught-up instance's copy. Until then:
//   - the instance never becomes the writer (it releases a lease it
//     holds) and serves no seed copy;
//   - it is unready (replica_diverged) and its API refuses reads;
//   - it asks for a copy again, backing off from ReseedRetryMin to
//     reseedRetryMax.
const (
	ReseedRetryMin = time.Second
	reseedRetryMax = 30 * time.Second
	// reseedAttemptMin bounds the first attempt: a request lost in a
	// partition, or queued to an instance that hangs, is never answered.
	// Each failed one doubles it, up to SeedTimeout, so a large copy
	// still gets the time it needs.
	reseedAttemptMin = 10 * time.Second
	// seedInstallTimeout bounds putting a fetched copy in place.
	seedInstallTimeout = time.Minute
)

// errSeedNotNeeded: the database needs no copy any more (a gap closed
// while the copy was fetched).
var errSeedNotNeeded = errors.New("re-seed not needed any more")

// DivergedError says the database holds rows the stream never got.
type DivergedError struct{ records.Divergence }

func (e *DivergedError) Error() string {
	var what []string
	if e.Count > 0 || e.Fenced == 0 {
		what = append(what, fmt.Sprintf("the rows of %d events the state stream never got (dropped from the outbox: %s)", e.Count, rowList(e.Rows, e.Count)))
	}
	if e.Fenced > 0 {
		what = append(what, fmt.Sprintf("%d changes it wrote as a deposed writer, fenced on every replica (%s)", e.Fenced, rowList(e.FencedRows, e.Fenced)))
	}
	return fmt.Sprintf("this database holds %s; diverged at %s: %s wrote since: "+
		"it is re-seeded from a caught-up instance automatically; if that keeps failing, stop patrold and run patrold db seed --force --config FILE",
		strings.Join(what, " and "), e.Since.Format(time.RFC3339), e.LastWriter)
}

// rowList names rows, of n in all.
func rowList(rows []records.DroppedRow, n int) string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.TrimSpace(r.Kind+" "+r.ID))
	}
	if more := n - len(rows); more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(out, ", ")
}

// Diverged returns the divergence that stops this replica (nil: none).
func (f *Follower) Diverged() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.diverged.Diverged() {
		return nil
	}
	return &DivergedError{f.diverged}
}

// setDiverged records d and reports whether a divergence was recorded
// already.
func (f *Follower) setDiverged(d records.Divergence) (was bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	was = f.diverged.Diverged()
	f.diverged = d
	return was
}

// Reseed replaces the database with a caught-up instance's copy, fetched
// over nc into dir (FetchSeed: signed, hashed) and installed in place
// (Store.Reseed) by install, which calls its argument. Applying pauses
// meanwhile; then the stream resumes after the copy's sequence, and the
// divergence and any gap are gone.
func (f *Follower) Reseed(ctx context.Context, nc *nats.Conn, dir string, install func(func() error) error) (contracts.Seed, error) {
	path := filepath.Join(dir, fmt.Sprintf("patrold.reseed-%d.db", time.Now().UnixNano()))
	defer func() {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			_ = os.Remove(p)
		}
	}()
	seed, err := FetchSeed(ctx, nc, f.o.JetStream, f.o.Guard, f.o.Prefix, path)
	if err != nil {
		return seed, err
	}
	return seed, install(func() error {
		// Its own bound: the fetch may have used most of ctx's, and the
		// install may have waited for a promotion to end.
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), seedInstallTimeout)
		defer cancel()
		return f.installSeed(ictx, path)
	})
}

// installSeed puts the copy at path in place of the database.
func (f *Follower) installSeed(ctx context.Context, path string) error {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if _, err := f.o.Store.Reseed(ctx, path); err != nil {
		return err
	}
	f.mu.Lock()
	f.diverged, f.gap, f.refused = records.Divergence{}, nil, nil
	f.forgetWaits()
	f.mu.Unlock()
	f.restartConsumer()
	return nil
}

// installAsStandby installs a re-seed copy (install) once this instance
// is no writer: the copy comes with capture off, and a writer that does
// not capture answers changes no other instance ever gets. A promote in
// progress finishes first; the next one starts from the copy.
func (r *Member) installAsStandby(install func() error) error {
	r.roles.Lock()
	defer r.roles.Unlock()
	if !r.needsSeed() {
		// A gap closed meanwhile, and this instance may be the writer
		// now: its database stays.
		return errSeedNotNeeded
	}
	// The store refuses a copy while capturing (Store.Reseed). Demoting
	// here saves waiting for the watch; capture also stays on after a
	// promote that stopped halfway.
	r.demote(context.Background())
	if err := r.o.Store.DisableCapture(context.Background()); err != nil {
		return err
	}
	// The next promotion takes a new epoch: the copy raised own_since
	// above this one (promote).
	return install()
}

// needsSeed says whether this database waits for a re-seed: diverged,
// or a standby past a gap.
func (r *Member) needsSeed() bool {
	if r.f.Diverged() != nil {
		return true
	}
	//mutate:gap-reseeds ./cluster ^TestGappedStandbyReseedsItself
	if r.f.Gap() != nil && !r.isWriter() {
		return true
	}
	return false
}

// reseedLoop re-seeds a diverged database, or one that met a gap, until
// it is done or ctx ends. Start runs the seed service after it: such an
// instance answers no seed request, so every one it sends reaches an
// instance that may. The writer never re-seeds for a gap: its database
// is the one the others copy.
func (r *Member) reseedLoop(ctx context.Context) {
	wait, attempt := time.Duration(0), reseedAttemptMin
	for r.needsSeed() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(max(2*wait, ReseedRetryMin), reseedRetryMax)
		what := "diverged database"
		if r.f.Diverged() == nil {
			what = "database with a gap"
		}
		actx, cancel := context.WithTimeout(ctx, attempt)
		seed, err := r.f.Reseed(actx, r.o.Bus.Conn(), r.o.DataDir, r.installAsStandby)
		cancel()
		if errors.Is(err, errSeedNotNeeded) {
			continue
		}
		if err != nil {
			attempt = min(2*attempt, SeedTimeout)
			if ctx.Err() == nil {
				r.log.Warn(what+" not re-seeded yet", "err", err, "retry_in", wait)
			}
			continue
		}
		r.reseeds.Add(1)
		r.log.Info(what+" re-seeded from a caught-up instance: it holds what the stream holds", "origin", seed.Origin,
			"signer", seed.Signer, "applied_seq", seed.AppliedSeq, "bytes", seed.Bytes)
	}
}
