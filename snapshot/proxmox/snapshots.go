package proxmox

import (
	"strconv"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// snapshotEntry is one entry of GET /nodes/{node}/{qemu,lxc}/{vmid}/snapshot.
type snapshotEntry struct {
	Name     string `json:"name"`
	SnapTime number `json:"snaptime"`
	// Digest is the guest config's digest, on the "current" entry.
	Digest string `json:"digest"`
}

// snapshotsOf sums a guest's snapshot list: PVE's "current" (the live
// state, with no snaptime) is no snapshot.
func snapshotsOf(list []snapshotEntry, readAt time.Time) *snapshot.Snapshots {
	out := &snapshot.Snapshots{ReadAt: readAt}
	for _, e := range list {
		if e.Name == "current" {
			continue
		}
		out.Count++
		if !e.SnapTime.set {
			continue
		}
		at := unixPtr(e.SnapTime)
		if at != nil && (out.OldestAt == nil || at.Before(*out.OldestAt)) {
			out.OldestAt, out.Oldest = at, clip(e.Name)
		}
	}
	return out
}

// readSnapshots reads a guest's snapshots, or uses the kept copy while
// nothing says it changed (kept.go); nil when neither is at hand. A list
// read again whose config digest moved reads the config again.
// Snapshots age in days: a copy a day old is little.
//
// A guest whose config cfg (read at cfgAt) names no parent snapshot has
// none: PVE names one while any snapshot is an ancestor of the live
// state. Its list is not read, unless the kept list held snapshots:
// deleting the root a guest was rolled back to leaves its other
// branches without a parent on the config (docs/SOURCES.md#snapshots).
func (w *worker) readSnapshots(g clusterResource, cfg guestConfig, cfgAt time.Time) *snapshot.Snapshots {
	segments := []string{"nodes", w.work.name, g.Type, strconv.FormatInt(vmid(g), 10), "snapshot"}
	prev := w.s.copyOf(w.ctx, keptKey(g, partSnapshots))
	//mutate:snapshots-only-with-parent ./snapshot/proxmox ^TestKeptSnapshotListOnlyWithParent$
	if cfg != nil && cfg["parent"] == "" && !heldSnapshots(prev) {
		return snapshotsOf(nil, cfgAt)
	}
	c, fresh := w.readKept(g, partSnapshots, segments, func(d []byte) error {
		_, err := decodeList[snapshotEntry](d)
		return err
	}, nil)
	if c == nil {
		return nil
	}
	list, err := decodeList[snapshotEntry](c.Data)
	if err != nil {
		return nil
	}
	if fresh && prev != nil {
		w.checkDigest(g, prev, list)
	}
	return snapshotsOf(list, c.ReadAt)
}

// checkDigest reads g's config again when the "current" entry of its
// snapshot list names another config digest than the list read before:
// the config file changed since. A config read in this run is not read
// twice.
func (w *worker) checkDigest(g clusterResource, prev *keptCopy, list []snapshotEntry) {
	old, err := decodeList[snapshotEntry](prev.Data)
	if err != nil {
		return
	}
	was, now := currentDigest(old), currentDigest(list)
	cfg := w.s.copyOf(w.ctx, keptKey(g, partConfig))
	//mutate:kept-digest-reread ./snapshot/proxmox ^TestKept
	if was != now && cfg != nil && cfg.ReadAt.Before(w.s.opts.Now().UTC().Truncate(time.Second)) {
		w.s.forget(keptKey(g, partConfig))
		if c, _ := w.readConfig(g); c != nil {
			w.res.configs[vmid(g)] = c
		}
	}
}

// heldSnapshots reports whether the kept list c held a snapshot.
func heldSnapshots(c *keptCopy) bool {
	if c == nil {
		return false
	}
	list, err := decodeList[snapshotEntry](c.Data)
	return err == nil && snapshotsOf(list, c.ReadAt).Count > 0
}

// currentDigest is the config digest on a snapshot list's "current"
// entry; "" when none.
func currentDigest(list []snapshotEntry) string {
	for _, e := range list {
		if e.Name == "current" {
			return e.Digest
		}
	}
	return ""
}
