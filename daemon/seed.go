package daemon

import (
	"context"
	"errors"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/store"
)

// Seed replaces this instance's database with a copy of a caught-up
// instance's, fetched over NATS (cluster mode; the daemon must not run on
// data_dir). The root wires it: the lock, the connection and the store's
// check of the copy; cluster.InstallSeed does the rest.
func (r *Root) Seed(ctx context.Context, force bool) (cluster.SeedResult, error) {
	cfg := r.cfg
	if cfg.Cluster == nil {
		return cluster.SeedResult{}, configErr(errors.New("cluster: patrold db seed copies a database from another instance of a cluster; this configuration has no cluster section"))
	}
	if err := r.Lock("db seed", ""); err != nil {
		return cluster.SeedResult{}, err
	}
	db := r.DBPath()
	exists, err := cluster.SeedTarget(db, force)
	if err != nil {
		return cluster.SeedResult{}, configErr(err)
	}
	b, err := r.newBus(cfg.NATS, r.log, nil, false)
	if err != nil {
		return cluster.SeedResult{}, configErr(err)
	}
	if err := b.Start(ctx); err != nil {
		return cluster.SeedResult{}, err
	}
	defer b.Close()
	return cluster.InstallSeed(ctx, b.Conn(), b.JetStream(), b.Prefix(), cluster.SeedInstall{
		DB: db, Exists: exists, Verify: store.VerifyCopy, Now: r.o.Now, Log: r.log, Guard: b.Guard()})
}
