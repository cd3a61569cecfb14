package proxmox

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// covered reports whether an enabled backup job selects the guest: by vmid
// list, by pool, or "all" minus the exclusions; a job bound to a node
// selects only the guests on it.
func covered(jobs []backupJob, g clusterResource) bool {
	id := strconv.FormatInt(vmid(g), 10)
	for _, j := range jobs {
		if (j.Enabled.set && j.Enabled.v == 0) || (j.Type != "" && j.Type != "vzdump") {
			continue
		}
		if j.Node != "" && j.Node != g.Node {
			continue
		}
		switch {
		case j.VMID != "":
			if slices.Contains(splitList(string(j.VMID)), id) {
				return true
			}
		case j.Pool != "":
			if j.Pool == g.Pool {
				return true
			}
		case j.All.v != 0:
			if !slices.Contains(splitList(string(j.Exclude)), id) {
				return true
			}
		}
	}
	return false
}

// hasVzdump reports whether any backup job is listed, enabled or not. A
// cluster with none leaves backups to something else (a client inside
// the guests): no guest is then judged unscheduled.
func hasVzdump(jobs []backupJob) bool {
	for _, j := range jobs {
		if j.Type == "" || j.Type == "vzdump" {
			return true
		}
	}
	return false
}

// newestBackup is a guest's newest backup volume: its ctime and the
// storage (resource id) it was found on.
type newestBackup struct {
	ctime   int64
	storage string
	// verify is the newest volume's verification state when its storage
	// verifies any volume ("" when it verifies none); verifiedAt the
	// newest ok verification of any of the guest's volumes.
	verify     string
	verifiedAt int64
}

// newestVolumes records the newest backup per vmid over the volumes of
// one storage. A volume without vmid takes the one its volid names. Of
// two equally new volumes the storage first by id wins, so the result
// does not depend on the order storages are read in.
func newestVolumes(vols []volume, storage string, into map[int64]newestBackup) {
	// A storage that verifies: any of its volumes carries a state.
	verifies := slices.ContainsFunc(vols, func(v volume) bool { return v.Verification != nil })
	for _, v := range vols {
		if v.Content != "" && v.Content != "backup" {
			continue
		}
		if !v.CTime.set || v.CTime.v <= 0 || v.CTime.v > maxUnix {
			continue
		}
		id, ok := int64(v.VMID.v), v.VMID.set
		if !ok {
			id, ok = volidVMID(v.VolID)
		}
		if !ok {
			continue
		}
		ct := int64(v.CTime.v)
		cur := into[id]
		cur.verifiedAt = max(cur.verifiedAt, v.verifiedAt())
		if ct > cur.ctime || (ct == cur.ctime && storage < cur.storage) {
			cur.ctime, cur.storage, cur.verify = ct, storage, ""
			if verifies {
				cur.verify = v.verifyState()
			}
		}
		into[id] = cur
	}
}

// volidVMID reads the vmid a backup volume's volid names: vzdump's file
// name (local:backup/vzdump-qemu-100-2023_08_28-02_00_01.vma.zst, lxc and
// openvz alike) or a Proxmox Backup Server snapshot
// (pbs:backup/vm/100/2023-08-28T02:00:01Z, ct for containers).
func volidVMID(volid string) (int64, bool) {
	m := volidPattern.FindStringSubmatch(volid)
	if m == nil {
		return 0, false
	}
	digits := m[1] + m[2]
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n > 0
}

var volidPattern = regexp.MustCompile(`(?:^|[:/])vzdump-(?:qemu|lxc|openvz)-(\d{1,9})-|^[^:]*:backup/(?:vm|ct)/(\d{1,9})/`)

// backupRun is what the newest vzdump task says about one guest.
type backupRun struct {
	Status   string
	Finished *time.Time
	Error    string
}

// byNewest sorts vzdump tasks newest first (ties by UPID, for determinism).
func byNewest(ts []task) []task {
	out := make([]task, 0, len(ts))
	for _, t := range ts {
		if t.Type == "" || t.Type == "vzdump" {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].StartTime.v != out[j].StartTime.v {
			return out[i].StartTime.v > out[j].StartTime.v
		}
		return out[i].UPID > out[j].UPID
	})
	return out
}

func running(t task) bool { return t.Status == "" && !t.EndTime.set }

// maxUnix is the last second of year 9999, the end of RFC 3339.
const maxUnix = 253402300799

func unixPtr(n number) *time.Time {
	if !n.set || n.v <= 0 || n.v > maxUnix {
		return nil
	}
	t := time.Unix(int64(n.v), 0).UTC()
	return &t
}

// taskRun maps one task's own status.
func taskRun(t task) backupRun {
	switch {
	case running(t):
		return backupRun{Status: snapshot.BackupRunning}
	case t.Status == "OK":
		return backupRun{Status: snapshot.BackupOK, Finished: unixPtr(t.EndTime)}
	case strings.HasPrefix(t.Status, "WARNINGS"):
		return backupRun{Status: snapshot.BackupWarning, Finished: unixPtr(t.EndTime), Error: t.Status}
	}
	return backupRun{Status: snapshot.BackupFailed, Finished: unixPtr(t.EndTime), Error: clip(t.Status)}
}

// fromLog reads the outcome for one guest from a multi-guest vzdump log:
// "ERROR: Backup of VM 102 failed - <reason>" or "INFO: Finished Backup of
// VM 101 (00:01:02)". ok is false when the guest is not in the log.
func fromLog(lines []logLine, id int64, t task) (backupRun, bool) {
	vm := "Backup of VM " + strconv.FormatInt(id, 10) + " "
	for _, l := range lines {
		i := strings.Index(l.T, vm)
		if i < 0 {
			continue
		}
		rest := l.T[i+len(vm):]
		if reason, ok := strings.CutPrefix(rest, "failed - "); ok {
			return backupRun{Status: snapshot.BackupFailed, Finished: unixPtr(t.EndTime), Error: clip(strings.TrimSpace(reason))}, true
		}
		if strings.HasPrefix(rest, "failed") {
			return backupRun{Status: snapshot.BackupFailed, Finished: unixPtr(t.EndTime), Error: clip(t.Status)}, true
		}
		if strings.HasSuffix(l.T[:i], "Finished ") {
			return backupRun{Status: snapshot.BackupOK, Finished: unixPtr(t.EndTime)}, true
		}
	}
	return backupRun{}, false
}
