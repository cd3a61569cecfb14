package store

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/patrold/patrold/findings"
)

// outboxCacheBytes bounds the data the cache holds (about 16k events of
// 1 KB). Rows beyond it are read back from the database as before.
const outboxCacheBytes = 16 << 20

// outboxCache keeps the rows Enqueue committed, as PendingEvents would
// read them back. So the relay publishes what this process just wrote
// without reading it from SQLite again. It is only a shortcut:
//   - the database decides which rows are pending (PendingEvents lists
//     their seq and id, and uses the cache only when it holds exactly that
//     window);
//   - an outbox row never changes once written (seq is never reused), so a
//     cached row is what the database holds.
//
// Rows leave it when they are marked sent and when unsent rows are
// dropped. The cache never grows past outboxCacheBytes.
type outboxCache struct {
	mu    sync.Mutex
	rows  []findings.OutboxEvent // ascending Seq
	bytes int
}

func cachedSize(r *findings.OutboxEvent) int {
	return len(r.Data) + len(r.ID) + len(r.Subject) + len(r.Type) + len(r.ResourceID) + 128
}

// add records committed rows (Seq set).
func (c *outboxCache) add(rows []findings.OutboxEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		size := cachedSize(&r)
		if c.bytes+size > outboxCacheBytes {
			return
		}
		n := len(c.rows)
		if n == 0 || c.rows[n-1].Seq < r.Seq {
			c.rows = append(c.rows, r)
		} else {
			// Two Enqueue calls that committed in one order and got here
			// in the other.
			i := sort.Search(n, func(i int) bool { return c.rows[i].Seq >= r.Seq })
			if c.rows[i].Seq == r.Seq {
				continue
			}
			c.rows = append(c.rows, findings.OutboxEvent{})
			copy(c.rows[i+1:], c.rows[i:n])
			c.rows[i] = r
		}
		c.bytes += size
	}
}

// window returns the n cached rows keys names (pendingKeysSQL's
// encoding), in order, or false if any is missing.
func (c *outboxCache) window(n int, keys string) ([]findings.OutboxEvent, bool) {
	colon := strings.IndexByte(keys, ':')
	if colon < 0 {
		return nil, false
	}
	first, err := strconv.ParseInt(keys[:colon], 10, 64)
	if err != nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.rows), func(i int) bool { return c.rows[i].Seq >= first })
	if len(c.rows)-i < n {
		return nil, false
	}
	rows := c.rows[i : i+n]
	want := make([]byte, 0, len(keys))
	for k := range rows {
		if k > 0 {
			want = append(want, ',')
		}
		want = strconv.AppendInt(want, rows[k].Seq, 10)
		want = append(want, ':')
		want = strconv.AppendInt(want, int64(len(rows[k].ID)), 10)
		want = append(want, ':')
		want = append(want, rows[k].ID...)
	}
	if string(want) != keys {
		return nil, false
	}
	return slices.Clone(rows), true
}

// span returns the n cached rows of seqs first..first+n-1, when it holds
// every one of them.
func (c *outboxCache) span(first int64, n int) ([]findings.OutboxEvent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.rows), func(i int) bool { return c.rows[i].Seq >= first })
	// Ascending and unique, from first on: n rows ending at first+n-1 are
	// those seqs.
	if len(c.rows)-i < n || c.rows[i+n-1].Seq != first+int64(n)-1 {
		return nil, false
	}
	return slices.Clone(c.rows[i : i+n]), true
}

// dropThrough forgets the rows at or below seq.
func (c *outboxCache) dropThrough(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.rows), func(i int) bool { return c.rows[i].Seq > seq })
	for k := range c.rows[:i] {
		c.bytes -= cachedSize(&c.rows[k])
	}
	clear(c.rows[:i]) // the backing array keeps no data alive
	c.rows = c.rows[i:]
	if len(c.rows) == 0 {
		c.rows, c.bytes = nil, 0
	}
}

// reset forgets every row.
func (c *outboxCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows, c.bytes = nil, 0
}

func (c *outboxCache) empty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rows) == 0
}
