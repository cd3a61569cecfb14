package shares

import (
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestEachCoversTheRangeOnce: every index is visited exactly once, in
// contiguous shares, whatever n and the share minimum.
func TestEachCoversTheRangeOnce(t *testing.T) {
	for _, n := range []int{0, 1, 5, 511, 512, 1024, 1025, 10_000} {
		for _, min := range []int{0, 1, 512} {
			var mu sync.Mutex
			seen := make([]int, n)
			var ranges [][2]int
			Each(n, min, func(lo, hi int) {
				mu.Lock()
				defer mu.Unlock()
				ranges = append(ranges, [2]int{lo, hi})
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("n=%d min=%d: index %d visited %d times", n, min, i, c)
				}
			}
			if want := 1; (min == 0 || n/min < 2 || runtime.GOMAXPROCS(0) < 2) && len(ranges) != want {
				t.Fatalf("n=%d min=%d: %d shares, want one call", n, min, len(ranges))
			}
			slices.SortFunc(ranges, func(a, b [2]int) int { return a[0] - b[0] })
			for i := 1; i < len(ranges); i++ {
				if ranges[i][0] != ranges[i-1][1] {
					t.Fatalf("n=%d min=%d: shares %v are not contiguous", n, min, ranges)
				}
			}
		}
	}
}

// TestJoinIsOneCall: Join's result is the one fn(0, n) gives, whatever n
// and the share minimum.
func TestJoinIsOneCall(t *testing.T) {
	items := func(lo, hi int) []int {
		var out []int
		for i := lo; i < hi; i++ {
			if i%3 != 0 { // shares yield different counts
				out = append(out, i)
			}
		}
		return out
	}
	for _, n := range []int{0, 1, 5, 1024, 1025, 10_000} {
		for _, min := range []int{0, 1, 512} {
			if got, want := Join(n, min, items), items(0, n); !slices.Equal(got, want) {
				t.Fatalf("n=%d min=%d: Join gave %d items, one call %d", n, min, len(got), len(want))
			}
		}
	}
}
