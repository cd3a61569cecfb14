package snapshot

import (
	"context"
	"sync/atomic"
)

type requestsKey struct{}

// WithRequestCounter returns ctx carrying n: a source counts each API
// request of its collection on it (CountRequest), and the run reports
// the count (docs/PERFORMANCE.md#proxmox-requests).
func WithRequestCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, requestsKey{}, n)
}

// CountRequest counts one request on ctx's counter, if it has one.
func CountRequest(ctx context.Context) {
	if n, ok := ctx.Value(requestsKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
