package daemon

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// silenceRecheck bounds how long a silence added or expired through the
// API or the CLI goes unnoticed between two silence ends.
const silenceRecheck = time.Minute

// watchSilenceEnds sweeps the findings when a silence ends or the set
// of silences in force changes, so what a silence held is published then
// and not at the next run, hours later (docs/FINDINGS.md#silences).
func (d *Daemon) watchSilenceEnds(ctx context.Context) {
	last, _ := d.silencesInForce(ctx)
	for {
		wait := silenceRecheck
		for _, s := range last {
			if w := time.Until(s.EndsAt); w < wait {
				wait = max(w, 0)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now, err := d.silencesInForce(ctx)
		if err != nil {
			d.log.Warn("list silences", "err", err)
			continue
		}
		changed := !slices.EqualFunc(last, now, func(a, b findings.Silence) bool { return a.ID == b.ID && a.EndsAt.Equal(b.EndsAt) })
		last = now
		// Only the writer publishes; a standby's database follows it.
		//mutate:silence-end-publishes:always ./cmd/patrold ^TestSilenceEndPublishesWithoutARun$
		if !changed || !d.IsWriter() {
			continue
		}
		set := d.settings.Load()
		retention := set.ResolvedRetention
		if retention == 0 {
			retention = patrol.DefaultResolvedRetention
		}
		res, err := d.store.Sweep(ctx, d.opts.Now(), retention, set.Publish)
		if err != nil {
			d.log.Error("sweep at a silence's end", "err", err)
			continue
		}
		d.log.Info("silences changed: findings re-evaluated", "unsilenced", res.Unsilenced, "silenced", res.Silenced)
	}
}

// silencesInForce lists the silences in force now, by id.
func (d *Daemon) silencesInForce(ctx context.Context) ([]findings.Silence, error) {
	list, err := d.store.Silences(ctx, d.opts.Now(), true)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b findings.Silence) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}
