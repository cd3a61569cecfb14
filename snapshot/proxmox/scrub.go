package proxmox

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// scrubDone matches the scan line of a finished scrub, as zpool status
// writes it: "scrub repaired 0B in 00:05:23 with 0 errors on Sun Nov  8
// 00:29:24 2026".
var scrubDone = regexp.MustCompile(`^scrub repaired (\S+) in .+? with (\d+) errors on (.+)$`)

// scrubOf reads a pool's scan line. The time has no zone (the node's
// local time): it is read as UTC, hours off against a 35-day rule.
// Anything else than a finished, running or never requested scrub (a
// resilver, a canceled scrub) says nothing of the last scrub: nil.
func scrubOf(scan string) *snapshot.Scrub {
	scan = strings.Join(strings.Fields(scan), " ")
	switch {
	case scan == "none requested":
		return &snapshot.Scrub{State: snapshot.ScrubNever}
	case strings.HasPrefix(scan, "scrub in progress"):
		return &snapshot.Scrub{State: snapshot.ScrubRunning}
	}
	m := scrubDone.FindStringSubmatch(scan)
	if m == nil {
		return nil
	}
	at, err := time.Parse("Mon Jan 2 15:04:05 2006", m[3])
	errs, err2 := strconv.ParseInt(m[2], 10, 64)
	if err != nil || err2 != nil {
		return nil
	}
	s := &snapshot.Scrub{State: snapshot.ScrubFinished, At: &at, Errors: errs}
	if r := strings.TrimRight(m[1], "B"); r != "0" && r != "" {
		s.Repaired = clipWord(m[1])
	}
	return s
}
