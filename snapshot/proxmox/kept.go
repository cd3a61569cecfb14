package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// DefaultRefresh is how old a kept copy may grow before it is read again
// (source.proxmox.refresh). It is longer than the default schedule's 6 h:
// at a shorter one every scheduled run would read every guest again.
// What changes a guest otherwise says so (due, touched).
const DefaultRefresh = 24 * time.Hour

// What is kept of a guest between runs
// (docs/SOURCES.md#what-is-read-every-run-and-what-is-kept).
const (
	partConfig    = "config"
	partAgent     = "agent"
	partSnapshots = "snapshot"
)

// Keeper keeps the source's copies across restarts: the store. Copies are
// kept under a scope, the cluster's URL, by key.
type Keeper interface {
	// KeptCopies returns every copy kept under scope, by key.
	KeptCopies(ctx context.Context, scope string) (map[string][]byte, error)
	// KeepCopies saves the copies under scope; a nil value deletes its key.
	KeepCopies(ctx context.Context, scope string, copies map[string][]byte) error
}

// keptCopy is one read of a guest kept between runs, with the guest's
// state in /cluster/resources when it was read.
type keptCopy struct {
	Node   string    `json:"node"`
	Status string    `json:"status"`
	Lock   string    `json:"lock"`
	Uptime int64     `json:"uptime"`
	ReadAt time.Time `json:"read_at"`
	// Data is the answer's data member; null for a guest agent that
	// answered it is not running.
	Data json.RawMessage `json:"data"`
}

// keptKey names a part of a guest: "qemu/100/config". The node is left
// out: a guest that moved is the same guest, read again.
func keptKey(g clusterResource, part string) string {
	return g.Type + "/" + strconv.FormatInt(vmid(g), 10) + "/" + part
}

// guestUptime is the guest's uptime in whole seconds; 0 when not given.
func guestUptime(g clusterResource) int64 { return int64(g.Uptime.v) }

// refreshOf is the age at which the copy under key is read again: spread
// over the last quarter of refresh by the key, so copies read in one run
// are not all read again in one later run. Whole seconds, as the clock
// the copies are read on.
func (s *Source) refreshOf(key string) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	quarter := s.opts.Refresh / 4
	spread := time.Duration(uint64(quarter) * uint64(h.Sum32()%1024) / 1024)
	return (s.opts.Refresh - spread).Truncate(time.Second)
}

// due reports whether the kept copy c of g (on node now) must be read
// again: nothing kept, or something says it may have changed.
func (s *Source) due(c *keptCopy, node string, g clusterResource, key string, now time.Time) bool {
	if c == nil {
		return true
	}
	//mutate:kept-moved-guest-reread ./snapshot/proxmox ^TestKept
	if c.Node != node {
		return true
	}
	//mutate:kept-restarted-guest-reread ./snapshot/proxmox ^TestKept
	if guestUptime(g) < c.Uptime {
		return true
	}
	//mutate:kept-status-lock-reread ./snapshot/proxmox ^TestKept
	if c.Status != g.Status || c.Lock != g.Lock {
		return true
	}
	//mutate:kept-refresh-age ./snapshot/proxmox ^TestKept
	if now.Before(c.ReadAt) || now.Sub(c.ReadAt) >= s.refreshOf(key) {
		return true
	}
	return false
}

// quietTasks are the task types that never change a guest's config,
// snapshots or addresses: backups, consoles, and power tasks (those
// change its status or uptime, which say so by themselves).
var quietTasks = map[string]bool{"vzdump": true, "vncproxy": true, "vncshell": true, "spiceproxy": true,
	"termproxy": true, "qmstart": true, "qmstop": true, "qmshutdown": true, "qmreboot": true, "qmreset": true,
	"qmsuspend": true, "qmresume": true, "vzstart": true, "vzstop": true, "vzshutdown": true, "vzreboot": true,
	"vzsuspend": true, "vzresume": true}

// taskSkew is how far a node's clock may run behind the patrol host's: a
// task that ended this long before a copy was read may postdate it.
const taskSkew = time.Minute

// taskChanges is what a node's recent tasks say of its guests' copies
// (touchedBy).
type taskChanges struct {
	// last is the latest end of each guest's tasks that may change it
	// (math.MaxInt64 while one runs), by vmid.
	last map[string]int64
	// from is the start of the oldest task listed when the list is full;
	// 0 when it lists every task.
	from int64
}

// touchedBy sums a node's recent tasks (newest first) for touched.
func touchedBy(recent []task) *taskChanges {
	out := &taskChanges{last: map[string]int64{}}
	for _, t := range recent {
		if t.ID == "" || quietTasks[t.Type] {
			continue
		}
		end := int64(t.EndTime.v)
		if running(t) {
			end = math.MaxInt64
		}
		out.last[t.ID] = max(out.last[t.ID], end)
	}
	if len(recent) >= recentLimit {
		out.from = int64(recent[len(recent)-1].StartTime.v)
	}
	return out
}

// touched reports whether the node's recent tasks say g may have changed
// since c was read
// (docs/SOURCES.md#what-is-read-every-run-and-what-is-kept):
//   - a task of g that may change it ended after the read, or runs;
//   - the list is full and starts after the read: what came before it
//     is unknown.
//
// Tasks that were not read say nothing; the other rules judge.
func (w *worker) touched(g clusterResource, c *keptCopy) bool {
	tc := w.res.changes
	if c == nil || tc == nil {
		return false
	}
	since := c.ReadAt.Add(-taskSkew).Unix()
	//mutate:kept-task-reread ./snapshot/proxmox ^TestKeptTaskRereads$
	if tc.last[strconv.FormatInt(vmid(g), 10)] >= since {
		return true
	}
	//mutate:kept-full-task-list ./snapshot/proxmox ^TestKeptTaskRereads$
	if tc.from > since {
		return true
	}
	return false
}

// copyOf is the copy kept under key, loading the store's copies on first
// use; nil when none is kept.
func (s *Source) copyOf(ctx context.Context, key string) *keptCopy {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadLocked(ctx)
	return s.copies[key]
}

// loadLocked reads the kept copies from the store once. A copy that does
// not decode is dropped: it is read again. s.mu is held.
func (s *Source) loadLocked(ctx context.Context) {
	if s.loaded {
		return
	}
	s.loaded = true
	if s.copies == nil {
		s.copies, s.dirty = map[string]*keptCopy{}, map[string]bool{}
	}
	if s.opts.Keeper == nil {
		return
	}
	raw, err := s.opts.Keeper.KeptCopies(ctx, s.opts.URL)
	if err != nil {
		s.keepErr = fmt.Errorf("reading the kept copies: %w", err)
		return
	}
	for k, v := range raw {
		if c, err := decodeKept(v); err == nil {
			s.copies[k] = c
		}
	}
}

// decodeKept decodes a copy as the store keeps it. An error names the
// field; the copy is then dropped and read again.
func decodeKept(raw []byte) (*keptCopy, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("must be an object, got %s", te.Value)
		}
		return nil, jsonError(err, "")
	}
	var c keptCopy
	for _, f := range []struct {
		name     string
		into     any
		required bool
	}{
		{"node", &c.Node, true}, {"status", &c.Status, false}, {"lock", &c.Lock, false},
		{"uptime", &c.Uptime, false}, {"read_at", &c.ReadAt, true}, {"data", &c.Data, true},
	} {
		v, ok := fields[f.name]
		if !ok {
			if f.required {
				return nil, fmt.Errorf("%s: required", f.name)
			}
			continue
		}
		if err := json.Unmarshal(v, f.into); err != nil {
			if jerr := jsonError(err, f.name); jerr != err {
				return nil, jerr
			}
			return nil, fmt.Errorf("%s: %v", f.name, err)
		}
	}
	switch {
	case c.Node == "":
		return nil, errors.New("node: must not be empty")
	case c.ReadAt.IsZero():
		return nil, errors.New("read_at: must not be zero")
	}
	return &c, nil
}

// keep records a new read of g's part on node.
func (s *Source) keep(key, node string, g clusterResource, at time.Time, data []byte) *keptCopy {
	c := &keptCopy{Node: node, Status: g.Status, Lock: g.Lock, Uptime: guestUptime(g), ReadAt: at, Data: slices.Clone(data)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copies[key] = c
	s.dirty[key] = true
	return c
}

// forget drops the copy under key: it is read again.
func (s *Source) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.copies, key)
}

// saveKept writes the copies read in this run to the store and forgets
// those of guests no longer in the cluster. A failure is a warning: the
// copies stay in memory.
func (s *Source) saveKept(ctx context.Context, guests []clusterResource) []snapshot.Problem {
	s.mu.Lock()
	s.loadLocked(ctx)
	live := map[string]bool{}
	for _, g := range guests {
		for _, part := range []string{partConfig, partAgent, partSnapshots} {
			live[keptKey(g, part)] = true
		}
	}
	out := map[string][]byte{}
	for k := range s.copies {
		if !live[k] {
			delete(s.copies, k)
			out[k] = nil
		}
	}
	for k := range s.dirty {
		if c := s.copies[k]; c != nil {
			out[k], _ = json.Marshal(c)
		}
	}
	s.dirty = map[string]bool{}
	loadErr := s.keepErr
	s.keepErr = nil
	s.mu.Unlock()
	err := loadErr
	if s.opts.Keeper != nil && len(out) > 0 {
		if werr := s.opts.Keeper.KeepCopies(ctx, s.opts.URL, out); werr != nil {
			err = fmt.Errorf("saving the kept copies: %w", werr)
		}
	}
	if err == nil {
		return nil
	}
	return []snapshot.Problem{{ID: SourceProblemID, Index: -1, Field: "refresh", Warning: true,
		Problem: err.Error() + "; guest configs, agent addresses and snapshot lists are kept in memory only"}}
}

// staleNote ends the problem of a failed read whose kept copy is used.
func staleNote(part string, readAt time.Time) string {
	if part == partAgent {
		return "the addresses of the copy read at " + readAt.Format(time.RFC3339) + " are used (stale)"
	}
	return "the copy read at " + readAt.Format(time.RFC3339) + " is used (stale)"
}

// keptFailure is how readKept takes a failed read of a part that is
// no failure of the node (the guest agent's): it gets the request's
// error and says what to keep (nil: nothing) and whether that ends the
// read (else the last copy is used, marked stale).
type keptFailure func(err error) (keep []byte, done bool)

// readKept returns g's part: the kept copy when nothing says it changed,
// else a new read through the node, checked by check. A failed read uses
// the kept copy while the node answers, marked stale in the read's
// problem. nil when neither is at hand; fresh says it was read now.
//
// With failed set, the read does not go through w.get: its failures do
// not stop the node, and one without a kept copy is no problem.
func (w *worker) readKept(g clusterResource, part string, segments []string, check func([]byte) error, failed keptFailure) (c *keptCopy, fresh bool) {
	key := keptKey(g, part)
	now := w.s.opts.Now().UTC().Truncate(time.Second)
	last := w.s.copyOf(w.ctx, key)
	if !w.s.due(last, w.work.name, g, key, now) && !w.touched(g, last) {
		return last, false
	}
	var raw []byte
	decode := func(d []byte) error {
		raw = d
		return check(d)
	}
	var p *snapshot.Problem
	if failed == nil {
		if w.get(segments, nil, decode) {
			return w.s.keep(key, w.work.name, g, now, raw), true
		}
		if w.down || len(w.res.problems) == 0 {
			return nil, false
		}
		p = &w.res.problems[len(w.res.problems)-1]
	} else {
		err := w.sess.get(w.ctx, segments, nil, decode)
		if err == nil {
			return w.s.keep(key, w.work.name, g, now, raw), true
		}
		if keep, done := failed(err); done {
			if keep == nil {
				return nil, false
			}
			return w.s.keep(key, w.work.name, g, now, keep), true
		}
		if last == nil {
			return nil, false
		}
		w.res.problems = append(w.res.problems, nodeProblem(w.work.name, endpointOf(segments), err))
		p = &w.res.problems[len(w.res.problems)-1]
	}
	p.Warning = true
	if last == nil {
		return nil, false
	}
	//mutate:kept-stale-copy-marked ./snapshot/proxmox ^TestKept
	p.Problem += "; " + staleNote(part, last.ReadAt)
	return last, false
}
