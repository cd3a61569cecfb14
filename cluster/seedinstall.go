package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
)

// SeedResult is what installing a seed copy did (`patrold db seed`).
type SeedResult struct {
	Database   string `json:"database"`
	Origin     string `json:"origin"`      // the instance whose copy it is
	AppliedSeq uint64 `json:"applied_seq"` // the state stream sequence the copy resumes after
	Bytes      int64  `json:"bytes"`
	Backup     string `json:"backup,omitempty"` // where the replaced database went
	// Signer is the deployment key id the serving instance signed its
	// answer (and the copy's SHA-256) with.
	Signer string `json:"signer,omitempty"`
}

// SeedTarget checks the database a seed copy would replace: an existing
// one is replaced only with force. It reports whether db exists.
func SeedTarget(db string, force bool) (exists bool, err error) {
	_, statErr := os.Stat(db)
	exists = statErr == nil
	if exists && !force {
		return true, fmt.Errorf("--force: %s exists; --force replaces it (the old file is kept beside it)", db)
	}
	return exists, nil
}

// SeedInstall says where a seed copy goes and how it is checked.
type SeedInstall struct {
	// DB is the database the copy replaces; Exists is SeedTarget's answer.
	DB     string
	Exists bool
	// Verify checks (and migrates) the copy at path before it is put in
	// place: the store's integrity check.
	Verify func(ctx context.Context, path string) error
	Now    func() time.Time
	Log    *slog.Logger
	// Guard signs the request and checks the answer and the copy
	// (FetchSeed).
	Guard *bus.Guard
}

// InstallSeed fetches a copy of a caught-up instance's database over nc
// and js (FetchSeed) and puts it in place of o.DB:
//   - the copy lands beside the database first (DB + ".seed") and is
//     verified there; a copy that fails is removed;
//   - an existing database is kept beside it (DB + ".before-seed-<unix>",
//     with its -wal and -shm);
//   - then the copy is renamed over DB.
func InstallSeed(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, prefix string, o SeedInstall) (SeedResult, error) {
	db := o.DB
	tmp := db + ".seed"
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		_ = os.Remove(p)
	}
	seed, err := FetchSeed(ctx, nc, js, o.Guard, prefix, tmp)
	if err != nil {
		return SeedResult{}, err
	}
	if err := o.Verify(ctx, tmp); err != nil {
		os.Remove(tmp)
		return SeedResult{}, fmt.Errorf("seed copy from %s: %w", seed.Origin, err)
	}
	res := SeedResult{Database: db, Origin: seed.Origin, AppliedSeq: seed.AppliedSeq, Bytes: seed.Bytes, Signer: seed.Signer}
	if o.Exists {
		res.Backup = fmt.Sprintf("%s.before-seed-%d", db, o.Now().Unix())
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
	o.Log.Info("database seeded", "database", db, "origin", seed.Origin, "signer", seed.Signer, "applied_seq", seed.AppliedSeq,
		"bytes", seed.Bytes, "backup", res.Backup)
	return res, nil
}
