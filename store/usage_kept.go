package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/patrold/patrold/signals"
)

// noPoint is the newest point of a resource without a series.
const noPoint = math.MinInt64

// usageKept keeps, for the samples of the last RecordUsage, the newest
// point of each one's series as that call left it, with the usage version
// (migration 00019) it left the history at. A steady run samples the same
// resources again, so finding the due ones was a probe of the history per
// sampled resource. The next call uses the kept points only while:
//   - the version in the database is still that one (any other change to
//     the points since moved it: another process, a test's own SQL);
//   - its samples name the same resources in the same order.
//
// Otherwise it reads the newest points from usage_series, in one query.
// Nothing is trusted that the database does not confirm.
type usageKept struct {
	mu sync.Mutex
	usageState
	// reads counts the queries for newest points (a test's probe).
	reads atomic.Int64
}

// usageState is what usageKept holds, handed to a call whole (take) and
// back (put).
type usageState struct {
	version int64 // 0: nothing kept (the counter starts at 1)
	// ids are the samples' resource ids concatenated, ends[i] the end of
	// the i-th; a copy, so the snapshot's strings are not kept alive.
	ids  string
	ends []int
	// last[i] is the newest point (Unix seconds) of the i-th sample's
	// series, noPoint for none.
	last []int64
}

// take hands the kept points to a call: nobody else uses them until the
// call puts back what it left (put), or nothing (a failed call).
func (k *usageKept) take() usageState {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.usageState
	k.usageState = usageState{}
	return st
}

// put installs what a committed call left, unless a later call already
// installed a newer state.
func (k *usageKept) put(st usageState) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.version > st.version {
		return
	}
	k.usageState = st
}

// same reports whether samples name st's resources in st's order.
func (st usageState) same(samples []signals.UsageSample) bool {
	if st.version == 0 || len(samples) != len(st.ends) {
		return false
	}
	start := 0
	for i, sm := range samples {
		if st.ids[start:st.ends[i]] != sm.ResourceID {
			return false
		}
		start = st.ends[i]
	}
	return true
}

// keptState is the state to keep for samples with their newest points
// last at version v.
func keptState(samples []signals.UsageSample, last []int64, v int64) usageState {
	n := 0
	for _, sm := range samples {
		n += len(sm.ResourceID)
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]int, len(samples))
	for i, sm := range samples {
		b.WriteString(sm.ResourceID)
		ends[i] = b.Len()
	}
	return usageState{version: v, ids: b.String(), ends: ends, last: last}
}

func usageVersion(ctx context.Context, q querier) (int64, error) {
	var v int64
	if err := q.QueryRowContext(ctx, "SELECT n FROM usage_version WHERE id = 1").Scan(&v); err != nil {
		return 0, fmt.Errorf("usage version: %w", err)
	}
	return v, nil
}

// newestPoints reads the newest point of each sample's series from
// usage_series in one query over a JSON array of their ids, answered as
// one text: "index at" pairs, comma-separated, for the samples that have
// a series (the others have noPoint).
func newestPoints(ctx context.Context, tx *sql.Tx, samples []signals.UsageSample) ([]int64, error) {
	last := make([]int64, len(samples))
	for i := range last {
		last[i] = noPoint
	}
	if len(samples) == 0 {
		return last, nil
	}
	ids := make([]string, len(samples))
	for i, sm := range samples {
		ids[i] = sm.ResourceID
	}
	var pairs sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT group_concat(j.key || ' ' || s.last_at, ',') FROM json_each(?1) AS j
		JOIN usage_series AS s ON s.resource_id = j.value`, string(jsonArray(ids))).Scan(&pairs)
	if err != nil {
		return nil, fmt.Errorf("newest points: %w", err)
	}
	if err := parsePairs(pairs.String, last); err != nil {
		return nil, fmt.Errorf("newest points: %w", err)
	}
	return last, nil
}

// parsePairs sets last[i] = at for each "i at" pair of s (comma-separated).
func parsePairs(s string, last []int64) error {
	for s != "" {
		pair, rest, _ := strings.Cut(s, ",")
		s = rest
		is, ats, ok := strings.Cut(pair, " ")
		i, err := strconv.Atoi(is)
		if !ok || err != nil || i < 0 || i >= len(last) {
			return fmt.Errorf("pair %q: not an index and a time", pair)
		}
		at, err := strconv.ParseInt(ats, 10, 64)
		if err != nil {
			return fmt.Errorf("pair %q: %w", pair, err)
		}
		last[i] = at
	}
	return nil
}
