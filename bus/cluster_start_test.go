package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/internal/natstest"
)

// TestStartTogetherOnFreshCluster: three buses started at once on a fresh
// three-node JetStream cluster all create (or find) the R3 stream. A
// clustered JetStream leaves all but one of such concurrent creates
// unanswered; each round uses a new stream so every round races.
func TestStartTogetherOnFreshCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	urls := natstest.Cluster(t, 3)
	for round := range 4 {
		errs := make([]error, len(urls))
		var wg sync.WaitGroup
		for i, url := range urls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := bus.Options{URL: url, Stream: bus.StreamOptions{Name: fmt.Sprintf("RACE_%d", round), Replicas: 3}}
				o.SubjectPrefix = fmt.Sprintf("race%d", round)
				b, err := bus.New(o, nil, nil)
				if err != nil {
					errs[i] = err
					return
				}
				errs[i] = b.Start(context.Background())
				_ = b.Close()
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: bus %d on %s: %v", round, i, urls[i], err)
			}
		}
	}
}
