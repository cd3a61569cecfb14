package proxmox

import (
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// TestScrubOf: the scan lines understood, and those that say nothing of
// the last scrub.
func TestScrubOf(t *testing.T) {
	at := time.Date(2026, 11, 8, 0, 28, 13, 0, time.UTC)
	for line, want := range map[string]*snapshot.Scrub{
		"scrub repaired 0B in 00:04:12 with 0 errors on Sun Nov  8 00:28:13 2026":        {State: snapshot.ScrubFinished, At: &at},
		"scrub repaired 12K in 1 days 02:04:12 with 3 errors on Sun Nov 8 00:28:13 2026": {State: snapshot.ScrubFinished, At: &at, Repaired: "12K", Errors: 3},
		"scrub repaired 12K in 02:04:12 with 3 errors on Sun Nov 8 00:28:13 2026":        {State: snapshot.ScrubFinished, At: &at, Repaired: "12K", Errors: 3},
		"scrub in progress since Sun Nov 29 00:24:01 2026":                               {State: snapshot.ScrubRunning},
		"none requested": {State: snapshot.ScrubNever},
		"resilvered 1.20G in 00:10:03 with 0 errors on Sun Nov 29 00:34:04 2026": nil,
		"scrub canceled on Sun Nov 29 00:34:04 2026":                             nil,
		"scrub repaired 0B in 00:04:12 with 0 errors on someday":                 nil,
		"": nil,
	} {
		if got := scrubOf(line); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, want %+v", line, got, want)
		}
	}
}
