package proxmox

import (
	"strconv"
	"strings"

	"github.com/patrold/patrold/snapshot"
)

// haIndex is what GET /cluster/ha/status/current says of each guest and
// node. A guest or node it does not name is not managed by HA.
type haIndex struct {
	services map[string]snapshot.HA // by guest resource id
	lrms     map[string]snapshot.HA // by node name
}

// maxHAState bounds a state as the snapshot keeps it: PVE's are short
// words, anything longer is not one of them.
const maxHAState = 64

func indexHA(entries []haStatusEntry) *haIndex {
	x := &haIndex{services: map[string]snapshot.HA{}, lrms: map[string]snapshot.HA{}}
	for _, e := range entries {
		switch e.Type {
		case "service":
			id, ok := haGuestID(e.SID)
			if !ok {
				continue // another kind of HA resource, or no guest
			}
			state := e.State
			if state == "" {
				state = e.CRMState // the verbose state is newer than PVE 6
			}
			x.services[id] = snapshot.HA{Managed: true, State: clipWord(state), Requested: clipWord(e.RequestState)}
		case "lrm":
			node := e.Node
			if node == "" {
				node = strings.TrimPrefix(e.ID, "lrm:")
			}
			if node != "" {
				x.lrms[node] = snapshot.HA{Managed: true, State: clipWord(lrmState(node, e.Status))}
			}
		}
	}
	return x
}

// haGuestID maps an HA service id to its guest's resource id: "vm:100"
// is vm/100, "ct:100" container/100.
func haGuestID(sid string) (string, bool) {
	kind, n, ok := strings.Cut(sid, ":")
	id, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id <= 0 {
		return "", false
	}
	switch kind {
	case "vm":
		return string(snapshot.KindVM) + "/" + strconv.FormatInt(id, 10), true
	case "ct":
		return string(snapshot.KindContainer) + "/" + strconv.FormatInt(id, 10), true
	}
	return "", false
}

// lrmState reads an LRM's state from its status text, which is all PVE
// gives: "pve1 (active, Sat Nov 28 10:00:00 2026)" is active,
// "pve1 (maintenance mode, ...)" maintenance. Other texts ("old
// timestamp - dead?", "unable to read lrm status") are kept as said.
func lrmState(node, status string) string {
	rest := strings.TrimPrefix(strings.TrimSpace(status), node)
	_, inner, ok := strings.Cut(rest, "(")
	if !ok {
		return strings.TrimSpace(status)
	}
	inner, _, _ = strings.Cut(inner, ")")
	state, _, _ := strings.Cut(inner, ",")
	state = strings.TrimSpace(state)
	if m, ok := strings.CutSuffix(state, " mode"); ok {
		return m
	}
	return state
}

func clipWord(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxHAState {
		return s[:maxHAState]
	}
	return s
}
