package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/store"
)

// SeedResult is what `patrold db seed` did.
type SeedResult struct {
	Database   string `json:"database"`
	Origin     string `json:"origin"`      // the instance whose copy it is
	AppliedSeq uint64 `json:"applied_seq"` // the state stream sequence the copy resumes after
	Bytes      int64  `json:"bytes"`
	Backup     string `json:"backup,omitempty"` // where the replaced database went
}

// Seed replaces this instance's database with a copy of a caught-up
// instance's, fetched over NATS (cluster mode; the daemon must not run on
// data_dir). An existing database is replaced only with force, and kept
// beside it. The copy is integrity-checked (and migrated) before it is
// put in place.
func (r *Root) Seed(ctx context.Context, force bool) (SeedResult, error) {
	cfg := r.cfg
	if cfg.Cluster == nil {
		return SeedResult{}, configErr(errors.New("cluster: patrold db seed copies a database from another instance of a cluster; this configuration has no cluster section"))
	}
	if err := r.Lock("db seed", ""); err != nil {
		return SeedResult{}, err
	}
	db := r.DBPath()
	_, statErr := os.Stat(db)
	exists := statErr == nil
	if exists && !force {
		return SeedResult{}, configErr(fmt.Errorf("--force: %s exists; --force replaces it (the old file is kept beside it)", db))
	}
	b, err := bus.New(cfg.NATS, r.log, nil, bus.WithEmbedded(embedded.Start))
	if err != nil {
		return SeedResult{}, configErr(err)
	}
	if err := b.Start(ctx); err != nil {
		return SeedResult{}, err
	}
	defer b.Close()
	tmp := db + ".seed"
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		_ = os.Remove(p)
	}
	seed, err := cluster.FetchSeed(ctx, b.Conn(), b.JetStream(), b.Prefix(), tmp)
	if err != nil {
		return SeedResult{}, err
	}
	st, err := store.Open(ctx, tmp)
	if err == nil {
		err = st.Check(ctx, false)
		err = errors.Join(err, st.Close())
	}
	if err != nil {
		os.Remove(tmp)
		return SeedResult{}, fmt.Errorf("seed copy from %s: %w", seed.Origin, err)
	}
	res := SeedResult{Database: db, Origin: seed.Origin, AppliedSeq: seed.AppliedSeq, Bytes: seed.Bytes}
	if exists {
		res.Backup = fmt.Sprintf("%s.before-seed-%d", db, r.o.Now().Unix())
		if err := os.Rename(db, res.Backup); err != nil {
			return SeedResult{}, fmt.Errorf("keep the old database: %w", err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if err := os.Rename(db+suffix, res.Backup+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return SeedResult{}, fmt.Errorf("keep the old database: %w", err)
			}
		}
	}
	if err := os.Rename(tmp, db); err != nil {
		return SeedResult{}, fmt.Errorf("install the seed copy: %w", err)
	}
	r.log.Info("database seeded", "database", db, "origin", seed.Origin, "applied_seq", seed.AppliedSeq, "bytes", seed.Bytes,
		"backup", res.Backup)
	return res, nil
}
