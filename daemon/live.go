package daemon

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
	promsource "github.com/patrold/patrold/snapshot/prometheus"
	"github.com/patrold/patrold/snapshot/proxmox"
)

// live builds the snapshot source and the prober of a running daemon, at
// start and on each reload, around metrics registered once per process:
// those of each source kind the first time it is configured, the prober's
// at start. A reload never registers a collector twice. Each
// configuration is a new value in patrol.Settings, so a run in progress
// keeps the source and prober it started with.
type live struct {
	reg prometheus.Registerer
	now func() time.Time

	mu     sync.Mutex // serialises configure
	promM  *promsource.Metrics
	pveM   *proxmox.Metrics
	pbsM   *proxmox.PBSMetrics
	probeM *probe.Metrics
	// keep keeps the Proxmox source's guest copies across reloads and
	// restarts (the daemon's store, once open).
	keep proxmox.Keeper
}

func newLive(reg prometheus.Registerer, now func() time.Time) *live { return &live{reg: reg, now: now} }

// configure builds the source and prober cfg describes.
func (l *live) configure(cfg *config.Config) (snapshot.Source, *probe.Prober, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	kinds := []string{cfg.Source.Kind}
	for _, m := range cfg.Sources {
		kinds = append(kinds, m.Kind)
	}
	for _, kind := range kinds {
		switch kind {
		case "prometheus":
			if l.promM == nil {
				if l.promM, err = promsource.NewMetrics(l.reg); err != nil {
					return nil, nil, err
				}
			}
		case "proxmox":
			if l.pveM == nil {
				if l.pveM, err = proxmox.NewMetrics(l.reg); err != nil {
					return nil, nil, err
				}
			}
		case "pbs":
			if l.pbsM == nil {
				if l.pbsM, err = proxmox.NewPBSMetrics(l.reg); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	if l.probeM == nil {
		if l.probeM, err = probe.NewMetrics(l.reg); err != nil {
			return nil, nil, err
		}
	}
	src, err := buildSource(cfg, l.now, sourceMetrics{prom: l.promM, pve: l.pveM, pbs: l.pbsM, keep: l.keep})
	if err != nil {
		return nil, nil, err
	}
	po := probeOptions(cfg)
	po.Metrics = l.probeM
	pr, err := probe.New(po)
	if err != nil {
		return nil, nil, err
	}
	return src, pr, nil
}

// storeKeeper is the daemon's store as the Proxmox source's keeper. The
// source is built before the store opens and reads its copies at its
// first collection, after.
type storeKeeper struct{ d *Daemon }

var errStoreNotOpen = errors.New("store not open")

func (k storeKeeper) KeptCopies(ctx context.Context, scope string) (map[string][]byte, error) {
	if k.d.store == nil {
		return nil, errStoreNotOpen
	}
	return k.d.store.KeptCopies(ctx, scope)
}

func (k storeKeeper) KeepCopies(ctx context.Context, scope string, copies map[string][]byte) error {
	if k.d.store == nil {
		return errStoreNotOpen
	}
	return k.d.store.KeepCopies(ctx, scope, copies)
}
