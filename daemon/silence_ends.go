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
// API or the CLI goes unnoticed: a short silence must not end unseen.
// Listing the silences in force is one indexed query.
const silenceRecheck = 10 * time.Second

// watchSilenceEnds sweeps the findings when a silence ends or the set
// of silences in force changes, so what a silence held is published then
// and not at the next run, hours later (docs/FINDINGS.md#silences).
func (d *Daemon) watchSilenceEnds(ctx context.Context) {
	last, _ := d.allSilences(ctx)
	checked := d.opts.Now()
	held := false
	for {
		// Once, as soon as this instance writes; on its own goroutine, so
		// a wait for the write lock never delays a silence's end.
		if !held && d.IsWriter() {
			held = true
			d.bg.Add(1)
			go func() {
				defer d.bg.Done()
				// The marker sits on the call, not the goroutine: removing
				// the goroutine would leave bg waiting, and the test would
				// end only at its timeout.
				//mutate:held-resolutions-on-start ./cmd/patrold ^TestStartPublishesResolutionsASilenceHeld$
				d.publishHeldResolutions(ctx)
			}()
		}
		wait := silenceRecheck
		for _, s := range last {
			for _, at := range []time.Time{s.StartsAt, s.EndsAt} {
				if w := time.Until(at); w > 0 && w < wait {
					wait = w
				}
			}
		}
		// A silence ending this very instant: wait a little, not zero.
		t := time.NewTimer(max(wait, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := d.opts.Now()
		list, err := d.allSilences(ctx)
		if err != nil {
			d.log.Warn("list silences", "err", err)
			continue
		}
		// Changed: a silence was created, ended early, or started or
		// ended since the last check (even one that did both in between).
		changed := !slices.EqualFunc(last, list, func(a, b findings.Silence) bool { return a.ID == b.ID && a.EndsAt.Equal(b.EndsAt) })
		for _, s := range list {
			for _, at := range []time.Time{s.StartsAt, s.EndsAt} {
				changed = changed || (at.After(checked) && !at.After(now))
			}
		}
		// Only the writer publishes; a standby's database follows it.
		//mutate:silence-end-publishes:always ./cmd/patrold ^TestSilenceEndPublishesWithoutARun$
		if !changed || !d.IsWriter() {
			last, checked = list, now
			continue
		}
		set := d.settings.Load()
		retention := set.ResolvedRetention
		if retention == 0 {
			retention = patrol.DefaultResolvedRetention
		}
		res, err := d.store.Sweep(ctx, now, retention, set.Publish)
		if err != nil {
			// last and checked stay: the next check sweeps again.
			d.log.Error("sweep at a silence's end", "err", err)
			continue
		}
		last, checked = list, now
		d.log.Info("silences changed: findings re-evaluated", "unsilenced", res.Unsilenced, "silenced", res.Silenced)
	}
}

// allSilences lists every stored silence (ended ones until retention
// removes them), by id.
func (d *Daemon) allSilences(ctx context.Context) ([]findings.Silence, error) {
	list, err := d.store.Silences(ctx, d.opts.Now(), false)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b findings.Silence) int { return strings.Compare(a.ID, b.ID) })
	return list, nil
}

// publishHeldResolutions publishes the resolutions a silence kept from
// subscribers before resolutions were published whatever held them
// (store.PublishHeldResolutions; docs/FINDINGS.md#silences).
func (d *Daemon) publishHeldResolutions(ctx context.Context) {
	ids, err := d.store.PublishHeldResolutions(ctx, d.opts.Now())
	if err != nil {
		d.log.Error("publish held resolutions", "err", err)
		return
	}
	if len(ids) > 0 {
		d.log.Info("published resolutions a silence had held", "findings", ids)
	}
}
