// Package shares runs a loop over contiguous shares of its range, one
// goroutine per core, for the per-item work of a run (detection's
// neighbours: neutralising signals, filing them, reconciling them).
package shares

import (
	"runtime"
	"sync"
)

// Each calls fn over [0, n) in contiguous shares, one goroutine per core
// when every share has at least min items (else in one call), and
// returns when every share is done. fn must be safe to run on disjoint
// ranges at once.
func Each(n, min int, fn func(lo, hi int)) {
	workers := 1
	if min > 0 {
		workers = runtime.GOMAXPROCS(0)
		if n/min < workers {
			workers = n / min
		}
	}
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	share := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += share {
		hi := lo + share
		if hi > n {
			hi = n
		}
		wg.Go(func() { fn(lo, hi) })
	}
	wg.Wait()
}
