package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/patrold/patrold/findings"
)

// MaxCachedActive bounds the active findings a store keeps in memory
// between run commits (about 1 KB each); above it every run reads them.
const MaxCachedActive = 100_000

// versioned keeps one value with the database version it was left at.
// A user takes it whole (take) and puts back what it left (put), so no
// two users share it. It is used only while the database's version is
// still that one: nothing is trusted that the database does not confirm.
type versioned[T any] struct {
	mu      sync.Mutex
	val     T
	version int64
	held    bool
}

// take hands the value over: nobody else uses it until the taker puts
// back what it left, or nothing (a failed commit).
func (c *versioned[T]) take() (val T, version int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	val, version, ok = c.val, c.version, c.held
	var zero T
	c.val, c.version, c.held = zero, 0, false
	return val, version, ok
}

// put installs what a user left at version, unless a later user already
// installed a newer one.
func (c *versioned[T]) put(val T, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held && c.version > version {
		return
	}
	c.val, c.version, c.held = val, version, true
}

// use calls fn on the value, under the lock, when it is held at version
// (the database's now), and reports whether it did.
func (c *versioned[T]) use(version int64, fn func(*T)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held || c.version != version {
		return false
	}
	fn(&c.val)
	return true
}

// activeCache keeps the active findings as the last run commit left them,
// at the findings version (migration 00012) they were left at. A steady
// run re-detects most of them unchanged, so reading every one whole again
// was most of its commit. Any other change to the findings table moves
// the version: an operator action, an investigation, a sweep, a
// replicated change, another process. The commit then reads the table.
type activeCache = versioned[activeState]

// activeState is what the cache holds, handed to a commit whole (take)
// and back (put). What is built from byID travels with it. It is kept
// only while the commits change no finding's membership (a steady run
// only re-detects) and byID came from the cache. A commit that read the
// table (another writer moved the version) builds them again, since the
// other writer may have swapped one finding for another.
type activeState struct {
	byID map[string]findings.Finding
	// order are byID's ids in order (the order a commit resolves the
	// unobserved ones in); nil: not built.
	order []string
	// keyList are the identity facts of byID's findings (ActiveKeys),
	// built on first use; nil: not built.
	keyList []findings.Finding
}

// activeKeys returns the identity facts of the cached active findings
// when the database's findings version q reads is still the cache's.
func activeKeys(ctx context.Context, c *activeCache, q querier) ([]findings.Finding, bool) {
	v, err := findingsVersion(ctx, q)
	if err != nil {
		return nil, false
	}
	var keys []findings.Finding
	ok := c.use(v, func(st *activeState) {
		if st.keyList == nil {
			st.keyList = identities(st.byID)
		}
		keys = st.keyList
	})
	return keys, ok
}

// identities are the identity facts of the findings of byID (ActiveKeys).
func identities(byID map[string]findings.Finding) []findings.Finding {
	out := make([]findings.Finding, 0, len(byID))
	for _, f := range byID {
		// DetectedAt: a rule of duration reads when its finding opened.
		out = append(out, findings.Finding{ID: f.ID, Key: f.Key, ResourceID: f.ResourceID, Category: f.Category, Status: f.Status,
			DetectedAt: f.DetectedAt})
	}
	return out
}

func findingsVersion(ctx context.Context, q querier) (int64, error) {
	var v int64
	if err := q.QueryRowContext(ctx, "SELECT n FROM findings_version WHERE id = 1").Scan(&v); err != nil {
		return 0, fmt.Errorf("findings version: %w", err)
	}
	return v, nil
}

// activeFindings are the active findings a commit starts from (st.byID,
// and their ids in order, st.order), and whether the commit goes on to
// update them for the next one (keep: false above MaxCachedActive).
// Cached, the map is the cache itself: reconciliation only reads it, and
// leave updates it once the changes are decided.
func (s *Store) activeFindings(ctx context.Context, tx *sql.Tx, sizeHint int) (st activeState, keep bool, err error) {
	st, cached, held := s.active.take()
	v, err := findingsVersion(ctx, tx)
	if err != nil {
		return st, false, err
	}
	if !held || cached != v {
		read, err := queryFindingsSized(ctx, tx, sizeHint, "WHERE status = 'active'")
		if err != nil {
			return st, false, err
		}
		st = activeState{byID: make(map[string]findings.Finding, len(read))}
		for i := range read {
			st.byID[read[i].ID] = read[i]
		}
	}
	if st.order == nil {
		st.order = slices.Sorted(maps.Keys(st.byID))
	}
	return st, len(st.byID) <= MaxCachedActive, nil
}

// leave applies a commit's changes to the cache it took. The cache then
// holds what is active after the commit, as the database would read it
// back. sameMembers is true when no finding joined or left the active
// ones (the cached identity facts still hold).
func leave(m map[string]findings.Finding, changes []findings.Change) (left map[string]findings.Finding, sameMembers bool) {
	if m == nil {
		return nil, false
	}
	sameMembers = true
	for i := range changes {
		f := &changes[i].Finding
		_, was := m[f.ID]
		if f.Status == findings.StatusActive {
			m[f.ID] = asStored(*f)
			sameMembers = sameMembers && was
		} else {
			delete(m, f.ID)
			sameMembers = sameMembers && !was
		}
	}
	if len(m) > MaxCachedActive {
		return nil, false
	}
	return m, sameMembers
}

// asStored is f as the store reads it back: times in UTC without a
// monotonic reading, empty tags and transitions nil, slices clipped so an
// append to a copy never writes into the cache's arrays. A finding the
// cache already held (a re-detection) is mostly in that form: nothing is
// copied then.
func asStored(f findings.Finding) findings.Finding {
	f.DetectedAt, f.LastSeenAt = f.DetectedAt.UTC(), f.LastSeenAt.UTC()
	for _, p := range []**time.Time{&f.ResolvedAt, &f.AcknowledgedAt, &f.SnoozedUntil, &f.DismissedAt,
		&f.InvestigationStarted, &f.LastInvestigationAt, &f.LastPublishedAt} {
		if *p != nil && **p != (*p).UTC() {
			t := (*p).UTC()
			*p = &t
		}
	}
	if len(f.ResourceTags) == 0 {
		f.ResourceTags = nil
	}
	f.ResourceTags = slices.Clip(f.ResourceTags)
	if len(f.Transitions) == 0 {
		f.Transitions = nil
	} else if !slices.ContainsFunc(f.Transitions, func(t time.Time) bool { return t != t.UTC() }) {
		f.Transitions = slices.Clip(f.Transitions)
	} else {
		tr := make([]time.Time, len(f.Transitions))
		for i, t := range f.Transitions {
			tr[i] = t.UTC()
		}
		f.Transitions = tr
	}
	return f
}
