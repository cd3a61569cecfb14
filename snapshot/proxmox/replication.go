package proxmox

import (
	"strconv"
	"strings"

	"github.com/patrold/patrold/snapshot"
)

// replicationJobs maps the jobs of GET /nodes/{node}/replication to the
// guests they replicate, by vmid. Disabled jobs are left out: nothing is
// expected of them.
func replicationJobs(jobs []replicationJob) map[int64][]snapshot.ReplicationJob {
	out := map[int64][]snapshot.ReplicationJob{}
	for _, j := range jobs {
		if !j.Guest.set || j.Guest.v <= 0 || j.Guest.v > maxVMID || (j.Disable.set && j.Disable.v != 0) {
			continue
		}
		id := int64(j.Guest.v)
		if len(out[id]) >= snapshot.MaxReplicationJobs {
			continue
		}
		rj := snapshot.ReplicationJob{ID: clipWord(j.ID), Target: clipWord(j.Target), Schedule: clipWord(j.Schedule)}
		if rj.ID == "" {
			rj.ID = strconv.FormatInt(id, 10)
		}
		rj.IntervalSeconds = scheduleInterval(j.Schedule)
		rj.LastSync = unixPtr(j.LastSync)
		if j.FailCount.set && j.FailCount.v > 0 && j.FailCount.v < maxCount {
			rj.FailCount = int64(j.FailCount.v)
		}
		rj.Error = clipText(j.Error)
		out[id] = append(out[id], rj)
	}
	return out
}

// Bounds of the numbers a replication job may carry.
const (
	maxVMID  = 999999999
	maxCount = 1 << 31
)

// scheduleInterval is the interval of a PVE calendar event in seconds,
// for the few forms replication schedules take (docs/SOURCES.md): "*/N"
// (every N minutes), "minutely", "hourly", "daily", "weekly" and
// "HH:MM" (daily). Anything else is 0: not understood, never guessed.
func scheduleInterval(s string) int64 {
	s = strings.TrimSpace(s)
	switch s {
	case "minutely":
		return 60
	case "hourly":
		return 3600
	case "daily":
		return 86400
	case "weekly":
		return 7 * 86400
	}
	if n, ok := strings.CutPrefix(s, "*/"); ok {
		if m, err := strconv.Atoi(n); err == nil && m >= 1 && m <= 59 {
			return int64(m) * 60
		}
		return 0
	}
	if h, m, ok := strings.Cut(s, ":"); ok {
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if err1 == nil && err2 == nil && hh >= 0 && hh <= 23 && mm >= 0 && mm <= 59 && len(m) == 2 {
			return 86400
		}
	}
	return 0
}

// clipText bounds an error text as the snapshot keeps it.
func clipText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:300]
	}
	return s
}
