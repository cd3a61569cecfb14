package proxmox

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// newestFirst sorts a node's tasks by start time, newest first (ties by
// UPID, so the order is stable across reads).
func newestFirst(ts []task) []task {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].StartTime.v != ts[j].StartTime.v {
			return ts[i].StartTime.v > ts[j].StartTime.v
		}
		return ts[i].UPID > ts[j].UPID
	})
	return ts
}

// concerns reports whether t is a task of the guest with this vmid. A
// vzdump job over several guests (no id) concerns a guest locked for
// backup: the job is what holds that lock.
func concerns(t task, id string, lock string) bool {
	return t.ID == id || (t.ID == "" && t.Type == "vzdump" && lock == "backup")
}

// guestTasks is a guest's lock and running task, read from the node's
// recent tasks (newest first); nil when it has neither. A lock is held
// at least since the end of the guest's newest finished task, or with
// none listed since the oldest task listed. With the tasks not read, or
// none listed, when it was taken is unknown (docs/SOURCES.md#mapping).
func guestTasks(g clusterResource, recent []task, read bool, cfg guestConfig) *snapshot.GuestState {
	st := &snapshot.GuestState{TasksRead: read}
	if g.Lock != "" {
		st.Lock = &snapshot.Lock{Name: clip(g.Lock)}
	}
	if cfg != nil {
		onboot := strings.TrimSpace(cfg["onboot"]) == "1"
		st.OnBoot = &onboot
	}
	if read {
		id := strconv.FormatInt(vmid(g), 10)
		var ended *time.Time
		for _, t := range recent {
			if st.PowerTask == nil && t.ID == id && powerTasks[t.Type] {
				st.PowerTask = snapshotTask(t)
			}
			switch {
			case !concerns(t, id, g.Lock):
			case running(t):
				if st.Task == nil {
					st.Task = snapshotTask(t)
				}
			case ended == nil:
				ended = unixPtr(t.EndTime)
			}
		}
		if ended == nil && len(recent) > 0 {
			ended = unixPtr(recent[len(recent)-1].StartTime)
		}
		if st.Lock != nil {
			st.Lock.Since = ended
		}
	}
	if st.Lock == nil && st.Task == nil && st.OnBoot == nil && !st.TasksRead {
		return nil
	}
	return st
}

// powerTasks are the tasks that start or stop a guest.
var powerTasks = map[string]bool{"qmstart": true, "qmstop": true, "qmshutdown": true,
	"vzstart": true, "vzstop": true, "vzshutdown": true}

// snapshotTask maps one task; a start time PVE did not give is the zero
// time.
func snapshotTask(t task) *snapshot.Task {
	out := &snapshot.Task{Type: clip(t.Type), UPID: clip(t.UPID), User: clip(t.User), EndedAt: unixPtr(t.EndTime), Status: clip(t.Status)}
	if st := unixPtr(t.StartTime); st != nil {
		out.StartedAt = *st
	}
	return out
}
