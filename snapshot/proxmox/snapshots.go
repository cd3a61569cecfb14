package proxmox

import (
	"strconv"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// snapshotReadEvery bounds the snapshot reads: one per guest and hour
// (docs/SOURCES.md). Snapshots age in days; an hour late is nothing.
const snapshotReadEvery = time.Hour

// snapshotEntry is one entry of GET /nodes/{node}/{qemu,lxc}/{vmid}/snapshot.
type snapshotEntry struct {
	Name     string `json:"name"`
	SnapTime number `json:"snaptime"`
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

// snapshotKey names a guest's snapshot list in the source's memory.
func snapshotKey(node string, g clusterResource) string {
	return node + "/" + g.Type + "/" + strconv.FormatInt(vmid(g), 10)
}

// readSnapshots reads a guest's snapshots, or reuses the source's read
// of the last hour; nil when neither is at hand.
func (w *worker) readSnapshots(g clusterResource) *snapshot.Snapshots {
	now := w.s.opts.Now().UTC().Truncate(time.Second)
	key := snapshotKey(w.work.name, g)
	w.s.mu.Lock()
	last, ok := w.s.snaps[key]
	w.s.mu.Unlock()
	if ok && now.Sub(last.ReadAt) < snapshotReadEvery && !now.Before(last.ReadAt) {
		return last
	}
	var list []snapshotEntry
	if !w.get([]string{"nodes", w.work.name, g.Type, strconv.FormatInt(vmid(g), 10), "snapshot"}, nil, func(d []byte) (err error) {
		list, err = decodeList[snapshotEntry](d)
		return err
	}) {
		if !w.down && len(w.res.problems) > 0 {
			w.res.problems[len(w.res.problems)-1].Warning = true
		}
		return nil
	}
	got := snapshotsOf(list, now)
	w.s.mu.Lock()
	if w.s.snaps == nil {
		w.s.snaps = map[string]*snapshot.Snapshots{}
	}
	w.s.snaps[key] = got
	w.s.mu.Unlock()
	return got
}
