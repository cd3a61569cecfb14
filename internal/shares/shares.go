// Package shares runs a loop over contiguous shares of its range, one
// goroutine per core, for the per-item work of a run (detection and its
// neighbours: neutralising signals, filing them, reconciling them).
package shares

import (
	"runtime"
	"sync"
)

// Each calls fn over [0, n) in contiguous shares and returns when every
// share is done. It runs one goroutine per core when every share has at
// least min items, else one call. fn must be safe to run on disjoint
// ranges at once.
func Each(n, min int, fn func(lo, hi int)) {
	split(n, min, func(_, lo, hi int) { fn(lo, hi) })
}

// Join is Each for work that yields results: each share's, joined in the
// order of the range, so the result is the one a single call fn(0, n)
// gives.
func Join[T any](n, min int, fn func(lo, hi int) []T) []T {
	workers, _ := plan(n, min)
	if workers <= 1 {
		return fn(0, n)
	}
	parts := make([][]T, workers)
	split(n, min, func(i, lo, hi int) { parts[i] = fn(lo, hi) })
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	out := make([]T, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// plan is how many shares [0, n) is cut into, and how many items each
// holds (the last one fewer).
func plan(n, min int) (workers, size int) {
	workers = 1
	if min > 0 {
		workers = runtime.GOMAXPROCS(0)
		if n/min < workers {
			workers = n / min
		}
	}
	if workers <= 1 {
		return 1, n
	}
	return workers, (n + workers - 1) / workers
}

// split calls fn(i, lo, hi) for share i of plan(n, min), on its own
// goroutine when there is more than one, and returns when all are done.
func split(n, min int, fn func(i, lo, hi int)) {
	workers, size := plan(n, min)
	if workers <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for i := 0; i*size < n; i++ {
		lo, hi := i*size, i*size+size
		if hi > n {
			hi = n
		}
		wg.Go(func() { fn(i, lo, hi) })
	}
	wg.Wait()
}
