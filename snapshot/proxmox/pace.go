package proxmox

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
)

// DefaultRate is the requests a second any one node is sent at most
// (source.proxmox.rate).
const DefaultRate = 20

// pacer spreads a source's requests so that no node sees more than its
// rate a second (docs/SOURCES.md#pace). The cluster-wide requests count
// against the node of the URL, which answers them. Its limiters outlive
// a run: one run's requests do not add to the next's in one second.
type pacer struct {
	limit rate.Limit
	burst int

	mu    sync.Mutex
	nodes map[string]*rate.Limiter // by node; "" for the cluster-wide requests
}

// newPacer paces at perSecond requests a node; nil (no pacing) when
// perSecond is not positive.
func newPacer(perSecond float64) *pacer {
	if perSecond <= 0 {
		return nil
	}
	// A small burst: a node's first requests of a run need not wait.
	return &pacer{limit: rate.Limit(perSecond), burst: max(1, int(perSecond/4)), nodes: map[string]*rate.Limiter{}}
}

// wait blocks until the node the request goes to may be sent one more.
func (p *pacer) wait(ctx context.Context, segments []string) error {
	if p == nil {
		return nil
	}
	node := ""
	if len(segments) > 1 && segments[0] == "nodes" {
		node = segments[1]
	}
	p.mu.Lock()
	l, ok := p.nodes[node]
	if !ok {
		l = rate.NewLimiter(p.limit, p.burst)
		p.nodes[node] = l
	}
	p.mu.Unlock()
	return l.Wait(ctx)
}
